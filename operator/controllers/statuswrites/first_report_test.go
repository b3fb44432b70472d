// Package statuswrites tests, against a real API server (envtest), how many
// status writes the controllers make while graphs and components converge:
// one per state a user could act on, none for a state that lasts moments;
// and the order of a new graph's first writes (order_test.go).
// It holds only tests: the controllers' own package runs without an API
// server.
package statuswrites

import (
	"context"
	"errors"
	"os"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/dynamoctl/dynamo-operator/internal/builders"
	"github.com/dynamoctl/dynamo-operator/internal/testenv"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/apply"
	"github.com/dynamoctl/dynamo-operator/operator/controllers"
	"github.com/dynamoctl/dynamo-operator/operator/render"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, func(e *testenv.Env) { env = e }))
}

// countingClient counts the status writes made through it.
type countingClient struct {
	client.Client
	statusWrites atomic.Int32
}

func (c *countingClient) Status() client.SubResourceWriter {
	return countingStatus{SubResourceWriter: c.Client.Status(), n: &c.statusWrites}
}

type countingStatus struct {
	client.SubResourceWriter
	n *atomic.Int32
}

func (s countingStatus) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	s.n.Add(1)
	return s.SubResourceWriter.Patch(ctx, obj, patch, opts...)
}

func (s countingStatus) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	s.n.Add(1)
	return s.SubResourceWriter.Update(ctx, obj, opts...)
}

// refusingClient refuses every write, as an API server refuses a quota
// exceeded.
type refusingClient struct{ client.Client }

var errRefused = errors.New("refused: exceeded quota")

func (refusingClient) Apply(context.Context, runtime.ApplyConfiguration, ...client.ApplyOption) error {
	return errRefused
}

func (refusingClient) Create(context.Context, client.Object, ...client.CreateOption) error {
	return errRefused
}

func (refusingClient) Patch(context.Context, client.Object, client.Patch, ...client.PatchOption) error {
	return errRefused
}

func (refusingClient) Update(context.Context, client.Object, ...client.UpdateOption) error {
	return errRefused
}

// deploymentStatus sets the Deployment's status as its controller would
// (envtest runs no controller-manager): the current generation observed,
// with available of its one replica available.
func deploymentStatus(t *testing.T, ctx context.Context, key client.ObjectKey, available int32) {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := env.Client.Get(ctx, key, d); err != nil {
		t.Fatal(err)
	}
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 1, UpdatedReplicas: 1,
		ReadyReplicas: available, AvailableReplicas: available}
	if err := env.Client.Status().Update(ctx, d); err != nil {
		t.Fatal(err)
	}
}

func component(t *testing.T, ctx context.Context, key client.ObjectKey) *v1alpha1.DynamoComponentDeployment {
	t.Helper()
	dcd := &v1alpha1.DynamoComponentDeployment{}
	if err := env.Client.Get(ctx, key, dcd); err != nil {
		t.Fatal(err)
	}
	return dcd
}

func newComponentReconciler(c client.Client, clock *clocktesting.FakeClock) *controllers.ComponentReconciler {
	return &controllers.ComponentReconciler{
		Client:   c,
		Applier:  &apply.Applier{Client: env.Client, FieldOwner: controllers.FieldOwner, Clock: clock},
		Recorder: events.NewFakeRecorder(100),
		Clock:    clock,
		Reader:   env.Client,
		Renderer: "dynamo-operator/test",
	}
}

// newGraphReconciler is a graph reconciler whose reads and status writes go
// through c and whose children are applied through applyThrough.
func newGraphReconciler(c, applyThrough client.Client, clock *clocktesting.FakeClock) *controllers.GraphReconciler {
	return &controllers.GraphReconciler{
		Client:   c,
		Applier:  &apply.Applier{Client: applyThrough, FieldOwner: controllers.FieldOwner, Clock: clock},
		Recorder: events.NewFakeRecorder(100),
		Clock:    clock,
		Reader:   env.Client,
		Renderer: "dynamo-operator/test",
	}
}

// createGraph creates graph "g" in ns: a frontend and a one-GPU worker.
func createGraph(t *testing.T, ctx context.Context, ns string) *v1alpha1.DynamoGraphDeployment {
	t.Helper()
	dgd := builders.MakeGraph("g", ns).
		Service("Frontend", builders.MakeService().Type(v1alpha1.ComponentTypeFrontend).Image("frontend:1")).
		Service("Worker", builders.MakeService().Type(v1alpha1.ComponentTypeWorker).Image("worker:1").GPUs(1)).Obj()
	if err := env.Client.Create(ctx, dgd); err != nil {
		t.Fatal(err)
	}
	return dgd
}

