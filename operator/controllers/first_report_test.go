package controllers

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dynamoctl/dynamo-operator/internal/builders"
)

func TestFirstReportsHoldFromTheFirstLookAtAGeneration(t *testing.T) {
	var f firstReports
	key := types.NamespacedName{Namespace: "ns", Name: "g"}
	t0 := time.Unix(1000, 0)
	for _, step := range []struct {
		at         time.Duration
		generation int64
		limit      time.Duration // 0: hold's own
		want       time.Duration
	}{
		{at: 0, generation: 1, want: firstReportDelay},
		{at: 2 * time.Second, generation: 1, want: firstReportDelay - 2*time.Second},
		{at: 5 * time.Second, generation: 1, want: 0},
		// Waiting for components extends the hold up to the limit, from the
		// same first look.
		{at: 5 * time.Second, generation: 1, limit: firstReportLimit, want: firstReportLimit - 5*time.Second},
		{at: firstReportLimit, generation: 1, limit: firstReportLimit, want: 0},
		{at: firstReportLimit, generation: 1, limit: queuedReportLimit, want: queuedReportLimit - firstReportLimit},
		// A new spec starts a new hold.
		{at: queuedReportLimit + time.Second, generation: 2, want: firstReportDelay},
	} {
		var got time.Duration
		if step.limit == 0 {
			got = f.hold(key, step.generation, t0.Add(step.at))
		} else {
			got = f.holdUpTo(key, step.generation, t0.Add(step.at), step.limit)
		}
		if got != step.want {
			t.Errorf("at %s, generation %d, limit %s: hold %s, want %s", step.at, step.generation, step.limit, got, step.want)
		}
	}
	f.reported(key)
	if got := f.hold(key, 2, t0.Add(queuedReportLimit+10*time.Second)); got != firstReportDelay {
		t.Errorf("after a report the next hold starts afresh: %s, want %s", got, firstReportDelay)
	}
}

func TestFailingComponents(t *testing.T) {
	var nothing *Failing
	key := types.NamespacedName{Namespace: "ns", Name: "g-worker"}
	if !nothing.failing(key) {
		t.Error("without a record every component counts as failing")
	}
	f := &Failing{}
	if f.failing(key) {
		t.Error("a component never reconciled counts as failing")
	}
	t0 := time.Unix(1000, 0)
	f.set(key, true, t0)
	if !f.failing(key) {
		t.Error("a component whose reconcile failed does not count as failing")
	}
	if f.progressing(t0) {
		t.Error("a failed reconcile counts as the component controller's progress")
	}
	f.set(key, false, t0)
	if f.failing(key) {
		t.Error("a component whose latest reconcile succeeded still counts as failing")
	}
}

func TestComponentControllerProgress(t *testing.T) {
	var nothing *Failing
	t0 := time.Unix(1000, 0)
	if nothing.progressing(t0) {
		t.Error("without a record the component controller counts as progressing")
	}
	f := &Failing{}
	if f.progressing(t0) {
		t.Error("a component controller that never finished a reconcile counts as progressing")
	}
	key := types.NamespacedName{Namespace: "ns", Name: "g-worker"}
	f.set(key, false, t0)
	for _, step := range []struct {
		at   time.Duration
		want bool
	}{
		{0, true},
		{queuedProgress - time.Second, true},
		{queuedProgress, false},
	} {
		if got := f.progressing(t0.Add(step.at)); got != step.want {
			t.Errorf("%s after its last reconcile: progressing %t, want %t", step.at, got, step.want)
		}
	}
	// A reconcile that finished earlier than the latest (another worker's,
	// timed before) does not move the progress back.
	f.set(key, false, t0.Add(-time.Minute))
	if !f.progressing(t0.Add(queuedProgress - time.Second)) {
		t.Error("an earlier reconcile moved the progress back")
	}
}

// A pod cannot be Ready before its readiness probe's initial delay has
// passed since its container started; pods that are ready, terminating or
// not started tell nothing.
func TestRolloutNotOverBefore(t *testing.T) {
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
	for _, tc := range []struct {
		name   string
		deploy *appsv1.Deployment
		pods   []corev1.Pod
		want   time.Time
	}{
		{"no readiness delay", withDelay(0), []corev1.Pod{started("a", 0)}, time.Time{}},
		{"no probe", withDelay(), []corev1.Pod{started("a", 0)}, time.Time{}},
		{"no pod started", withDelay(10), []corev1.Pod{*builders.MakePod("a", "ns").Obj()}, time.Time{}},
		{"the latest start, the longest delay", withDelay(10, 15),
			[]corev1.Pod{started("a", time.Second), started("b", 3*time.Second)}, t0.Add(18 * time.Second)},
		{"ready and terminating pods tell nothing", withDelay(10),
			[]corev1.Pod{started("a", time.Second), *builders.MakePod("b", "ns").Started(t0.Add(time.Minute)).Ready().Obj(),
				*builders.MakePod("c", "ns").Started(t0.Add(time.Minute)).Terminating().Obj()}, t0.Add(11 * time.Second)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := rolloutNotOverBefore(tc.deploy, tc.pods); !got.Equal(tc.want) {
				t.Errorf("rolloutNotOverBefore = %v, want %v", got, tc.want)
			}
		})
	}
}

// The hold reaches firstReportDelay past the moment the rollout can be
// over, and never beyond firstReportLimit from the first look.
func TestFirstReportsHoldPastTheSoonestReady(t *testing.T) {
	var f firstReports
	key := types.NamespacedName{Namespace: "ns", Name: "c"}
	t0 := time.Unix(1000, 0)
	for _, step := range []struct {
		at, notOverBefore time.Duration // notOverBefore 0: unknown
		want              time.Duration
	}{
		{at: 0, want: firstReportDelay},
		{at: 4 * time.Second, notOverBefore: 14 * time.Second, want: 15 * time.Second},
		{at: 10 * time.Second, notOverBefore: 14 * time.Second, want: 9 * time.Second},
		// Unknown again: the plain hold, long over.
		{at: 10 * time.Second, want: 0},
		{at: 20 * time.Second, notOverBefore: time.Minute, want: firstReportLimit - 20*time.Second},
		{at: firstReportLimit, notOverBefore: time.Minute, want: 0},
	} {
		var notOverBefore time.Time
		if step.notOverBefore != 0 {
			notOverBefore = t0.Add(step.notOverBefore)
		}
		if got := f.holdPast(key, 1, t0.Add(step.at), notOverBefore); got != step.want {
			t.Errorf("at %s, not over before %s: hold %s, want %s", step.at, step.notOverBefore, got, step.want)
		}
	}
}
