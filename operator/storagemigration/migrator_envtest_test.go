package storagemigration_test

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/internal/builders"
	"github.com/dynamoctl/dynamo-operator/internal/testenv"
	"github.com/dynamoctl/dynamo-operator/operator/crdinstall"
	"github.com/dynamoctl/dynamo-operator/operator/storagemigration"
)

// dropVersion removes version from the CRD's versions, which the API server
// allows only once storedVersions no longer lists it.
func dropVersion(ctx context.Context, name, version string) error {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := admin.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
		return err
	}
	crd.Spec.Versions = slices.DeleteFunc(crd.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool {
		return v.Name == version
	})
	return admin.Update(ctx, crd)
}

// listAll lists the objects of plural in version, by namespace/name.
func listAll(t *testing.T, plural, version string) map[string]*unstructured.Unstructured {
	t.Helper()
	list, err := dynamicFor(t, env.Config).Resource(resource(plural, version)).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*unstructured.Unstructured{}
	for i := range list.Items {
		out[list.Items[i].GetNamespace()+"/"+list.Items[i].GetName()] = &list.Items[i]
	}
	return out
}

// content is what a rewrite must keep: everything but the resourceVersion,
// the apiVersion and the managed fields.
func content(u *unstructured.Unstructured) map[string]any {
	c := u.DeepCopy()
	delete(c.Object, "apiVersion")
	unstructured.RemoveNestedField(c.Object, "metadata", "resourceVersion")
	unstructured.RemoveNestedField(c.Object, "metadata", "managedFields")
	return c.Object
}

// Objects stored in v1beta1 under a CRD whose storage version became
// v1alpha1 are rewritten once each, storedVersions is trimmed, and etcd
// holds v1alpha1 only: the API server then lets v1beta1 be dropped from the
// CRD, and every object still reads. A second start writes nothing.
func TestRewritesObjectsStoredInAnotherVersion(t *testing.T) {
	ctx := context.Background()
	const plural = "widgets"
	name := plural + "." + group
	installCRD(t, testCRD(plural, "v1beta1"))
	nsA, nsB := env.Namespace(t, "a"), env.Namespace(t, "b")
	createObjects(t, plural, "v1beta1", "old", 7, nsA, nsB)
	if got := setStorage(t, name, "v1alpha1").Status.StoredVersions; !slices.Equal(got, []string{"v1beta1", "v1alpha1"}) {
		t.Fatalf("premise: storedVersions %v after the storage switch", got)
	}
	createObjects(t, plural, "v1alpha1", "new", 2, nsA)
	if err := dropVersion(ctx, name, "v1beta1"); !apierrors.IsInvalid(err) {
		t.Fatalf("premise: dropping v1beta1 while storedVersions lists it: got %v, want Invalid", err)
	}
	before := listAll(t, plural, "v1alpha1")

	log := &writeLog{}
	recorder := events.NewFakeRecorder(10)
	m := &storagemigration.Migrator{
		Client: dynamicFor(t, log.wrap(env.Config)), CRDs: []string{name, "absent." + group},
		Clock: fakeClock(), Recorder: recorder, Log: testr.New(t), PageSize: 3, // three pages and a bit
	}
	runUntilDone(t, m.Start)(time.Minute, nil)

	if got := getCRD(t, name).Status.StoredVersions; !slices.Equal(got, []string{"v1alpha1"}) {
		t.Errorf("storedVersions after the migration = %v, want [v1alpha1]", got)
	}
	after := listAll(t, plural, "v1alpha1")
	assertEachWrittenOnce(t, name, before, after, log)
	for result, want := range map[string]float64{"rewritten": 7, "current": 2, "gone": 0, "failed": 0} {
		if got := testenv.MetricValue(t, "dynamo_operator_storage_migration_objects_total", map[string]string{"crd": name, "result": result}); got != want {
			t.Errorf("objects_total{result=%s} = %v, want %v", result, got, want)
		}
	}
	if got := testenv.MetricValue(t, "dynamo_operator_storage_migration_passes_total", map[string]string{"crd": name, "result": "migrated"}); got != 1 {
		t.Errorf("passes_total{result=migrated} = %v, want 1", got)
	}
	if e := <-recorder.Events; !strings.HasPrefix(e, "Normal StorageMigrated Rewrote the objects in v1alpha1 (2 current, 7 rewritten)") {
		t.Errorf("event %q", e)
	}

	assertNoOpStart(t, name)

	// etcd holds no v1beta1 object: the version can go, and all still read.
	if err := dropVersion(ctx, name, "v1beta1"); err != nil {
		t.Fatalf("dropping v1beta1 after the migration: %v", err)
	}
	final := listAll(t, plural, "v1alpha1")
	if diff := cmp.Diff(slices.Sorted(maps.Keys(after)), slices.Sorted(maps.Keys(final))); diff != "" {
		t.Errorf("objects read after v1beta1 was dropped (-want +got):\n%s", diff)
	}
}

