package steps

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/cucumber/godog"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Steps about serving capacity during a rollout and the simulator's
// faults that block one. The capacity is measured from the pods' Ready
// conditions, as Services and load balancers see them, by one list and a
// watch from its resourceVersion: every change of every pod is seen, none
// falls between two polls.

// Fault is a simulator fault a step injects (dynamo-sim fault KIND).
type Fault struct {
	Kind string
	// Pod is namespace/name (crash-loop); Image the image (image-pull-*);
	// Node the node (node-loss).
	Pod, Image, Node string
}

// serving is a scenario's state of these steps.
type serving struct {
	// failingImages are undone when the scenario ends: the simulator
	// outlives it.
	failingImages []string
	rollout       *rolloutRecord
	// rollouts are the rollouts of a graph's Deployments (restart.go).
	rollouts *graphRollouts
}

// rolloutRecord is what the watch saw during one rollout.
type rolloutRecord struct {
	deployment        string
	desired, minReady int
	took              time.Duration
}

func registerRolloutSteps(sc *godog.ScenarioContext, w *world) {
	sc.Step(`^I patch the dgd `+quoted+` with the following, watching the ready pods of the Deployment `+quoted+` until its rollout is done:$`, w.patchWatchingReadyPods)
	sc.Step(`^the Deployment `+quoted+` never had fewer than (\d+) ready pods during the rollout$`, unquote1n(w.neverFewerReady))
	sc.Step(`^pulls of the image `+quoted+` fail$`, unquote1(w.imagePullsFail))
	sc.Step(`^a pod of the Deployment `+quoted+` crash-loops$`, unquote1(w.podCrashLoops))
	sc.Step(`^the Deployment `+quoted+` is given a progress deadline of (\d+) seconds$`, unquote1n(w.progressDeadline))
}

func unquote1n(f func(context.Context, string, int) error) func(context.Context, string, int) error {
	return func(ctx context.Context, a string, n int) error { return f(ctx, unescape(a), n) }
}

// patchWatchingReadyPods lists the Deployment's pods, watches them from
// that list's resourceVersion, patches the graph, and follows every pod
// event until the rollout is done: exactly the desired number of pods, all
// Ready, none of a template from before the patch. It records the fewest
// Ready pods seen at any moment, and how long the rollout took.
func (w *world) patchWatchingReadyPods(ctx context.Context, graph, deployment string, doc *godog.DocString) error {
	graph, deployment = unescape(graph), unescape(deployment)
	d := &appsv1.Deployment{}
	if err := w.cluster.Client.Get(ctx, types.NamespacedName{Namespace: w.namespace, Name: deployment}, d); err != nil {
		return err
	}
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return err
	}
	desired := 1
	if d.Spec.Replicas != nil {
		desired = int(*d.Spec.Replicas)
	}
	before := map[string]bool{} // pod-template-hash of the pods before the patch
	rec := &rolloutRecord{deployment: deployment, desired: desired}
	var start time.Time
	pods, err := w.watchPodsThrough(ctx, sel.String(), 5*time.Minute, func(pods map[string]*corev1.Pod) error {
		for _, p := range pods {
			before[p.Labels[appsv1.DefaultDeploymentUniqueLabelKey]] = true
		}
		rec.minReady = readyPods(pods)
		start = time.Now()
		return w.patchWith(ctx, "dgd", graph, doc)
	}, func(pods map[string]*corev1.Pod) bool {
		rec.minReady = min(rec.minReady, readyPods(pods))
		return rolloutDone(pods, before, desired)
	})
	if err != nil {
		return fmt.Errorf("the rollout of the Deployment %q: %w; pods: %s", deployment, err, describePods(pods))
	}
	rec.took = time.Since(start)
	w.serving.rollout = rec
	fmt.Printf("    Deployment %s: rollout of %d pods done in %.1fs; fewest ready pods at any moment: %d\n",
		deployment, desired, rec.took.Seconds(), rec.minReady)
	return nil
}

// watchPodsThrough lists the pods selector selects, watches them from that
// list's resourceVersion, calls begin with the listed pods (the change to
// watch, a patch), then observe with the pods as they stand after every
// event, until observe reports done or timeout passes. Every change of
// every pod is seen: none falls between two polls. It returns the pods as
// last seen.
func (w *world) watchPodsThrough(ctx context.Context, selector string, timeout time.Duration,
	begin func(pods map[string]*corev1.Pod) error, observe func(pods map[string]*corev1.Pod) (done bool)) (map[string]*corev1.Pod, error) {
	cs, err := kubernetes.NewForConfig(w.cluster.Config)
	if err != nil {
		return nil, err
	}
	podsAPI := cs.CoreV1().Pods(w.namespace)
	return watchThrough(ctx, listWatch[corev1.Pod]{
		what: "pods",
		list: func(ctx context.Context) ([]corev1.Pod, string, error) {
			list, err := podsAPI.List(ctx, metav1.ListOptions{LabelSelector: selector})
			if err != nil {
				return nil, "", err
			}
			return list.Items, list.ResourceVersion, nil
		},
		watch: func(ctx context.Context, rv string) (watch.Interface, error) {
			return podsAPI.Watch(ctx, metav1.ListOptions{LabelSelector: selector, ResourceVersion: rv})
		},
	}, timeout, begin, observe)
}

// listWatch lists and watches objects of one kind.
type listWatch[T any] struct {
	what  string
	list  func(ctx context.Context) (items []T, resourceVersion string, err error)
	watch func(ctx context.Context, resourceVersion string) (watch.Interface, error)
}

