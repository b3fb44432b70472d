package cachelag

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/dynamoctl/dynamo-operator/internal/builders"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/apply"
	"github.com/dynamoctl/dynamo-operator/operator/controllers"
	"github.com/dynamoctl/dynamo-operator/operator/render"
)

// setAvailable writes a component's status as its controller would: the
// current generation observed, Available (and Ready) as given.
func setAvailable(t *testing.T, ctx context.Context, key client.ObjectKey, status metav1.ConditionStatus) {
	t.Helper()
	dcd := &v1alpha1.DynamoComponentDeployment{}
	if err := env.Client.Get(ctx, key, dcd); err != nil {
		t.Fatal(err)
	}
	dcd.Status.ObservedGeneration = dcd.Generation
	for _, typ := range []string{v1alpha1.ConditionAvailable, v1alpha1.ConditionReady} {
		meta.SetStatusCondition(&dcd.Status.Conditions, metav1.Condition{Type: typ, Status: status, Reason: "Test",
			Message: "set by the test", ObservedGeneration: dcd.Generation})
	}
	if err := env.Client.Status().Update(ctx, dcd); err != nil {
		t.Fatal(err)
	}
}

func graphReady(t *testing.T, ctx context.Context, key client.ObjectKey) *metav1.Condition {
	t.Helper()
	dgd := &v1alpha1.DynamoGraphDeployment{}
	if err := env.Client.Get(ctx, key, dgd); err != nil {
		t.Fatal(err)
	}
	return meta.FindStatusCondition(dgd.Status.Conditions, v1alpha1.ConditionReady)
}

// The graph's status follows its components even when the reconcile that
// sees a component Available again reads the graph from a cache still
// showing the graph's status from before our "not Ready" one.
func TestGraphStatusWrittenThoughTheCacheLagsBehindOurWrite(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t, t.Name())
	clock := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	dgd := builders.MakeGraph("g", ns).Service("Frontend", builders.MakeService().Type(v1alpha1.ComponentTypeFrontend).Image("frontend:1")).Obj()
	if err := env.Client.Create(ctx, dgd); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(dgd)
	component := client.ObjectKey{Namespace: ns, Name: render.ComponentName("g", "Frontend")}
	cache := &laggingCache{Client: env.Client}
	r := &controllers.GraphReconciler{
		Client:   cache,
		Applier:  &apply.Applier{Client: env.Client, FieldOwner: controllers.FieldOwner, Clock: clock},
		Recorder: events.NewFakeRecorder(100),
		Clock:    clock,
		Reader:   env.Client,
		Renderer: "dynamo-operator/test",
	}
	reconcileOnce := func() {
		t.Helper()
		if _, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: key}); err != nil {
			t.Fatal(err)
		}
	}

	reconcileOnce() // creates the component
	setAvailable(t, ctx, component, metav1.ConditionTrue)
	reconcileOnce()
	if c := graphReady(t, ctx, key); c == nil || c.Status != metav1.ConditionTrue {
		t.Fatalf("the graph is not Ready once its component is Available: %+v", c)
	}
	before := &v1alpha1.DynamoGraphDeployment{}
	if err := env.Client.Get(ctx, key, before); err != nil {
		t.Fatal(err)
	}

	setAvailable(t, ctx, component, metav1.ConditionFalse)
	reconcileOnce()
	if c := graphReady(t, ctx, key); c == nil || c.Status != metav1.ConditionFalse {
		t.Fatalf("the graph is Ready while its component is not Available: %+v", c)
	}

	// The component is Available again while the cache still shows the
	// graph as it was before our "not Ready" status.
	setAvailable(t, ctx, component, metav1.ConditionTrue)
	cache.held = before
	reconcileOnce()
	if c := graphReady(t, ctx, key); c == nil || c.Status != metav1.ConditionTrue {
		t.Fatalf("the graph stays not Ready though its component is Available: %+v", c)
	}
}
