package takeover_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/internal/await"
	"github.com/dynamoctl/dynamo-operator/internal/migration"
	"github.com/dynamoctl/dynamo-operator/internal/testenv"
	"github.com/dynamoctl/dynamo-operator/operator/config"
	"github.com/dynamoctl/dynamo-operator/operator/crdinstall"
)

// convertedCRDs are the CRDs whose objects Dynamo's current operator
// stores in v1beta1, with the number of objects the fixtures hold of each.
var convertedCRDs = map[string]string{
	"dynamographdeployments.nvidia.com":     "DynamoGraphDeployment",
	"dynamocomponentdeployments.nvidia.com": "DynamoComponentDeployment",
}

// dynamoV1beta1Cluster makes a namespace as Dynamo's current operator
// leaves it: its CRDs storing graphs and components in v1beta1, converted by
// a webhook that is gone with its release, and its objects stored so.
func dynamoV1beta1Cluster(t *testing.T) (string, []*unstructured.Unstructured) {
	t.Helper()
	ctx := context.Background()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	f, err := migration.LoadV1beta1(root, ourCRDs)
	if err != nil {
		t.Fatal(err)
	}
	if err := migration.InstallCRDs(ctx, env.Client, f.DynamoCRDs); err != nil {
		t.Fatal(err)
	}
	for name := range convertedCRDs {
		await.New(t).Eventually(func() bool {
			return slices.Contains(crdOf(t, name).Status.StoredVersions, "v1beta1")
		}).Should(gomega.BeTrue(), name+" stored in v1beta1")
	}
	// The API server serves a changed CRD from a handler it swaps in a
	// moment later: objects created before then would be stored in the old
	// version. The rewrite count below would show it.
	time.Sleep(2 * time.Second)
	ns := env.Namespace(t, "takeover-v1beta1")
	created, err := migration.Create(ctx, env.Client, ns, f.Objects)
	if err != nil {
		t.Fatal(err)
	}
	return ns, created
}

func crdOf(t *testing.T, name string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, crd); err != nil {
		t.Fatal(err)
	}
	return crd
}

// installOursConvertingBy replaces Dynamo's CRDs with ours, their
// conversion webhook pointed at the operator configured by args, as
// crdinstall points it at the installing operator (which injects its CA);
// that operator's caches then read the objects stored in v1beta1 through
// its own webhook. When the test ends they convert by the test
// environment's webhook again. The CRDs are replaced whole (an update, as
// another chart's kubectl apply): a server-side apply of a url would keep
// the service another manager set.
func installOursConvertingBy(t *testing.T, args []string) {
	t.Helper()
	o, err := config.Parse(args, nil)
	if err != nil {
		t.Fatal(err)
	}
	installOursWith(t, crdinstall.ConversionFor(o))
	t.Cleanup(func() { installOursWith(t, env.Conversion()) })
}

func installOursWith(t *testing.T, conv crdinstall.Conversion) {
	t.Helper()
	cc, err := conv.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	crds := make([]*apiextensionsv1.CustomResourceDefinition, len(ourCRDs))
	for i, crd := range ourCRDs {
		crds[i] = crd.DeepCopy()
		if c := crds[i].Spec.Conversion; c != nil && c.Webhook != nil {
			c.Webhook.ClientConfig = cc.DeepCopy()
			c.Webhook.ClientConfig.CABundle = conv.CABundle
		}
	}
	if err := migration.InstallCRDs(context.Background(), env.Client, crds); err != nil {
		t.Fatal(err)
	}
}

