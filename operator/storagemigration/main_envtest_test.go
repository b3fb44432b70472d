package storagemigration_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/onsi/gomega"
	apiextensionshelpers "k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/internal/await"
	"github.com/dynamoctl/dynamo-operator/internal/testenv"
	"github.com/dynamoctl/dynamo-operator/operator/storagemigration"
)

var (
	env *testenv.Env
	// admin knows the CRD kind, which env.Client's scheme does not.
	admin client.Client
)

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, func(e *testenv.Env) {
		env = e
		s := testenv.NewScheme()
		if err := apiextensionsv1.AddToScheme(s); err != nil {
			panic(err)
		}
		c, err := client.New(e.Config, client.Options{Scheme: s})
		if err != nil {
			panic(err)
		}
		admin = c
	}))
}

const group = "migration.example.com"

// testCRD is a CRD of the group with versions v1alpha1 and v1beta1 of one
// schema, conversion None (the API server only relabels apiVersion), storing
// storage: the simplest CRD that can hold objects in two versions.
func testCRD(plural, storage string) *apiextensionsv1.CustomResourceDefinition {
	open := &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptrTo(true)}
	schema := &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
		Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": *open, "status": *open},
	}}
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Kind: kindOf(plural), ListKind: kindOf(plural) + "List"},
			Scope: apiextensionsv1.NamespaceScoped,
		},
	}
	for _, v := range []string{"v1alpha1", "v1beta1"} {
		crd.Spec.Versions = append(crd.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{
			Name: v, Served: true, Storage: v == storage, Schema: schema,
			Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
		})
	}
	return crd
}

func kindOf(plural string) string {
	return strings.ToUpper(plural[:1]) + strings.TrimSuffix(plural[1:], "s")
}

func ptrTo[T any](v T) *T { return &v }

// installCRD creates crd, waits until it is served and deletes it when the
// test ends.
func installCRD(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	ctx := context.Background()
	if err := admin.Create(ctx, crd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Delete(context.Background(), crd) })
	await.New(t).Eventually(func(g gomega.Gomega) {
		live := &apiextensionsv1.CustomResourceDefinition{}
		g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(crd), live)).To(gomega.Succeed())
		g.Expect(apiextensionshelpers.IsCRDConditionTrue(live, apiextensionsv1.Established)).To(gomega.BeTrue())
	}).Should(gomega.Succeed(), "the CRD established")
}

// setStorage makes version the CRD's storage version, as an upgrade of the
// CRD does; the API server adds it to storedVersions.
func setStorage(t *testing.T, name, version string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	crd := getCRD(t, name)
	for i := range crd.Spec.Versions {
		crd.Spec.Versions[i].Storage = crd.Spec.Versions[i].Name == version
	}
	if err := admin.Update(context.Background(), crd); err != nil {
		t.Fatal(err)
	}
	// Objects created from here on must be stored in version: wait until the
	// API server's handler for the CRD has switched (it lists it stored).
	await.New(t).Eventually(func() []string {
		crd = getCRD(t, name)
		return crd.Status.StoredVersions
	}).Should(gomega.ContainElement(version), "storage switched to "+version)
	return crd
}

func getCRD(t *testing.T, name string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := admin.Get(context.Background(), client.ObjectKey{Name: name}, crd); err != nil {
		t.Fatal(err)
	}
	return crd
}

// writeLog records the writes (every request but GET, LIST and WATCH) and
// the reads of CRDs made through a configuration.
type writeLog struct {
	mu             sync.Mutex
	writes, crdGet []string
}

func (l *writeLog) wrap(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(req *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(req)
			l.mu.Lock()
			defer l.mu.Unlock()
			line := req.Method + " " + req.URL.Path
			switch {
			case req.Method != http.MethodGet:
				l.writes = append(l.writes, line)
			case strings.Contains(req.URL.Path, "/customresourcedefinitions/"):
				l.crdGet = append(l.crdGet, line)
			}
			return resp, err
		})
	})
	return cfg
}

func (l *writeLog) snapshot() (writes, crdGet []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.writes), slices.Clone(l.crdGet)
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func dynamicFor(t *testing.T, cfg *rest.Config) dynamic.Interface {
	t.Helper()
	d, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func resource(plural, version string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: group, Version: version, Resource: plural}
}

// createObjects creates n objects in version with a spec, a label and a
// status, spread over the namespaces, and returns them as the API server
// answered.
func createObjects(t *testing.T, plural, version, prefix string, n int, namespaces ...string) []*unstructured.Unstructured {
	t.Helper()
	ctx := context.Background()
	d := dynamicFor(t, env.Config)
	var out []*unstructured.Unstructured
	for i := range n {
		ns := namespaces[i%len(namespaces)]
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": group + "/" + version, "kind": kindOf(plural),
			"metadata": map[string]any{"name": fmt.Sprintf("%s-%d", prefix, i), "namespace": ns, "labels": map[string]any{"app": prefix}},
			"spec":     map[string]any{"replicas": int64(i), "model": "Qwen/Qwen3-0.6B"},
		}}
		created, err := d.Resource(resource(plural, version)).Namespace(ns).Create(ctx, u, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		created.Object["status"] = map[string]any{"state": "successful", "observedGeneration": int64(1)}
		created, err = d.Resource(resource(plural, version)).Namespace(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, created)
	}
	return out
}

// runUntilDone starts the migrator in the background and returns a
// function that waits for Start to return, stepping clk past every backoff
// the migrator waits out meanwhile (nil: no stepping).
func runUntilDone(t *testing.T, start func(context.Context) error) (wait func(timeout time.Duration, clk *clocktesting.FakeClock)) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- start(ctx) }()
	t.Cleanup(cancel)
	return func(timeout time.Duration, clk *clocktesting.FakeClock) {
		t.Helper()
		var err error
		await.New(t).Eventually(func() bool {
			select {
			case err = <-done:
				return true
			default:
			}
			if clk != nil && clk.HasWaiters() {
				clk.Step(storagemigration.DefaultBackoff().Cap + time.Minute)
			}
			return false
		}).WithTimeout(timeout).WithPolling(50*time.Millisecond).Should(gomega.BeTrue(), "the migration finishes")
		if err != nil {
			t.Fatalf("Start: %v", err)
		}
	}
}

// fakeClock is a fake clock that tests step past the migrator's backoff.
func fakeClock() *clocktesting.FakeClock { return clocktesting.NewFakeClock(time.Unix(1_000_000, 0)) }
