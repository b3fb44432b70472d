// Package cachelag tests, against a real API server (envtest), what the
// controllers do when their cache lags behind their own writes. It holds
// only tests: the controllers' own package runs without an API server.
package cachelag

import (
	"context"
	"os"
	"reflect"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/dynamoctl/dynamo-operator/internal/builders"
	"github.com/dynamoctl/dynamo-operator/internal/testenv"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/apply"
	"github.com/dynamoctl/dynamo-operator/operator/controllers"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, func(e *testenv.Env) { env = e }))
}

// laggingCache is a cache that has not yet seen some writes: while held is
// set, reading that component returns the copy held, as the informer would
// before the watch event of a later write arrives. Everything else reads
// the API server.
type laggingCache struct {
	client.Client
	held client.Object
}

func (c *laggingCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if c.held != nil && key == client.ObjectKeyFromObject(c.held) && reflect.TypeOf(obj) == reflect.TypeOf(c.held) {
		reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(c.held.DeepCopyObject()).Elem())
		return nil
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

// observe sets the Deployment's status as its controller would once it has
// observed the current generation with every replica available (envtest
// runs no controller-manager).
func observe(t *testing.T, ctx context.Context, key types.NamespacedName) {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := env.Client.Get(ctx, key, d); err != nil {
		t.Fatal(err)
	}
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1}
	if err := env.Client.Status().Update(ctx, d); err != nil {
		t.Fatal(err)
	}
}

func available(t *testing.T, ctx context.Context, key types.NamespacedName) *metav1.Condition {
	t.Helper()
	dcd := &v1alpha1.DynamoComponentDeployment{}
	if err := env.Client.Get(ctx, key, dcd); err != nil {
		t.Fatal(err)
	}
	return meta.FindStatusCondition(dcd.Status.Conditions, v1alpha1.ConditionAvailable)
}

// A Deployment whose generation moved on and was then observed makes its
// component Available again even when the reconcile that sees it reads the
// component from a cache still showing the status from before the
// component's "not yet observed" one: that stale status equals the new one,
// and compared with it nothing would be written, leaving the component (and
// its graph) not Ready for good. This is what stranded graphs on a downgrade
// to v0.1.0 under load.
func TestComponentStatusWrittenThoughTheCacheLagsBehindOurWrite(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t, t.Name())
	clock := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	dcd := builders.MakeComponent("c", ns, builders.MakeService().Type(v1alpha1.ComponentTypeFrontend).Image("frontend:1")).Obj()
	if err := env.Client.Create(ctx, dcd); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(dcd)
	cache := &laggingCache{Client: env.Client}
	r := &controllers.ComponentReconciler{
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

	// The component runs: Available.
	reconcileOnce()
	observe(t, ctx, key)
	reconcileOnce()
	if c := available(t, ctx, key); c == nil || c.Status != metav1.ConditionTrue {
		t.Fatalf("the component is not Available once its Deployment is: %+v", c)
	}
	before := &v1alpha1.DynamoComponentDeployment{}
	if err := env.Client.Get(ctx, key, before); err != nil {
		t.Fatal(err)
	}

	// Another writer changes the Deployment's annotations (its generation
	// moves on): the component is not Available until that is observed.
	d := &appsv1.Deployment{}
	if err := env.Client.Get(ctx, key, d); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(d.DeepCopy())
	d.Annotations["example.com/other-writer"] = "1"
	if err := env.Client.Patch(ctx, d, patch); err != nil {
		t.Fatal(err)
	}
	reconcileOnce()
	if c := available(t, ctx, key); c == nil || c.Status != metav1.ConditionFalse {
		t.Fatalf("the component is Available while its Deployment has not observed its spec: %+v", c)
	}

	// The Deployment catches up while the cache still shows the component
	// as it was before our "not yet observed" status.
	observe(t, ctx, key)
	cache.held = before
	reconcileOnce()
	if c := available(t, ctx, key); c == nil || c.Status != metav1.ConditionTrue {
		t.Fatalf("the component stays not Available though its Deployment observed its spec: %+v", c)
	}
}
