// Package multinodetest runs the operator against an API server that has
// no LeaderWorkerSet API at first; it has a control plane of its own
// because installing a CRD is visible to every test sharing one.
package multinodetest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/dynamoctl/dynamo-operator/internal/builders"
	"github.com/dynamoctl/dynamo-operator/internal/migration"
	"github.com/dynamoctl/dynamo-operator/internal/testenv"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/app"
	"github.com/dynamoctl/dynamo-operator/operator/controllers"
	"github.com/dynamoctl/dynamo-operator/operator/render"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.UseDevMode(true)))
	os.Exit(testenv.Run(m, func(e *testenv.Env) { env = e }))
}

func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting until %s", timeout, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// On a cluster without LeaderWorkerSet a multinode graph fails saying what
// to install; once the CRD is installed the same operator process renders
// the groups, and the component counts groups, not pods.
func TestMultinodeWaitsForTheLWSAPIThenCountsGroups(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := env.Namespace(t, "multinode")
	op, err := env.NewOperator([]string{"--enable-webhooks=false", "--metrics-bind-address=0", "--health-probe-bind-address=0"}, app.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	if err := op.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer op.Stop()

	graph := builders.MakeGraph("llm", ns).
		Service("decode", builders.MakeService().Type(v1alpha1.ComponentTypeWorker).Replicas(2).GPUs(4).Multinode(4).
			Command([]string{"python3", "-m", "dynamo.vllm"}, "--tensor-parallel-size", "16")).Obj()
	if err := env.Client.Create(ctx, graph); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKey{Namespace: ns, Name: "llm-decode"}
	dcd := &v1alpha1.DynamoComponentDeployment{}
	waitFor(t, 30*time.Second, "the component says LeaderWorkerSet is missing", func() bool {
		if env.Client.Get(ctx, key, dcd) != nil {
			return false
		}
		c := meta.FindStatusCondition(dcd.Status.Conditions, v1alpha1.ConditionAvailable)
		return c != nil && c.Reason == controllers.ReasonMissingAPI
	})
	c := meta.FindStatusCondition(dcd.Status.Conditions, v1alpha1.ConditionAvailable)
	for _, want := range []string{"spec.multinode", "install LeaderWorkerSet", "without restarting the operator"} {
		if !strings.Contains(c.Message, want) {
			t.Errorf("message %q lacks %q", c.Message, want)
		}
	}
	// No Deployment stands in for the groups.
	if err := env.Client.Get(ctx, key, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment"}}); err == nil {
		t.Error("a Deployment was rendered for a multinode service")
	}
	g := &v1alpha1.DynamoGraphDeployment{}
	waitFor(t, 30*time.Second, "the graph reports the component's failure", func() bool {
		return env.Client.Get(ctx, client.ObjectKeyFromObject(graph), g) == nil && g.Status.State == v1alpha1.GraphStateFailed &&
			strings.Contains(meta.FindStatusCondition(g.Status.Conditions, v1alpha1.ConditionReady).Message, "LeaderWorkerSet")
	})

	file, err := testenv.LWSCRDFile()
	if err != nil {
		t.Fatal(err)
	}
	crds, err := migration.ReadCRDs(file)
	if err != nil {
		t.Fatal(err)
	}
	s := testenv.NewScheme()
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	admin, err := client.New(env.Config, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	if err := migration.InstallCRDs(ctx, admin, crds); err != nil {
		t.Fatal(err)
	}
	installed := time.Now()
	lws := &lwsv1.LeaderWorkerSet{}
	waitFor(t, 60*time.Second, "the operator renders the LeaderWorkerSet", func() bool {
		return env.Client.Get(ctx, key, lws) == nil
	})
	t.Logf("LeaderWorkerSet rendered %v after the CRD was installed", time.Since(installed).Round(100*time.Millisecond))
	if *lws.Spec.Replicas != 2 || *lws.Spec.LeaderWorkerTemplate.Size != 4 {
		t.Errorf("replicas %d size %d, want 2 groups of 4", *lws.Spec.Replicas, *lws.Spec.LeaderWorkerTemplate.Size)
	}
	if !metav1.IsControlledBy(lws, dcd) {
		t.Error("the LeaderWorkerSet is not the component's")
	}

	// LeaderWorkerSet's controller reports both groups ready; there is
	// none here, so the test writes what it would.
	lws.Status = lwsv1.LeaderWorkerSetStatus{ObservedGeneration: lws.Generation, Replicas: 2, ReadyReplicas: 2, UpdatedReplicas: 2}
	if err := env.Client.Status().Update(ctx, lws); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the component is available", func() bool {
		if env.Client.Get(ctx, key, dcd) != nil {
			return false
		}
		c := meta.FindStatusCondition(dcd.Status.Conditions, v1alpha1.ConditionAvailable)
		return c != nil && c.Status == metav1.ConditionTrue && dcd.Status.ObservedGeneration == dcd.Generation
	})
	if dcd.Status.Replicas != 2 || dcd.Status.ReadyReplicas != 2 || dcd.Status.Service.ComponentKind != v1alpha1.ComponentKindLeaderWorkerSet {
		t.Errorf("status counts %d replicas, %d ready, kind %s; want 2 groups of LeaderWorkerSet",
			dcd.Status.Replicas, dcd.Status.ReadyReplicas, dcd.Status.Service.ComponentKind)
	}

	// The scale subresource says the same: 2 instances, selected by their leaders.
	scale := &unstructured.Unstructured{}
	scale.SetGroupVersionKind(schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"})
	if err := env.Client.SubResource("scale").Get(ctx, dcd, scale); err != nil {
		t.Fatal(err)
	}
	replicas, _, _ := unstructured.NestedInt64(scale.Object, "status", "replicas")
	selector, _, _ := unstructured.NestedString(scale.Object, "status", "selector")
	spec, _, _ := unstructured.NestedInt64(scale.Object, "spec", "replicas")
	if diff := cmp.Diff("2 2 "+render.LabelComponent+"=llm-decode,"+render.LabelMultinodeRole+"=leader",
		fmt.Sprintf("%d %d %s", spec, replicas, selector)); diff != "" {
		t.Errorf("scale (spec status selector) (-want +got):\n%s", diff)
	}

	// The Service selects the leaders, which serve.
	svc := &corev1.Service{}
	if err := env.Client.Get(ctx, key, svc); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(render.MultinodeSelector(dcd), svc.Spec.Selector); diff != "" {
		t.Errorf("Service selector (-want +got):\n%s", diff)
	}
}
