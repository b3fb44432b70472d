package controllers

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dynamoctl/dynamo-operator/internal/builders"
)

// The hold of a component's first report runs from the first look at its
// generation: looks at the same generation keep it, a new generation or a
// report starts it afresh.
func TestFirstReportsLookFromTheFirstLookAtAGeneration(t *testing.T) {
	var f firstReports
	key := types.NamespacedName{Namespace: "ns", Name: "g-worker"}
	t0 := time.Unix(1000, 0)
	for _, step := range []struct {
		at         time.Duration
		generation int64
		want       time.Duration // the first look, from t0
	}{
		{at: 0, generation: 1, want: 0},
		{at: 2 * time.Second, generation: 1, want: 0},
		{at: time.Minute, generation: 1, want: 0},
		{at: 2 * time.Minute, generation: 2, want: 2 * time.Minute},
		{at: 3 * time.Minute, generation: 2, want: 2 * time.Minute},
	} {
		if got := f.firstLook(key, step.generation, t0.Add(step.at)); !got.Equal(t0.Add(step.want)) {
			t.Errorf("at %s, generation %d: first look %s, want %s", step.at, step.generation, got.Sub(t0), step.want)
		}
	}
	f.reported(key)
	if got := f.firstLook(key, 2, t0.Add(4*time.Minute)); !got.Equal(t0.Add(4 * time.Minute)) {
		t.Errorf("after a report the next look starts afresh: %s", got.Sub(t0))
	}
}

// rolloutStarted: the latest start among pods not yet Ready, and the
// soonest they can be: not before their readiness probe's initial delay has
// passed since their container started. Pods that are ready or terminating
// tell nothing; without a started pod the rollout has not started.
func TestRolloutStarted(t *testing.T) {
	t0 := time.Unix(1000, 0)
	withDelay := func(seconds ...int32) *appsv1.Deployment {
		d := &appsv1.Deployment{}
		for _, s := range seconds {
			d.Spec.Template.Spec.Containers = append(d.Spec.Template.Spec.Containers,
				corev1.Container{ReadinessProbe: &corev1.Probe{InitialDelaySeconds: s}})
		}
		d.Spec.Template.Spec.Containers = append(d.Spec.Template.Spec.Containers, corev1.Container{Name: "no probe"})
		return d
	}
	started := func(name string, at time.Duration) corev1.Pod {
		return *builders.MakePod(name, "ns").Started(t0.Add(at)).Obj()
	}
	for name, tc := range map[string]struct {
		deploy                 *appsv1.Deployment
		pods                   []corev1.Pod
		started, notOverBefore time.Time
	}{
		"no readiness delay": {withDelay(0), []corev1.Pod{started("a", 0)}, t0, time.Time{}},
		"no probe":           {withDelay(), []corev1.Pod{started("a", 0)}, t0, time.Time{}},
		"no pod started":     {withDelay(10), []corev1.Pod{*builders.MakePod("a", "ns").Obj()}, time.Time{}, time.Time{}},
		"no pod":             {withDelay(10), nil, time.Time{}, time.Time{}},
		"the latest start, the longest delay": {withDelay(10, 15),
			[]corev1.Pod{started("a", time.Second), started("b", 3*time.Second)}, t0.Add(3 * time.Second), t0.Add(18 * time.Second)},
		"ready and terminating pods tell nothing": {withDelay(10),
			[]corev1.Pod{started("a", time.Second), *builders.MakePod("b", "ns").Started(t0.Add(time.Minute)).Ready().Obj(),
				*builders.MakePod("c", "ns").Started(t0.Add(time.Minute)).Terminating().Obj()}, t0.Add(time.Second), t0.Add(11 * time.Second)},
		"only a ready pod: not started": {withDelay(10),
			[]corev1.Pod{*builders.MakePod("b", "ns").Started(t0).Ready().Obj()}, time.Time{}, time.Time{}},
	} {
		t.Run(name, func(t *testing.T) {
			started, notOverBefore := rolloutStarted(tc.deploy, tc.pods)
			if !started.Equal(tc.started) || !notOverBefore.Equal(tc.notOverBefore) {
				t.Errorf("rolloutStarted = %v, %v; want %v, %v", started, notOverBefore, tc.started, tc.notOverBefore)
			}
		})
	}
}

// holdStep is a look at a component at, with its pods started and its
// rollout not over before the given offsets from the first look (-1: zero,
// none started, unknown), and the hold wanted.
type holdStep struct {
	at, started, notOverBefore time.Duration
	want                       time.Duration
}

