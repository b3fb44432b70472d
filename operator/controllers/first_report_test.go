package controllers

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
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
