package steps

// Status flapping and refusal figures of the HA scenarios (ha.feature): a
// fail-over must leave every graph's Ready condition as it was (a new
// leader recomputes the status it finds, it does not reset it), and the
// faults whose refusals cannot be avoided (a SIGKILL, a lost node) are
// measured.

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

// readyFlaps samples the Ready condition of every graph in a namespace
// every 500 ms. For each graph and generation it keeps the first Ready
// condition that was True for that generation (observedGeneration equal);
// a later sample of that same generation whose Ready is not True, or True
// since another lastTransitionTime, is a flap: nothing the user asked
// changed, yet the status went through a transition.
type readyFlaps struct {
	mu      sync.Mutex
	ready   map[string]metav1.Condition // by "name@generation"
	flaps   []string
	flapped map[string]bool
	samples int
	stop    func()
	done    chan struct{}
}

func (f *faultWorld) recordReadyFlaps(_ context.Context, ns string) error {
	if err := f.w.NeedSim(); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &readyFlaps{ready: map[string]metav1.Condition{}, flapped: map[string]bool{}, stop: cancel, done: make(chan struct{})}
	c := f.w.Client
	go func() {
		defer close(r.done)
		// A sample every 500 ms until halted: a recorder, not a wait.
		wait.UntilWithContext(ctx, func(ctx context.Context) {
			var graphs v1alpha1.DynamoGraphDeploymentList
			if err := c.List(ctx, &graphs, client.InNamespace(ns)); err != nil {
				return
			}
			r.observe(graphs.Items, time.Now())
		}, 500*time.Millisecond)
	}()
	f.ha.flaps = r
	f.w.Background(r.halt)
	return nil
}

func (r *readyFlaps) observe(graphs []v1alpha1.DynamoGraphDeployment, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.samples++
	for i := range graphs {
		g := &graphs[i]
		key := fmt.Sprintf("%s@%d", g.Name, g.Generation)
		cond := meta.FindStatusCondition(g.Status.Conditions, v1alpha1.ConditionReady)
		base, seen := r.ready[key]
		switch {
		case !seen:
			if cond != nil && cond.Status == metav1.ConditionTrue && cond.ObservedGeneration == g.Generation {
				r.ready[key] = *cond
			}
		case cond == nil || cond.Status != metav1.ConditionTrue || !cond.LastTransitionTime.Equal(&base.LastTransitionTime):
			if r.flapped[key] {
				continue
			}
			r.flapped[key] = true
			got := "no Ready condition"
			if cond != nil {
				got = fmt.Sprintf("Ready=%s (%s) since %s", cond.Status, cond.Reason, cond.LastTransitionTime.Format("15:04:05"))
			}
			r.flaps = append(r.flaps, fmt.Sprintf("%s %s generation %d: Ready=True since %s, then %s",
				now.Format("15:04:05.000"), g.Name, g.Generation, base.LastTransitionTime.Format("15:04:05"), got))
		}
	}
}

func (r *readyFlaps) halt() {
	r.stop()
	<-r.done
}

func (f *faultWorld) noReadyFlaps(context.Context) error {
	r := f.ha.flaps
	if r == nil {
		return fmt.Errorf(`no recording: add "the Ready condition of every graph in the namespace ... is recorded" first`)
	}
	r.halt()
	r.mu.Lock()
	defer r.mu.Unlock()
	f.w.Figure("graphs that left Ready at an unchanged generation", len(r.flaps))
	if len(r.ready) == 0 || r.samples < 2 {
		return fmt.Errorf("the recording saw no graph Ready (%d samples)", r.samples)
	}
	if len(r.flaps) > 0 {
		return fmt.Errorf("%d graphs left Ready with nothing changed in their spec:\n  %s", len(r.flaps), strings.Join(head(r.flaps, 20), "\n  "))
	}
	return nil
}

// refusalFigures records, as figures, the admissions refused (the client's
// dry-runs and the graph writes) and how long after the fault before it
// each came: a SIGKILLed replica or a lost node's stays one of the webhook
// Service's endpoints until its death is seen, and the API server does not
// retry a webhook call, so those refusals are the cluster's, not the
// operator's to avoid. It stops the admission client. It fails only when
// no fault was noted.
func (f *faultWorld) refusalFigures(context.Context) error {
	a, err := f.w.haltAdmissionClient()
	if err != nil {
		return err
	}
	f.ha.mu.Lock()
	hits := append([]haFault(nil), f.ha.faults...)
	f.ha.mu.Unlock()
	if len(hits) == 0 {
		return errors.New("no fault hit an operator pod in this scenario")
	}
	sort.Slice(hits, func(i, j int) bool { return hits[i].at.Before(hits[j].at) })
	// The delay after the last fault noted before t (a fault is noted once
	// done: a refusal up to a second earlier is that fault's).
	after := func(t time.Time) (time.Duration, bool) {
		for i := len(hits) - 1; i >= 0; i-- {
			if !t.Before(hits[i].at.Add(-time.Second)) {
				return t.Sub(hits[i].at), true
			}
		}
		return 0, false
	}
	var worst time.Duration
	var before int
	for _, t := range append(append([]time.Time(nil), a.FailedAt()...), f.refusedAt...) {
		d, ok := after(t)
		if !ok {
			before++
			continue
		}
		worst = max(worst, d)
	}
	failures := a.Failures()
	if len(failures) > 0 {
		fmt.Printf("    failed admissions:\n      %s\n", strings.Join(head(failures, 20), "\n      "))
	}
	f.w.Figure("dry-run admissions refused", a.failed.Load())
	f.w.Figure("graph writes refused (and retried)", f.refused)
	f.w.Figure("refusals before the first fault", before)
	f.w.Figure("latest refusal after its fault (s)", fmt.Sprintf("%.1f", worst.Seconds()))
	return nil
}
