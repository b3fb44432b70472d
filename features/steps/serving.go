package steps

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/cucumber/godog"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/internal/await"
	"github.com/dynamoctl/dynamo-operator/internal/builders"
)

// Steps about serving: what blocks a rollout, how kstatus-based tools read
// a component, scaling that holds.
//
// envtest runs no scheduler and no kubelet: the steps that say what they
// reported create a pod with that status, matching the Deployment's
// selector, which the test Deployment driver counts as not ready. Scenarios
// using them are @envtest-only; on the simulator the real scheduler and
// the simulated kubelets report.

func registerServingSteps(sc *godog.ScenarioContext, w *world) {
	sc.Step(`^the scheduler cannot place pod `+quoted+` of the Deployment `+quoted+`: `+anything+`$`, unquote3(w.podUnschedulable))
	sc.Step(`^the kubelet holds pod `+quoted+` of the Deployment `+quoted+` in (\w+): `+anything+`$`, w.podWaiting)
	sc.Step(`^pod `+quoted+` of the Deployment `+quoted+` is crash-looping after (\d+) restarts$`, w.podCrashLooping)
	sc.Step(`^the Deployment `+quoted+` exceeds its progress deadline$`, unquote1(w.deadlineExceeded))
	sc.Step(`^pod `+quoted+` is deleted$`, unquote1(w.deletePod))
	sc.Step(`^the (\S+) `+quoted+` eventually has `+anything+` containing `+anything+`$`, unquote4(w.fieldEventuallyContains))
	sc.Step(`^kstatus reads the (\S+) `+quoted+` as (\w+)$`, w.kstatusReads)
	sc.Step(`^kstatus reads the (\S+) `+quoted+` as InProgress until it is Ready, then as Current$`, unquote2(w.kstatusInProgressUntilReady))
	sc.Step(`^the (\S+) `+quoted+` keeps (\d+) replicas while I patch the (\S+) `+quoted+` with:$`, w.keepsReplicasWhilePatching)
	sc.Step(`^the dgd `+quoted+` becomes Ready no sooner than (\d+) seconds after it was applied$`, w.readyNoSooner)
}

func unquote3(f func(context.Context, string, string, string) error) func(context.Context, string, string, string) error {
	return func(ctx context.Context, a, b, c string) error { return f(ctx, unescape(a), unescape(b), unescape(c)) }
}

// createPod creates pod with the Deployment's selector labels, then writes
// its status as the scheduler or kubelet would.
func (w *world) createPod(ctx context.Context, deployment string, pod *builders.PodWrapper) error {
	d := &appsv1.Deployment{}
	if err := w.cluster.Client.Get(ctx, types.NamespacedName{Namespace: w.namespace, Name: deployment}, d); err != nil {
		return err
	}
	if d.Spec.Selector == nil {
		return fmt.Errorf("the Deployment %q has no selector", deployment)
	}
	p := pod.Labels(d.Spec.Selector.MatchLabels).Obj()
	p.Namespace = w.namespace
	st := p.Status
	p.Spec.AutomountServiceAccountToken = new(bool)
	if err := w.cluster.Client.Create(ctx, p); err != nil {
		return fmt.Errorf("creating pod %s: %w", p.Name, err)
	}
	p.Status = st
	return w.cluster.Client.Status().Update(ctx, p)
}

func (w *world) podUnschedulable(ctx context.Context, pod, deployment, message string) error {
	return w.createPod(ctx, deployment, builders.MakePod(pod, w.namespace).Unschedulable(message))
}

func (w *world) podWaiting(ctx context.Context, pod, deployment, reason, message string) error {
	return w.createPod(ctx, unescape(deployment), builders.MakePod(unescape(pod), w.namespace).Waiting(reason, unescape(message)))
}

func (w *world) podCrashLooping(ctx context.Context, pod, deployment string, restarts int) error {
	return w.createPod(ctx, unescape(deployment), builders.MakePod(unescape(pod), w.namespace).CrashLooping(int32(restarts), 1))
}

func (w *world) deletePod(ctx context.Context, pod string) error {
	p := builders.MakePod(pod, w.namespace).Obj()
	return w.cluster.Client.Delete(ctx, p, client.GracePeriodSeconds(0))
}

// deadlineExceeded writes the condition the Deployment controller writes
// when a rollout passes progressDeadlineSeconds.
func (w *world) deadlineExceeded(ctx context.Context, deployment string) error {
	d := &appsv1.Deployment{}
	if err := w.cluster.Client.Get(ctx, types.NamespacedName{Namespace: w.namespace, Name: deployment}, d); err != nil {
		return err
	}
	before := d.DeepCopy()
	d.Status.Conditions = builders.DeploymentConditions{}.DeadlineExceeded(deployment + "-5f7c9")
	return w.cluster.Client.Status().Patch(ctx, d, client.MergeFrom(before))
}

// kstatusReads computes the object's status as Flux, Argo CD and kpt do,
// with kstatus, from the object as the API server returns it.
func (w *world) kstatusReads(ctx context.Context, kind, name, want string) error {
	return w.eventually(ctx, kind+" "+name+" read by kstatus as "+want, func() error {
		obj, err := w.object(kind, name)
		if err != nil {
			return err
		}
		if err := w.cluster.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		res, err := status.Compute(obj)
		if err != nil {
			return err
		}
		if res.Status.String() != want {
			return fmt.Errorf("kstatus reads %s %q as %s (%s), want %s", kind, name, res.Status, res.Message, want)
		}
		return nil
	})
}