// createFrontend creates component "c", a frontend, in a namespace of its
// own, and returns it with a fake clock for its reconciler.
func createFrontend(t *testing.T, ctx context.Context) (client.ObjectKey, *clocktesting.FakeClock) {
	t.Helper()
	dcd := builders.MakeComponent("c", env.Namespace(t, t.Name()),
		builders.MakeService().Type(v1alpha1.ComponentTypeFrontend).Image("frontend:1")).Obj()
	if err := env.Client.Create(ctx, dcd); err != nil {
		t.Fatal(err)
	}
	return client.ObjectKeyFromObject(dcd), clocktesting.NewFakeClock(time.Unix(1000, 0))
}

// createPod creates pod with the selector labels of component key's
// Deployment, then writes its status as the scheduler or kubelet would
// (envtest runs neither).
func createPod(t *testing.T, ctx context.Context, key client.ObjectKey, pod *builders.PodWrapper) {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := env.Client.Get(ctx, key, d); err != nil {
		t.Fatalf("the component's Deployment: %v", err)
	}
	p := pod.Labels(d.Spec.Selector.MatchLabels).Obj()
	status := p.Status
	if err := env.Client.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	p.Status = status
	if err := env.Client.Status().Update(ctx, p); err != nil {
		t.Fatal(err)
	}
}

// podStatus writes the status of pod, created before, as the scheduler or
// kubelet would.
func podStatus(t *testing.T, ctx context.Context, pod *builders.PodWrapper) {
	t.Helper()
	want := pod.Obj()
	got := &corev1.Pod{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(want), got); err != nil {
		t.Fatal(err)
	}
	got.Status = want.Status
	if err := env.Client.Status().Update(ctx, got); err != nil {
		t.Fatal(err)
	}
}

// wantHeld fails when a status was written through c, or the reconcile
// that gave res (of a component whose first report is held, what) does not
// look at it again after requeue.
func wantHeld(t *testing.T, what string, c *countingClient, res reconcile.Result, requeue time.Duration) {
	t.Helper()
	if n := c.statusWrites.Load(); n != 0 {
		t.Fatalf("%s: %d status writes, want none", what, n)
	}
	if res.RequeueAfter != requeue {
		t.Fatalf("%s: looked at again after %s, want %s", what, res.RequeueAfter, requeue)
	}
}

// wantAvailable fails unless component key is Available and writes status
// writes went through c in all.
func wantAvailable(t *testing.T, ctx context.Context, key client.ObjectKey, c *countingClient, writes int32) {
	t.Helper()
	cond := meta.FindStatusCondition(component(t, ctx, key).Status.Conditions, v1alpha1.ConditionAvailable)
	if cond == nil || cond.Status != metav1.ConditionTrue {
		t.Fatalf("the component is not Available once its Deployment is: %+v", cond)
	}
	if n := c.statusWrites.Load(); n != writes {
		t.Fatalf("status writes: got %d, want %d", n, writes)
	}
}

func reconcileOnce(t *testing.T, ctx context.Context, r reconcile.Reconciler, key client.ObjectKey) reconcile.Result {
	t.Helper()
	res, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: key})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// A component whose Deployment becomes available moments after it was
// created gets one status write, Available: the "not yet observed" state
// in between is not written, yet the component says nothing false
// meanwhile (no status for its generation) and is looked at again when the
// hold ends at the latest: no pod has started, so 2 minutes (its
// Deployment's and pods' changes wake it sooner).
func TestComponentAvailableAtOnceGetsOneStatusWrite(t *testing.T) {
	ctx := context.Background()
	key, clock := createFrontend(t, ctx)
	c := &countingClient{Client: env.Client}
	r := newComponentReconciler(c, clock)

	res := reconcileOnce(t, ctx, r, key)
	// The reconcile acted: it created the Deployment.
	if err := env.Client.Get(ctx, key, &appsv1.Deployment{}); err != nil {
		t.Fatalf("the first reconcile did not create the Deployment: %v", err)
	}
	wantHeld(t, "a rollout that started moments ago", c, res, 2*time.Minute)
	if got := component(t, ctx, key); got.Status.ObservedGeneration != 0 || len(got.Status.Conditions) != 0 {
		t.Fatalf("the component reports before its first status write: %+v", got.Status)
	}

	clock.Step(time.Second)
	deploymentStatus(t, ctx, key, 1)
	reconcileOnce(t, ctx, r, key)
	got := component(t, ctx, key)
	cond := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionAvailable)
	if cond == nil || cond.Status != metav1.ConditionTrue || got.Status.ObservedGeneration != got.Generation {
		t.Fatalf("the component is not Available once its Deployment is: %+v", got.Status)
	}
	if n := c.statusWrites.Load(); n != 1 {
		t.Fatalf("status writes to become Available: got %d, want 1", n)
	}
}

