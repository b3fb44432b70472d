package steps

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/cucumber/godog"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/dynamoctl/dynamo-operator/operator/render"
)

// Steps about restarts and rolling updates of a whole graph: which of its
// Deployments rolled, in which order, one at a time or not, and the fewest
// ready replicas each reported meanwhile. They read the Deployments'
// status (the Deployment controller's count of ready pods; on envtest, the
// test's driver) by one list and a watch from its resourceVersion, so no
// change falls between two polls, and run alike on envtest and on the
// simulator.

// graphRollouts is what the watch saw of a graph's Deployments.
type graphRollouts struct {
	graph string
	// order names the Deployments in the order their rollouts began.
	order []string
	each  map[string]*deploymentRollout
}

// deploymentRollout is one Deployment's rollout, its begin and end counted
// in events of the watch (so that two rollouts can be told apart without
// comparing clocks).
type deploymentRollout struct {
	desired, minReady int32
	generation        int64 // before the patch
	began, ended      int   // event numbers; 0 while not yet
}

func registerRestartSteps(sc *godog.ScenarioContext, w *world) {
	sc.Step(`^I patch the dgd `+quoted+` with the following, watching its Deployments until each rolled:$`, w.patchWatchingDeployments)
	sc.Step(`^the Deployments rolled one at a time, in the order `+quoted+`$`, unquote1(w.rolledInOrder))
	sc.Step(`^no Deployment had fewer ready replicas than it desires during the rollouts$`, w.neverBelowDesired)
	sc.Step(`^the Deployment `+quoted+` began to roll only after `+quoted+` had rolled out$`, unquote2(w.rolledAfter))
}

// patchWatchingDeployments lists the graph's Deployments, watches them
// from that list's resourceVersion, patches the graph, and follows every
// change until each Deployment rolled: its spec changed, and its status
// shows every desired replica updated, ready and available, and no other.
func (w *world) patchWatchingDeployments(ctx context.Context, graph string, doc *godog.DocString) error {
	graph = unescape(graph)
	cs, err := kubernetes.NewForConfig(w.cluster.Config)
	if err != nil {
		return err
	}
	api := cs.AppsV1().Deployments(w.namespace)
	selector := render.LabelGraphName + "=" + graph
	rec := &graphRollouts{graph: graph, each: map[string]*deploymentRollout{}}
	events := 0
	start := time.Now()
	deployments, err := watchThrough(ctx, listWatch[appsv1.Deployment]{
		what: "Deployments",
		list: func(ctx context.Context) ([]appsv1.Deployment, string, error) {
			list, err := api.List(ctx, metav1.ListOptions{LabelSelector: selector})
			if err != nil {
				return nil, "", err
			}
			return list.Items, list.ResourceVersion, nil
		},
		watch: func(ctx context.Context, rv string) (watch.Interface, error) {
			return api.Watch(ctx, metav1.ListOptions{LabelSelector: selector, ResourceVersion: rv})
		},
	}, 10*time.Minute, func(ds map[string]*appsv1.Deployment) error {
		for name, d := range ds {
			desired := ptr.Deref(d.Spec.Replicas, 1)
			rec.each[name] = &deploymentRollout{desired: desired, minReady: d.Status.ReadyReplicas, generation: d.Generation}
		}
		return w.patchWith(ctx, "dgd", graph, doc)
	}, func(ds map[string]*appsv1.Deployment) bool {
		events++
		return rec.observe(ds, events)
	})
	if err != nil {
		return fmt.Errorf("the rollouts of the dgd %q: %w; Deployments: %s", graph, err, describeDeployments(deployments))
	}
	w.serving.rollouts = rec
	fmt.Printf("    dgd %s: %d Deployments rolled in %.1fs, in the order %s; fewest ready replicas at any moment: %s\n",
		graph, len(rec.each), time.Since(start).Seconds(), strings.Join(rec.order, ", "), rec.fewestReady())
	return nil
}

// observe records the Deployments as they stand after event n; true once
// every one rolled.
func (r *graphRollouts) observe(ds map[string]*appsv1.Deployment, n int) bool {
	done := true
	for name, d := range ds {
		rec, ok := r.each[name]
		if !ok {
			continue // created after the patch: not a rollout
		}
		rec.minReady = min(rec.minReady, d.Status.ReadyReplicas)
		if rec.began == 0 && d.Generation > rec.generation {
			rec.began = n
			r.order = append(r.order, name)
		}
		if rec.began > 0 && rec.ended == 0 && rolledOut(d) {
			rec.ended = n
		}
		done = done && rec.ended > 0
	}
	return done
}