// The hold of a rollout whose pods have not started lasts up to
// unstartedReportLimit from the first look; once a pod started, it reaches
// firstReportDelay past the later of the first look and the start, and past
// the moment the rollout can be over, never beyond firstReportLimit from
// that moment.
func TestFirstReportsHoldPastTheSoonestReady(t *testing.T) {
	t0 := time.Unix(1000, 0)
	for name, tc := range map[string]struct {
		specChange bool // on a component reported on before, not fresh
		steps      []holdStep
	}{
		"pods not started": {false, []holdStep{
			{at: 0, started: -1, notOverBefore: -1, want: unstartedReportLimit},
			{at: 90 * time.Second, started: -1, notOverBefore: -1, want: unstartedReportLimit - 90*time.Second},
			{at: unstartedReportLimit, started: -1, notOverBefore: -1, want: 0},
		}},
		"started at once": {false, []holdStep{
			{at: 0, started: 0, notOverBefore: -1, want: firstReportDelay},
			{at: 4 * time.Second, started: 0, notOverBefore: 14 * time.Second, want: 15 * time.Second},
			{at: 10 * time.Second, started: 0, notOverBefore: 14 * time.Second, want: 9 * time.Second},
			// Unknown again: the plain hold, long over.
			{at: 10 * time.Second, started: 0, notOverBefore: -1, want: 0},
			{at: 20 * time.Second, started: 0, notOverBefore: time.Minute, want: firstReportLimit - 20*time.Second},
			{at: firstReportLimit, started: 0, notOverBefore: time.Minute, want: 0},
		}},
		"a spec change: no wait for the cluster": {true, []holdStep{
			{at: 0, started: -1, notOverBefore: -1, want: firstReportDelay},
			{at: 4 * time.Second, started: time.Second, notOverBefore: 14 * time.Second, want: 15 * time.Second},
			{at: 20 * time.Second, started: time.Second, notOverBefore: time.Minute, want: firstReportLimit - 20*time.Second},
			{at: firstReportLimit, started: -1, notOverBefore: -1, want: 0},
		}},
		"started after a wait for the cluster": {false, []holdStep{
			{at: 0, started: -1, notOverBefore: -1, want: unstartedReportLimit},
			// The wait before the start does not count.
			{at: 62 * time.Second, started: time.Minute, notOverBefore: -1, want: 3 * time.Second},
			{at: 62 * time.Second, started: time.Minute, notOverBefore: 70 * time.Second, want: 13 * time.Second},
			{at: 62 * time.Second, started: time.Minute, notOverBefore: 5 * time.Minute, want: 28 * time.Second},
			// A start past the limit is held all the same.
			{at: 3 * time.Minute, started: 3 * time.Minute, notOverBefore: -1, want: firstReportDelay},
		}},
	} {
		t.Run(name, func(t *testing.T) {
			var f firstReports
			key := types.NamespacedName{Namespace: "ns", Name: "c"}
			at := func(d time.Duration) time.Time {
				if d < 0 {
					return time.Time{}
				}
				return t0.Add(d)
			}
			for _, step := range tc.steps {
				if got := f.holdPast(key, 1, t0.Add(step.at), at(step.started), at(step.notOverBefore), !tc.specChange); got != step.want {
					t.Errorf("at %s, started %s, not over before %s: hold %s, want %s", step.at, step.started, step.notOverBefore, got, step.want)
				}
			}
		})
	}
}

// Past its own hold, a rollout under way (its pods not started, or started
// and not Ready) is held while another rollout ended within queuedProgress
// (the cluster works through a backlog of ours), looked at again every
// queuedProgress, up to backlogReportCap from the first look; as soon as
// nothing ended for queuedProgress, it is reported.
func TestFirstReportsHoldBehindABacklog(t *testing.T) {
	t0 := time.Unix(1000, 0)
	for name, tc := range map[string]struct {
		started time.Duration // -1: none
		own     time.Duration // its own hold, from the first look
	}{
		"pods not started":      {-1, unstartedReportLimit},
		"a pod started at once": {0, firstReportDelay},
	} {
		t.Run(name, func(t *testing.T) {
			var f firstReports
			key := types.NamespacedName{Namespace: "ns", Name: "c"}
			var started time.Time
			if tc.started >= 0 {
				started = t0.Add(tc.started)
			}
			hold := func(at time.Duration) time.Duration {
				return f.holdPast(key, 1, t0.Add(at), started, time.Time{}, true)
			}
			if got := hold(0); got != tc.own {
				t.Fatalf("first look: hold %s, want %s", got, tc.own)
			}
			if got := hold(tc.own); got != 0 {
				t.Fatalf("at the end of its own hold, nothing ended: hold %s, want 0", got)
			}
			f.rolloutOver(t0.Add(tc.own - 10*time.Second))
			if got := hold(tc.own); got != queuedProgress {
				t.Errorf("at the end of its own hold, a rollout ended 10 s ago: hold %s, want %s", got, queuedProgress)
			}
			// An earlier end does not move the latest back.
			f.rolloutOver(t0.Add(-time.Hour))
			if got := hold(tc.own + queuedProgress - 11*time.Second); got != queuedProgress {
				t.Errorf("a rollout ended 29 s ago: hold %s, want %s", got, queuedProgress)
			}
			if got := hold(tc.own + queuedProgress - 10*time.Second); got != 0 {
				t.Errorf("nothing ended for %s: hold %s, want 0", queuedProgress, got)
			}
			f.rolloutOver(t0.Add(backlogReportCap - 5*time.Second))
			if got := hold(backlogReportCap - 5*time.Second); got != 5*time.Second {
				t.Errorf("5 s before the cap: hold %s, want 5s", got)
			}
			if got := hold(backlogReportCap); got != 0 {
				t.Errorf("at the cap: hold %s, want 0", got)
			}
			// A spec change on a component reported on before is not held
			// behind the backlog.
			if got := f.holdPast(key, 1, t0.Add(tc.own+time.Second), started, time.Time{}, false); got != 0 {
				t.Errorf("a spec change behind a backlog: hold %s, want 0", got)
			}
		})
	}
}