// Our operator takes over a cluster whose graphs and components Dynamo's
// current operator stored in v1beta1: every graph Ready by our status, no
// workload replaced or its spec changed, each object rewritten once in
// v1alpha1 and storedVersions trimmed, every object readable in both
// versions; an operator started again writes no migration.
func TestTakeOverV1beta1StoredRestartsNothing(t *testing.T) {
	testenv.Long(t)
	// Earlier tests' objects, in namespaces being deleted, as our CRDs
	// store them, and Dynamo's objects made here: every object the
	// migration may list.
	stored := objectUIDs(t)
	ns, created := dynamoV1beta1Cluster(t)
	for _, o := range created {
		if _, ok := stored[o.GetKind()]; ok {
			stored[o.GetKind()][o.GetUID()] = true
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	before := workloads(t, ns)
	if len(before) != count(created, "Deployment") || len(before) == 0 {
		t.Fatalf("%d Deployments before the take-over, want %d", len(before), count(created, "Deployment"))
	}
	args := append(env.WebhookArgs(t), "--migrate-storage")
	installOursConvertingBy(t, args)
	if err := env.StartDeploymentDriver(ctx, 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	op := startOperator(t, args...)
	waitReady(t, ns, 90*time.Second, "under our operator")
	for name := range convertedCRDs {
		await.New(t).Eventually(func() bool {
			return slices.Equal(crdOf(t, name).Status.StoredVersions, []string{"v1alpha1"})
		}).WithTimeout(60*time.Second).Should(gomega.BeTrue(), name+" storedVersions trimmed")
	}
	assertKept(t, before, workloads(t, ns))
	// Every object is written back once a pass. Most were rewritten in
	// v1alpha1 already by our controllers' first status write (the status
	// subresource stores the whole object), before the migration started:
	// the API server then writes them no more (current). A pass whose
	// storedVersions trim finds the CRD changed meanwhile runs again
	// (retried), writing each object once more. The migration lists every
	// namespace, where the namespace controller may still be deleting an
	// earlier test's objects: a pass may list one deleted before its write
	// (gone). Every object that lived through the migration is counted
	// once a pass, and no object more than that. A transient error (the API
	// server not trusting our conversion webhook's CA yet) ends a pass at
	// the object it met (retried): that pass writes some objects, not all.
	figures := map[string]float64{}
	final := objectUIDs(t)
	for name, kind := range convertedCRDs {
		for _, result := range []string{"rewritten", "current", "gone", "retried", "failed"} {
			figures[kind+" "+result] = testenv.MetricValue(t, "dynamo_operator_storage_migration_objects_total", map[string]string{"crd": name, "result": result})
		}
		passes := 0.0
		for _, result := range []string{"migrated", "retried", "failed"} {
			passes += testenv.MetricValue(t, "dynamo_operator_storage_migration_passes_total", map[string]string{"crd": name, "result": result})
		}
		figures[kind+" passes"] = passes
		lived, ever := 0.0, float64(len(final[kind]))
		for uid := range stored[kind] {
			if final[kind][uid] {
				lived++
			} else {
				ever++
			}
		}
		figures[kind+" lived through"], figures[kind+" ever stored"] = lived, ever
		whole := passes - figures[kind+" retried"]
		if got := figures[kind+" rewritten"] + figures[kind+" current"] + figures[kind+" gone"]; got < lived*whole || got > ever*passes || figures[kind+" failed"] > 0 {
			t.Errorf("%s: %v objects written back in %v passes (%v not ended by a transient error), want each of the %v that lived through the migration once a whole pass, no more than the %v ever stored once a pass, and none failed: %v",
				name, got, passes, whole, lived, ever, figures)
		}
	}
	assertReadsInBothVersions(t, ns, created)
	t.Logf("took over %d graphs, %d components and %d Deployments stored in v1beta1 with %d writes; written back by the migration: %v",
		count(created, "DynamoGraphDeployment"), count(created, "DynamoComponentDeployment"), len(before), op.Writes(), figures)

	// Started again, the operator finds nothing to migrate: no write of a
	// CRD, no write of a graph or component but their status.
	op.Stop()
	n := op.Writes()
	if err := op.Start(ctx); err != nil {
		t.Fatal(err)
	}
	waitReady(t, ns, 60*time.Second, "after a restart")
	for name := range convertedCRDs {
		await.New(t).Eventually(func() bool {
			return testenv.MetricValue(t, "dynamo_operator_storage_migration_passes_total", map[string]string{"crd": name, "result": "current"}) == 1
		}).Should(gomega.BeTrue(), "the restarted operator's migration to find "+name+" current")
	}
	for _, w := range op.WritesSince(n) {
		if strings.Contains(w, "customresourcedefinitions") ||
			(strings.HasPrefix(w, "PUT ") && strings.Contains(w, "/apis/nvidia.com/") && !strings.HasSuffix(w, "/status")) {
			t.Errorf("the restarted operator wrote %s", w)
		}
	}
}

// assertReadsInBothVersions lists the graphs and components in v1alpha1
// and v1beta1 (the latter through our conversion webhook): each version
// holds every object.
func assertReadsInBothVersions(t *testing.T, ns string, created []*unstructured.Unstructured) {
	t.Helper()
	for _, kind := range convertedCRDs {
		for _, version := range []string{"v1alpha1", "v1beta1"} {
			list := &unstructured.UnstructuredList{}
			list.SetAPIVersion("nvidia.com/" + version)
			list.SetKind(kind + "List")
			if err := env.Client.List(context.Background(), list, client.InNamespace(ns)); err != nil {
				t.Errorf("listing %ss in %s: %v", kind, version, err)
				continue
			}
			if len(list.Items) != count(created, kind) {
				t.Errorf("%d %ss read in %s, want %d", len(list.Items), kind, version, count(created, kind))
			}
		}
	}
}

// objectUIDs are the UIDs of the graphs and components in every
// namespace, by kind.
func objectUIDs(t *testing.T) map[string]map[types.UID]bool {
	t.Helper()
	out := map[string]map[types.UID]bool{}
	for _, kind := range convertedCRDs {
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion("nvidia.com/v1alpha1")
		list.SetKind(kind + "List")
		if err := env.Client.List(context.Background(), list); err != nil {
			t.Fatal(err)
		}
		out[kind] = map[types.UID]bool{}
		for _, o := range list.Items {
			out[kind][o.GetUID()] = true
		}
	}
	return out
}