// A rollout still under way after the delay is reported then, and its end
// once more: two writes for two states a user could read. The delay counts
// from the pod's start: a frontend (readiness delay 10 s) started at once
// is reported 5 s past the soonest it could be Ready.
func TestComponentSlowRolloutIsReportedAfterTheDelay(t *testing.T) {
	ctx := context.Background()
	key, clock := createFrontend(t, ctx)
	c := &countingClient{Client: env.Client}
	r := newComponentReconciler(c, clock)

	reconcileOnce(t, ctx, r, key)
	createPod(t, ctx, key, builders.MakePod("c-0", key.Namespace).Started(clock.Now()))
	deploymentStatus(t, ctx, key, 0)
	clock.Step(14 * time.Second)
	reconcileOnce(t, ctx, r, key)
	if n := c.statusWrites.Load(); n != 0 {
		t.Fatalf("a status was written within the delay: %d writes", n)
	}

	clock.Step(time.Second)
	reconcileOnce(t, ctx, r, key)
	got := component(t, ctx, key)
	cond := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionAvailable)
	if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != controllers.ReasonRolloutInProgress ||
		got.Status.ObservedGeneration != got.Generation {
		t.Fatalf("a rollout still going after the delay is not reported: %+v", got.Status)
	}

	deploymentStatus(t, ctx, key, 1)
	reconcileOnce(t, ctx, r, key)
	cond = meta.FindStatusCondition(component(t, ctx, key).Status.Conditions, v1alpha1.ConditionAvailable)
	if cond == nil || cond.Status != metav1.ConditionTrue {
		t.Fatalf("the component is not Available once its Deployment is: %+v", cond)
	}
	if n := c.statusWrites.Load(); n != 2 {
		t.Fatalf("status writes: got %d, want 2 (in progress, available)", n)
	}
}

// While none of its pods has started, a rollout waits for the cluster (a
// loaded scheduler, an image pull): its first report waits up to 2 minutes
// from the first look, and the wait does not count once a pod starts. A pod
// that starts after a minute and a half and is Ready 11 s later costs one
// status write, Available; one that never starts is reported at 2 minutes.
func TestComponentWaitingForItsPodsToStart(t *testing.T) {
	ctx := context.Background()
	t.Run("starts late", func(t *testing.T) {
		key, clock := createFrontend(t, ctx)
		c := &countingClient{Client: env.Client}
		r := newComponentReconciler(c, clock)
		reconcileOnce(t, ctx, r, key)
		createPod(t, ctx, key, builders.MakePod("c-0", key.Namespace)) // pending
		deploymentStatus(t, ctx, key, 0)
		clock.Step(90 * time.Second)
		// Held until 2 minutes after the first look.
		wantHeld(t, "a pod waiting to start", c, reconcileOnce(t, ctx, r, key), 30*time.Second)
		// The pod starts: 10 s of readiness delay and 5 s more from now,
		// as if it had started at the first look.
		podStatus(t, ctx, builders.MakePod("c-0", key.Namespace).Started(clock.Now()))
		wantHeld(t, "a pod started late", c, reconcileOnce(t, ctx, r, key), 15*time.Second)
		clock.Step(11 * time.Second)
		deploymentStatus(t, ctx, key, 1)
		reconcileOnce(t, ctx, r, key)
		wantAvailable(t, ctx, key, c, 1)
	})
	t.Run("never starts", func(t *testing.T) {
		key, clock := createFrontend(t, ctx)
		c := &countingClient{Client: env.Client}
		r := newComponentReconciler(c, clock)
		reconcileOnce(t, ctx, r, key)
		createPod(t, ctx, key, builders.MakePod("c-0", key.Namespace))
		deploymentStatus(t, ctx, key, 0)
		clock.Step(2*time.Minute - time.Second)
		if reconcileOnce(t, ctx, r, key); c.statusWrites.Load() != 0 {
			t.Fatal("a status was written before 2 minutes")
		}
		clock.Step(time.Second)
		reconcileOnce(t, ctx, r, key)
		got := component(t, ctx, key)
		cond := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionAvailable)
		if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != controllers.ReasonRolloutInProgress ||
			got.Status.ObservedGeneration != got.Generation || c.statusWrites.Load() != 1 {
			t.Fatalf("a rollout whose pod has not started after 2 minutes is not reported in one write (%d): %+v",
				c.statusWrites.Load(), got.Status)
		}
	})
}