// rolledOut: the Deployment's status describes its spec, every desired
// replica is updated, ready and available, and no other is left.
func rolledOut(d *appsv1.Deployment) bool {
	desired := ptr.Deref(d.Spec.Replicas, 1)
	s := d.Status
	return s.ObservedGeneration >= d.Generation && s.UpdatedReplicas == desired && s.Replicas == desired &&
		s.ReadyReplicas == desired && s.AvailableReplicas == desired
}

func (r *graphRollouts) fewestReady() string {
	names := make([]string, 0, len(r.each))
	for name := range r.each {
		names = append(names, name)
	}
	sort.Strings(names)
	out := make([]string, 0, len(names))
	for _, name := range names {
		out = append(out, fmt.Sprintf("%s %d of %d", name, r.each[name].minReady, r.each[name].desired))
	}
	return strings.Join(out, ", ")
}

func describeDeployments(ds map[string]*appsv1.Deployment) string {
	out := make([]string, 0, len(ds))
	for name, d := range ds {
		out = append(out, fmt.Sprintf("%s (generation %d, observed %d, replicas %d, updated %d, ready %d)", name,
			d.Generation, d.Status.ObservedGeneration, d.Status.Replicas, d.Status.UpdatedReplicas, d.Status.ReadyReplicas))
	}
	sort.Strings(out)
	return fmt.Sprint(out)
}

// rolledInOrder checks that the Deployments named (comma-separated) rolled
// in that order, each beginning only after the one before had ended, and
// that no other Deployment rolled.
func (w *world) rolledInOrder(_ context.Context, names string) error {
	rec := w.serving.rollouts
	if rec == nil {
		return fmt.Errorf("no rollouts were watched")
	}
	var want []string
	for _, n := range strings.Split(names, ",") {
		want = append(want, strings.TrimSpace(n))
	}
	if !slices.Equal(want, rec.order) {
		return fmt.Errorf("the Deployments rolled in the order %v, want %v", rec.order, want)
	}
	for i := 1; i < len(want); i++ {
		prev, next := rec.each[want[i-1]], rec.each[want[i]]
		if next.began <= prev.ended {
			return fmt.Errorf("%s began to roll (event %d) before %s had rolled out (event %d)", want[i], next.began, want[i-1], prev.ended)
		}
	}
	return nil
}

// rolledAfter checks that the Deployment began to roll only after each of
// the others (comma-separated) had rolled out.
func (w *world) rolledAfter(_ context.Context, deployment, others string) error {
	rec := w.serving.rollouts
	if rec == nil {
		return fmt.Errorf("no rollouts were watched")
	}
	d, ok := rec.each[deployment]
	if !ok || d.began == 0 {
		return fmt.Errorf("the Deployment %s did not roll; rolled: %v", deployment, rec.order)
	}
	for _, n := range strings.Split(others, ",") {
		o, ok := rec.each[strings.TrimSpace(n)]
		if !ok || o.ended == 0 {
			return fmt.Errorf("the Deployment %s did not roll; rolled: %v", strings.TrimSpace(n), rec.order)
		}
		if d.began <= o.ended {
			return fmt.Errorf("%s began to roll (event %d) before %s had rolled out (event %d)", deployment, d.began, strings.TrimSpace(n), o.ended)
		}
	}
	return nil
}

// neverBelowDesired checks the fewest ready replicas of each Deployment
// against what it desires.
func (w *world) neverBelowDesired(context.Context) error {
	rec := w.serving.rollouts
	if rec == nil {
		return fmt.Errorf("no rollouts were watched")
	}
	var below []string
	for name, d := range rec.each {
		if d.minReady < d.desired {
			below = append(below, fmt.Sprintf("%s had %d ready of %d", name, d.minReady, d.desired))
		}
	}
	if len(below) > 0 {
		sort.Strings(below)
		return fmt.Errorf("below the desired ready count: %s", strings.Join(below, "; "))
	}
	return nil
}
