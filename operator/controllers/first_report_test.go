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
		longer     bool
		want       time.Duration
	}{
		{at: 0, generation: 1, want: firstReportDelay},
		{at: 2 * time.Second, generation: 1, want: firstReportDelay - 2*time.Second},
		{at: 5 * time.Second, generation: 1, want: 0},
		// Waiting for components extends the hold up to the limit.
		{at: 5 * time.Second, generation: 1, longer: true, want: firstReportLimit - 5*time.Second},
		{at: 30 * time.Second, generation: 1, longer: true, want: 0},
		// A new spec starts a new hold.
		{at: 31 * time.Second, generation: 2, want: firstReportDelay},
	} {
		if got := f.holdUpTo(key, step.generation, t0.Add(step.at), step.longer); got != step.want {
			t.Errorf("at %s, generation %d, longer %t: hold %s, want %s", step.at, step.generation, step.longer, got, step.want)
		}
	}
	f.reported(key)
	if got := f.hold(key, 2, t0.Add(40*time.Second)); got != firstReportDelay {
		t.Errorf("after a report the next hold starts afresh: %s, want %s", got, firstReportDelay)
	}
}