// watchThrough lists the objects, watches them from that list's
// resourceVersion, calls begin with the listed objects, then observe with
// the objects as they stand after every event, by name, until observe
// reports done or timeout passes. It returns the objects as last seen.
func watchThrough[T any, PT interface {
	*T
	client.Object
}](ctx context.Context, lw listWatch[T], timeout time.Duration,
	begin func(map[string]PT) error, observe func(map[string]PT) (done bool)) (map[string]PT, error) {
	items, rv, err := lw.list(ctx)
	if err != nil {
		return nil, err
	}
	objs := map[string]PT{}
	for i := range items {
		o := PT(&items[i])
		objs[o.GetName()] = o
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	watcher, err := lw.watch(wctx, rv)
	if err != nil {
		return objs, err
	}
	defer watcher.Stop()
	if err := begin(objs); err != nil {
		return objs, err
	}
	deadline := time.After(timeout)
	for {
		select {
		case <-deadline:
			return objs, fmt.Errorf("not done within %s", timeout)
		case ev, ok := <-watcher.ResultChan():
			if !ok {
				return objs, fmt.Errorf("the watch of the %s ended before it was done", lw.what)
			}
			switch ev.Type {
			case watch.Error:
				return objs, fmt.Errorf("the watch of the %s failed: %v", lw.what, ev.Object)
			case watch.Deleted:
				if o, ok := ev.Object.(PT); ok {
					delete(objs, o.GetName())
				}
			case watch.Added, watch.Modified:
				if o, ok := ev.Object.(PT); ok {
					objs[o.GetName()] = o
				}
			}
			if observe(objs) {
				return objs, nil
			}
		}
	}
}

func readyPods(pods map[string]*corev1.Pod) int {
	n := 0
	for _, p := range pods {
		if podReady(p) {
			n++
		}
	}
	return n
}

func rolloutDone(pods map[string]*corev1.Pod, before map[string]bool, desired int) bool {
	if len(pods) != desired {
		return false
	}
	for _, p := range pods {
		if before[p.Labels[appsv1.DefaultDeploymentUniqueLabelKey]] || !podReady(p) {
			return false
		}
	}
	return true
}

func describePods(pods map[string]*corev1.Pod) string {
	return describeEach(pods, func(p *corev1.Pod) string {
		return fmt.Sprintf("%s (template %s, ready %t)", p.Name, p.Labels[appsv1.DefaultDeploymentUniqueLabelKey], podReady(p))
	})
}

// describeEach lists the pods, each as describe says, in name order.
func describeEach(pods map[string]*corev1.Pod, describe func(*corev1.Pod) string) string {
	out := make([]string, 0, len(pods))
	for _, p := range pods {
		out = append(out, describe(p))
	}
	sort.Strings(out)
	return fmt.Sprint(out)
}

func (w *world) neverFewerReady(_ context.Context, deployment string, n int) error {
	r := w.serving.rollout
	if r == nil || r.deployment != deployment {
		return fmt.Errorf("no rollout of the Deployment %q was watched", deployment)
	}
	if r.minReady < n {
		return fmt.Errorf("the Deployment %q had only %d ready pods at one moment of its rollout, want at least %d", deployment, r.minReady, n)
	}
	return nil
}

func (w *world) fault(ctx context.Context, f Fault) error {
	if w.cluster.Fault == nil {
		return errors.New("this cluster is no simulator: it cannot inject " + f.Kind)
	}
	_, err := w.cluster.Fault(ctx, f)
	return err
}

// imagePullsFail makes the simulator's kubelet fail every pull of image
// until the scenario ends.
func (w *world) imagePullsFail(ctx context.Context, image string) error {
	if err := w.fault(ctx, Fault{Kind: "image-pull-failure", Image: image}); err != nil {
		return err
	}
	w.serving.failingImages = append(w.serving.failingImages, image)
	return nil
}

// undoFaults restores what this scenario's faults changed in the
// simulator, which outlives the scenario.
func (w *world) undoFaults() error {
	var errs []error
	for _, image := range w.serving.failingImages {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		errs = append(errs, w.fault(ctx, Fault{Kind: "image-pull-restore", Image: image}))
		cancel()
	}
	w.serving.failingImages = nil
	return errors.Join(errs...)
}

// podCrashLoops crash-loops the first (by name) Running pod of the
// Deployment.
func (w *world) podCrashLoops(ctx context.Context, deployment string) error {
	d := &appsv1.Deployment{}
	if err := w.cluster.Client.Get(ctx, types.NamespacedName{Namespace: w.namespace, Name: deployment}, d); err != nil {
		return err
	}
	pods := &corev1.PodList{}
	if err := w.cluster.Client.List(ctx, pods, client.InNamespace(w.namespace), client.MatchingLabels(d.Spec.Selector.MatchLabels)); err != nil {
		return err
	}
	var names []string
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			names = append(names, p.Name)
		}
	}
	if len(names) == 0 {
		return fmt.Errorf("the Deployment %q has no Running pod", deployment)
	}
	sort.Strings(names)
	return w.fault(ctx, Fault{Kind: "crash-loop", Pod: w.namespace + "/" + names[0]})
}

// progressDeadline sets the Deployment's progressDeadlineSeconds as a user
// would with kubectl patch: the operator leaves the field to the user where
// it renders none (components without a startup probe).
func (w *world) progressDeadline(ctx context.Context, deployment string, seconds int) error {
	d := &appsv1.Deployment{}
	if err := w.cluster.Client.Get(ctx, types.NamespacedName{Namespace: w.namespace, Name: deployment}, d); err != nil {
		return err
	}
	patch := fmt.Sprintf(`{"spec":{"progressDeadlineSeconds":%d}}`, seconds)
	return w.cluster.Client.Patch(ctx, d, client.RawPatch(types.MergePatchType, []byte(patch)))
}