// A frontend cannot be Ready before its readiness probe's initial delay
// (10 s) has passed since its container started: its first report waits
// for that, so a frontend that is Available soon after gets one status
// write, not "rolling out" at the end of the usual 5 s and then Available.
func TestComponentHeldUntilItsPodsCanBeReady(t *testing.T) {
	ctx := context.Background()
	key, clock := createFrontend(t, ctx)
	c := &countingClient{Client: env.Client}
	r := newComponentReconciler(c, clock)

	reconcileOnce(t, ctx, r, key)
	// Its pod starts a second later, as the kubelet reports it.
	createPod(t, ctx, key, builders.MakePod("c-0", key.Namespace).Started(clock.Now().Add(time.Second)))
	deploymentStatus(t, ctx, key, 0)

	// Past the usual delay, the pod cannot be Ready yet (1 s + 10 s).
	clock.Step(6 * time.Second)
	// Held until 5 s past the soonest Ready.
	wantHeld(t, "a pod that cannot be Ready yet", c, reconcileOnce(t, ctx, r, key), 10*time.Second)

	clock.Step(6 * time.Second)
	deploymentStatus(t, ctx, key, 1)
	reconcileOnce(t, ctx, r, key)
	wantAvailable(t, ctx, key, c, 1)
}

// Available claimed for an older spec is withdrawn at once when the spec
// changes: old pods serve meanwhile, and the component is not what its spec
// says.
func TestComponentAvailableForAnOlderSpecIsWithdrawnAtOnce(t *testing.T) {
	ctx := context.Background()
	key, clock := createFrontend(t, ctx)
	r := newComponentReconciler(env.Client, clock)
	reconcileOnce(t, ctx, r, key)
	deploymentStatus(t, ctx, key, 1)
	reconcileOnce(t, ctx, r, key)

	got := component(t, ctx, key)
	patch := client.MergeFrom(got.DeepCopy())
	got.Spec.ExtraPodSpec.MainContainer.Image = "frontend:2"
	if err := env.Client.Patch(ctx, got, patch); err != nil {
		t.Fatal(err)
	}
	reconcileOnce(t, ctx, r, key) // the clock has not moved: within the delay
	got = component(t, ctx, key)
	cond := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionAvailable)
	if cond == nil || cond.Status != metav1.ConditionFalse || got.Status.ObservedGeneration != got.Generation {
		t.Fatalf("the component stays Available for its older spec: %+v", got.Status)
	}
}

// What blocks a rollout is news: it is written at once, delay or not.
func TestComponentBlockedRolloutIsReportedAtOnce(t *testing.T) {
	ctx := context.Background()
	key, clock := createFrontend(t, ctx)
	r := newComponentReconciler(env.Client, clock)
	reconcileOnce(t, ctx, r, key)
	createPod(t, ctx, key, builders.MakePod("c-0", key.Namespace).Unschedulable("0/4 nodes are available: 4 Insufficient nvidia.com/gpu"))
	deploymentStatus(t, ctx, key, 0)
	reconcileOnce(t, ctx, r, key) // the clock has not moved: within the delay
	cond := meta.FindStatusCondition(component(t, ctx, key).Status.Conditions, v1alpha1.ConditionAvailable)
	if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != corev1.PodReasonUnschedulable {
		t.Fatalf("an unschedulable pod is not reported at once: %+v", cond)
	}
}

// setComponent writes a component's status as its controller would, for
// its current generation: Available, or rolling out.
func setComponent(t *testing.T, ctx context.Context, key client.ObjectKey, available bool) {
	t.Helper()
	dcd := component(t, ctx, key)
	dcd.Status.ObservedGeneration = dcd.Generation
	cond := metav1.Condition{Status: metav1.ConditionTrue, Reason: controllers.ReasonAvailable,
		Message: "1 of 1 replicas available", ObservedGeneration: dcd.Generation}
	if !available {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, controllers.ReasonRolloutInProgress, "0 of 1 replicas available"
	}
	for _, typ := range []string{v1alpha1.ConditionAvailable, v1alpha1.ConditionReady} {
		cond.Type = typ
		meta.SetStatusCondition(&dcd.Status.Conditions, cond)
	}
	if err := env.Client.Status().Update(ctx, dcd); err != nil {
		t.Fatal(err)
	}
}

