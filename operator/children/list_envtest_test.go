package children_test

import (
	"context"
	"os"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/internal/builders"
	"github.com/dynamoctl/dynamo-operator/internal/testenv"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/children"
	"github.com/dynamoctl/dynamo-operator/operator/render"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, func(e *testenv.Env) { env = e }))
}

// createRendered creates in the API server every object the operator
// renders for dgd without a cluster's controllers: its components, their
// workloads (a multinode one's gang PodGroups; its LeaderWorkerSet's API is
// not served here), Services, the claims and the discovery objects, and the
// SSH key Secret of its multinode component, which carries only the
// component's label.
func createRendered(t *testing.T, dgd *v1alpha1.DynamoGraphDeployment) {
	t.Helper()
	ctx := context.Background()
	dcds, err := render.Components(dgd)
	if err != nil {
		t.Fatal(err)
	}
	var objs []client.Object
	for _, dcd := range dcds {
		objs = append(objs, dcd, render.Service(dcd))
		if !render.IsMultinode(dcd) {
			deploy, err := render.Deployment(dcd, dgd.Spec.PVCs, render.Options{})
			if err != nil {
				t.Fatal(err)
			}
			objs = append(objs, deploy)
			continue
		}
		for _, pg := range render.PodGroups(dcd) {
			objs = append(objs, pg)
		}
		objs = append(objs, builders.MakeSecret(render.MPISSHSecretName(dcd), dgd.Namespace).
			Label(render.LabelComponent, dcd.Name).Obj())
	}
	for _, pvc := range render.PVCs(dgd) {
		objs = append(objs, pvc)
	}
	if d := render.GraphDiscoveryRBAC(dgd); d != nil {
		objs = append(objs, d.ServiceAccount, d.Role, d.RoleBinding)
	}
	for _, o := range objs {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
}

// TestListFindsAGraphsObjects: List returns a graph's objects of every kind
// the cluster serves, by its graph label or its components' label, and none
// of another graph's in the same namespace.
func TestListFindsAGraphsObjects(t *testing.T) {
	ns := env.Namespace(t, "children-list")
	llm := builders.MakeGraph("llm", ns).Backend(v1alpha1.BackendFrameworkTRTLLM).
		Service("Frontend", builders.MakeService().Type(v1alpha1.ComponentTypeFrontend)).
		Service("Worker", builders.MakeService().Type(v1alpha1.ComponentTypeWorker).GPUs(1).Multinode(2)).
		PVC(v1alpha1.GraphPVC{Name: "models", Create: ptr.To(true), StorageClass: "standard",
			Size: ptr.To(resource.MustParse("1Gi")), VolumeAccessMode: corev1.ReadWriteOnce}).
		Obj()
	other := builders.MakeGraph("other", ns).
		Service("Frontend", builders.MakeService().Type(v1alpha1.ComponentTypeFrontend)).
		Obj()
	createRendered(t, llm)
	createRendered(t, other)

	got, err := children.List(context.Background(), env.Client, ns, "llm")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, o := range got {
		names = append(names, o.GetObjectKind().GroupVersionKind().Kind+"/"+o.GetName())
	}
	want := []string{
		"DynamoComponentDeployment/llm-frontend",
		"DynamoComponentDeployment/llm-worker",
		"Deployment/llm-frontend",
		"PodGroup/llm-worker-0",
		"PodGroup/llm-worker-1", // the rollout's surge group
		"Secret/llm-worker-mpi-ssh",
		"Service/llm-frontend",
		"Service/llm-worker",
		"PersistentVolumeClaim/models",
		"ServiceAccount/llm-k8s-service-discovery",
		"Role/llm-k8s-service-discovery-role",
		"RoleBinding/llm-k8s-service-discovery-binding",
	}
	if d := cmp.Diff(want, names); d != "" {
		t.Errorf("List(llm) kinds/names (-want +got):\n%s", d)
	}
}

// TestKindsReturnsACopy: a caller changing what Kinds returned changes no
// later caller's table.
func TestKindsReturnsACopy(t *testing.T) {
	first := children.Kinds()
	want := slices.Clone(first[0].Verbs)
	first[0].Verbs[0] = "escalate"
	first[0].Resource = "changed"
	again := children.Kinds()
	if d := cmp.Diff(want, again[0].Verbs); d != "" {
		t.Errorf("verbs after a caller's change (-want +got):\n%s", d)
	}
	if again[0].Resource == "changed" {
		t.Error("a caller's change reached the table")
	}
}