// assertEachWrittenOnce checks that the migration kept every object's
// content, bumped the resourceVersion of those stored in v1beta1 ("old-")
// only, and made one PUT per object and one status patch of the CRD name.
func assertEachWrittenOnce(t *testing.T, name string, before, after map[string]*unstructured.Unstructured, log *writeLog) {
	t.Helper()
	plural, _, _ := strings.Cut(name, ".")
	var wantWrites []string
	for key, b := range before {
		a := after[key]
		if diff := cmp.Diff(content(b), content(a)); diff != "" {
			t.Errorf("%s changed (-before +after):\n%s", key, diff)
		}
		// Stored in v1beta1: written once; already in v1alpha1: left.
		if rewritten := a.GetResourceVersion() != b.GetResourceVersion(); rewritten != strings.Contains(key, "/old-") {
			t.Errorf("%s: resourceVersion %s -> %s", key, b.GetResourceVersion(), a.GetResourceVersion())
		}
		wantWrites = append(wantWrites, "PUT /apis/"+group+"/v1alpha1/namespaces/"+b.GetNamespace()+"/"+plural+"/"+b.GetName())
	}
	wantWrites = append(wantWrites, "PATCH /apis/apiextensions.k8s.io/v1/customresourcedefinitions/"+name+"/status")
	writes, _ := log.snapshot()
	slices.Sort(writes)
	slices.Sort(wantWrites)
	if diff := cmp.Diff(wantWrites, writes); diff != "" {
		t.Errorf("writes (-want +got):\n%s", diff)
	}
}

// assertNoOpStart runs a migrator over crds whose storedVersions is the
// storage version alone: it reads each CRD (it acted) and writes nothing.
func assertNoOpStart(t *testing.T, crds ...string) {
	t.Helper()
	log := &writeLog{}
	m := &storagemigration.Migrator{Client: dynamicFor(t, log.wrap(env.Config)), CRDs: crds, Clock: fakeClock(), Log: testr.New(t)}
	runUntilDone(t, m.Start)(time.Minute, nil)
	writes, reads := log.snapshot()
	if len(writes) > 0 {
		t.Errorf("a start with nothing to migrate wrote: %v", writes)
	}
	for _, name := range crds {
		if !slices.ContainsFunc(reads, func(r string) bool { return strings.HasSuffix(r, "/customresourcedefinitions/"+name) }) {
			t.Errorf("the migrator did not read the CRD %s: %v", name, reads)
		}
		if testenv.MetricValue(t, "dynamo_operator_storage_migration_passes_total", map[string]string{"crd": name, "result": "current"}) == 0 {
			t.Errorf("no pass over %s counted current", name)
		}
	}
}

// The operator's own CRDs, as installed (storedVersions [v1alpha1]), with a
// graph stored: nothing to do, nothing written.
func TestNothingToMigrateWritesNothing(t *testing.T) {
	ns := env.Namespace(t, t.Name())
	if err := env.Client.Create(context.Background(), builders.MakeGraph("llm", ns).Service("Worker", builders.MakeService()).Obj()); err != nil {
		t.Fatal(err)
	}
	names, err := crdinstall.Names()
	if err != nil {
		t.Fatal(err)
	}
	assertNoOpStart(t, names...)
}