// kstatusInProgressUntilReady reads the object every 100 ms from now until
// its Ready condition is True, and computes its status with kstatus each
// time, as Flux and kpt do: it must be InProgress at every read before
// Ready, then Current. An object that was Ready at the first read proves
// nothing and fails the step. A Ready object kstatus reads otherwise is
// looked at again until the scenario's timeout.
func (w *world) kstatusInProgressUntilReady(ctx context.Context, kind, name string) error {
	obj, err := w.object(kind, name)
	if err != nil {
		return err
	}
	var early error
	notReady := 0
	err = w.eventually(ctx, kind+" "+name+" Ready and read by kstatus as Current", func() error {
		if err := w.cluster.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		res, err := status.Compute(obj)
		if err != nil {
			return err
		}
		c := condition(obj, "Ready")
		switch ready := c != nil && c.Status == metav1.ConditionTrue; {
		case !ready && res.Status != status.InProgressStatus:
			st, _, _ := unstructured.NestedFieldNoCopy(obj.Object, "status")
			early = fmt.Errorf("kstatus read %s %q as %s (%s) before it was Ready; generation %d, status %v",
				kind, name, res.Status, res.Message, obj.GetGeneration(), st)
			return nil
		case !ready:
			notReady++
			return fmt.Errorf("%s %q is not Ready yet", kind, name)
		case notReady == 0:
			early = fmt.Errorf("%s %q was Ready at the first read: the step saw no time before Ready", kind, name)
			return nil
		case res.Status != status.CurrentStatus:
			return fmt.Errorf("%s %q is Ready, but kstatus reads it as %s (%s)", kind, name, res.Status, res.Message)
		}
		return nil
	}, await.Every(100*time.Millisecond)) // the step samples every 100 ms, not await.Poll
	if early != nil {
		return early
	}
	if err == nil {
		fmt.Printf("    kstatus read %s %s as InProgress %d times before it was Ready\n", kind, name, notReady)
	}
	return err
}

// keepsReplicasWhilePatching watches the object's spec.replicas from now
// on, applies the patch to the graph, waits until the operator has
// demonstrably written the watched object for the graph's change (its
// generation moved and its controller observed it), and fails if the
// replicas ever differed from n meanwhile, or the workload's did.
func (w *world) keepsReplicasWhilePatching(ctx context.Context, kind, name string, n int, graphKind, graph string, doc *godog.DocString) error {
	kind, name, graphKind, graph = unescape(kind), unescape(name), unescape(graphKind), unescape(graph)
	obj, err := w.object(kind, name)
	if err != nil {
		return err
	}
	if err := w.cluster.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		return err
	}
	startGen := obj.GetGeneration()
	wc, err := client.NewWithWatch(w.cluster.Config, client.Options{Scheme: w.cluster.Client.Scheme(), Mapper: w.cluster.Client.RESTMapper()})
	if err != nil {
		return err
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(obj.GroupVersionKind().GroupVersion().WithKind(obj.GetKind() + "List"))
	watchCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	watcher, err := wc.Watch(watchCtx, list, client.InNamespace(w.namespace),
		client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("metadata.name", name)})
	if err != nil {
		return err
	}
	defer watcher.Stop()
	if err := w.patchWith(ctx, graphKind, graph, doc); err != nil {
		return err
	}
	want := strconv.Itoa(n)
	seen := 0
	deadline := time.After(w.timeout())
	for {
		select {
		case <-deadline:
			return fmt.Errorf("the operator did not write %s %q for the graph's change within %s (%d updates seen)", kind, name, w.timeout(), seen)
		case ev, ok := <-watcher.ResultChan():
			if !ok {
				return fmt.Errorf("the watch of %s %q ended", kind, name)
			}
			u, isObj := ev.Object.(*unstructured.Unstructured)
			if !isObj {
				continue
			}
			seen++
			got, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
			if strconv.FormatInt(got, 10) != want {
				return fmt.Errorf("%s %q had spec.replicas %d at resourceVersion %s: the scaled value was reverted", kind, name, got, u.GetResourceVersion())
			}
			observed, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
			if u.GetGeneration() > startGen && observed == u.GetGeneration() {
				// The operator wrote the object for the change and its
				// controller acted on it; the workload follows the object.
				return w.fieldEquals(ctx, "Deployment", name, ".spec.replicas", want)
			}
		}
	}
}

func (w *world) fieldEventuallyContains(ctx context.Context, kind, name, path, want string) error {
	return w.eventually(ctx, kind+" "+name+" with "+path+" containing "+want, func() error { return w.fieldContains(ctx, kind, name, path, want) })
}

func (w *world) timeout() time.Duration {
	if w.cluster.EventualTimeout == 0 {
		return 30 * time.Second
	}
	return w.cluster.EventualTimeout
}

// readyNoSooner waits for the graph's Ready condition and checks how long
// after the last apply step it turned True.
func (w *world) readyNoSooner(ctx context.Context, graph string, seconds int) error {
	graph = unescape(graph)
	var took time.Duration
	err := w.eventually(ctx, "the dgd "+graph+" Ready", func() error {
		if err := w.fieldEquals(ctx, "dgd", graph, `.status.conditions[?(@.type=="Ready")].status`, "True"); err != nil {
			return err
		}
		took = time.Since(w.appliedAt)
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Printf("    graph %s Ready %.1fs after it was applied\n", graph, took.Seconds())
	if took < time.Duration(seconds)*time.Second {
		return fmt.Errorf("the graph was Ready %s after it was applied, before its models could load (%d s)", took, seconds)
	}
	return nil
}