func graph(t *testing.T, ctx context.Context, key client.ObjectKey) *v1alpha1.DynamoGraphDeployment {
	t.Helper()
	dgd := &v1alpha1.DynamoGraphDeployment{}
	if err := env.Client.Get(ctx, key, dgd); err != nil {
		t.Fatal(err)
	}
	return dgd
}

// A graph reports what it waits for in the reconcile that created its
// components, and after that on every change of what it waits for: a
// component done, a blocker, readiness. Progress alone (a component's
// replica count moving while the graph waits for the same components) is
// written at most every ten seconds.
func TestGraphStatusWrites(t *testing.T) {
	type step struct {
		after time.Duration // the clock moves on by this much
		// each component's status then: "" none yet, "rolling out",
		// "available"; a component left out keeps its status
		components map[string]string
		// the graph's state after a reconcile, and the components its
		// Ready condition says it waits for
		want    v1alpha1.GraphState
		waiting string
	}
	const created = "Frontend (no status yet), Worker (no status yet)"
	for name, tc := range map[string]struct {
		steps  []step
		writes int32
	}{
		"available at once": {writes: 2, steps: []step{
			{after: time.Second, components: map[string]string{"Frontend": "available", "Worker": "available"},
				want: v1alpha1.GraphStateSuccessful}}},
		"components not reporting": {writes: 1, steps: []step{
			{after: 10 * time.Second, want: v1alpha1.GraphStatePending, waiting: created},
			{after: 10 * time.Minute, want: v1alpha1.GraphStatePending, waiting: created}}},
		// Their rollout's progress is written after ten seconds, what it
		// waits for at once.
		"rolling out, one done, then the other": {writes: 4, steps: []step{
			{after: time.Second, components: map[string]string{"Frontend": "rolling out", "Worker": "rolling out"},
				want: v1alpha1.GraphStatePending, waiting: created},
			{after: 10 * time.Second, want: v1alpha1.GraphStatePending,
				waiting: "Frontend (0 of 1 replicas available), Worker (0 of 1 replicas available)"},
			{after: time.Second, components: map[string]string{"Worker": "available"},
				want: v1alpha1.GraphStatePending, waiting: "Frontend (0 of 1 replicas available)"},
			{after: time.Second, components: map[string]string{"Frontend": "available"},
				want: v1alpha1.GraphStateSuccessful}}},
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			ns := env.Namespace(t, "graph-status-writes")
			clock := clocktesting.NewFakeClock(time.Unix(1000, 0))
			dgd := createGraph(t, ctx, ns)
			key := client.ObjectKeyFromObject(dgd)
			c := &countingClient{Client: env.Client}
			r := newGraphReconciler(c, env.Client, clock)

			reconcileOnce(t, ctx, r, key)
			components := map[string]client.ObjectKey{
				"Frontend": {Namespace: ns, Name: render.ComponentName("g", "Frontend")},
				"Worker":   {Namespace: ns, Name: render.ComponentName("g", "Worker")}}
			for _, k := range components {
				component(t, ctx, k) // the reconcile acted: it created them
			}
			wantGraph(t, graph(t, ctx, key), v1alpha1.GraphStatePending, created)
			if n := c.statusWrites.Load(); n != 1 {
				t.Fatalf("the reconcile that created the components wrote %d statuses, want 1", n)
			}

			for _, s := range tc.steps {
				clock.Step(s.after)
				for service, status := range s.components {
					setComponent(t, ctx, components[service], status == "available")
				}
				reconcileOnce(t, ctx, r, key)
				wantGraph(t, graph(t, ctx, key), s.want, s.waiting)
			}
			if n := c.statusWrites.Load(); n != tc.writes {
				t.Fatalf("status writes: got %d, want %d", n, tc.writes)
			}
		})
	}
}

// wantGraph fails unless the graph's status describes its spec, in state,
// and its Ready condition waits for the components waiting names ("" when
// it waits for none).
func wantGraph(t *testing.T, got *v1alpha1.DynamoGraphDeployment, state v1alpha1.GraphState, waiting string) {
	t.Helper()
	if got.Status.State != state || got.Status.ObservedGeneration != got.Generation {
		t.Fatalf("the graph's state is %q for generation %d, want %q for %d: %+v",
			got.Status.State, got.Status.ObservedGeneration, state, got.Generation, got.Status)
	}
	ready := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady)
	if ready == nil {
		t.Fatalf("the graph has no Ready condition: %+v", got.Status)
	}
	if waiting != "" && ready.Message != "waiting for "+waiting {
		t.Fatalf("the graph's Ready message is %q, want %q", ready.Message, "waiting for "+waiting)
	}
}
