package steps

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cucumber/godog"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

// AdmissionNamespace is where the admission client dry-runs its graphs.
const AdmissionNamespace = "admission-probe"

// watchers is the scenario's background observation: a client dry-running
// graphs through the admission webhooks, and a watcher of every graph's
// Ready condition. Each runs until the step that judges it.
type watchers struct {
	admission *admissionSender
	ready     *readyWatcher
}

func registerWatchSteps(sc *godog.ScenarioContext, w *simWorld) {
	sc.Step(`^a client dry-runs a graph through admission every (\d+) ms$`, w.startAdmissionClient)
	sc.Step(`^a watcher checks every graph is Ready every (\d+) ms$`, w.startReadyWatcher)
	sc.Step(`^not one dry-run admission failed$`, w.noAdmissionFailed)
	sc.Step(`^every graph stayed Ready throughout$`, w.stayedReady)
}

func (w *simWorld) startAdmissionClient(ctx context.Context, ms int) error {
	if err := w.NeedSim(); err != nil {
		return err
	}
	if w.watch == nil {
		w.watch = &watchers{}
	}
	if w.watch.admission != nil {
		return fmt.Errorf("the admission client already runs")
	}
	manifests, files, err := w.CompatManifests()
	if err != nil {
		return err
	}
	var samples []*unstructured.Unstructured
	for _, rel := range files {
		for _, o := range manifests[rel] {
			if o.GetKind() == "DynamoGraphDeployment" {
				s := o.DeepCopy()
				s.SetNamespace(AdmissionNamespace)
				samples = append(samples, s)
			}
		}
	}
	if err := w.ensureNamespace(ctx, AdmissionNamespace); err != nil {
		return err
	}
	a := startAdmissionSender(w.Client, time.Duration(ms)*time.Millisecond,
		func(i int) *unstructured.Unstructured { return samples[i%len(samples)].DeepCopy() }, nil)
	w.watch.admission = a
	w.Background(a.halt)
	return nil
}

// haltAdmissionClient stops the admission client and records what it sent
// and what failed; it fails when none runs or it sent nothing.
func (w *simWorld) haltAdmissionClient() (*admissionSender, error) {
	if w.watch == nil || w.watch.admission == nil {
		return nil, fmt.Errorf("no admission client runs: add \"a client dry-runs a graph through admission every 100 ms\" first")
	}
	a := w.watch.admission
	a.halt()
	w.watch.admission = nil
	w.Figure("admissions sent", a.sent.Load())
	w.Figure("admissions failed", a.failed.Load())
	if a.sent.Load() == 0 {
		return nil, fmt.Errorf("the admission client sent nothing")
	}
	return a, nil
}

func (w *simWorld) noAdmissionFailed(context.Context) error {
	a, err := w.haltAdmissionClient()
	if err != nil {
		return err
	}
	sent, failed := a.sent.Load(), a.failed.Load()
	if failed > 0 {
		return fmt.Errorf("%d of %d dry-run admissions failed:\n  %s", failed, sent, strings.Join(head(a.Failures(), 20), "\n  "))
	}
	return nil
}

// readyWatcher lists every graph each period and notes each time one of
// the scenario's graphs is seen not Ready.
type readyWatcher struct {
	polls  atomic.Int64
	mu     sync.Mutex
	lapses []string
	errs   []string
	stop   func()
	done   chan struct{}
}

func (w *simWorld) startReadyWatcher(ctx context.Context, ms int) error {
	if err := w.NeedSim(); err != nil {
		return err
	}
	if len(w.graphs.list) == 0 {
		return fmt.Errorf("the scenario applied no graphs to watch")
	}
	if w.watch == nil {
		w.watch = &watchers{}
	}
	ours := map[string]bool{}
	for _, g := range w.graphs.list {
		ours[g.String()] = true
	}
	runCtx, cancel := context.WithCancel(context.Background())
	r := &readyWatcher{stop: cancel, done: make(chan struct{})}
	w.watch.ready = r
	w.Background(r.halt)
	go func() {
		defer close(r.done)
		t := time.NewTicker(time.Duration(ms) * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-runCtx.Done():
				return
			case <-t.C:
			}
			var list v1alpha1.DynamoGraphDeploymentList
			reqCtx, cancelReq := context.WithTimeout(runCtx, 10*time.Second)
			err := w.Client.List(reqCtx, &list)
			cancelReq()
			if runCtx.Err() != nil {
				return
			}
			r.mu.Lock()
			if err != nil {
				r.errs = append(r.errs, err.Error())
				r.mu.Unlock()
				continue
			}
			r.polls.Add(1)
			seen := 0
			for i := range list.Items {
				g := &list.Items[i]
				if !ours[g.Namespace+"/"+g.Name] {
					continue
				}
				seen++
				if st, reason := readyOf(g); st != "True" {
					r.lapses = append(r.lapses, fmt.Sprintf("%s %s/%s Ready=%s (%s)", time.Now().Format("15:04:05.000"), g.Namespace, g.Name, st, reason))
				}
			}
			if seen != len(ours) {
				r.lapses = append(r.lapses, fmt.Sprintf("%s only %d of %d graphs listed", time.Now().Format("15:04:05.000"), seen, len(ours)))
			}
			r.mu.Unlock()
		}
	}()
	return nil
}

func readyOf(g *v1alpha1.DynamoGraphDeployment) (status, reason string) {
	if c := meta.FindStatusCondition(g.Status.Conditions, "Ready"); c != nil {
		return string(c.Status), c.Reason
	}
	return "Unknown", "no Ready condition"
}

func (r *readyWatcher) halt() {
	r.stop()
	<-r.done
}

func (w *simWorld) stayedReady(context.Context) error {
	lapses, err := w.haltReadyWatcher()
	if err != nil {
		return err
	}
	if len(lapses) > 0 {
		return fmt.Errorf("graphs were seen not Ready %d times:\n  %s", len(lapses), strings.Join(head(lapses, 30), "\n  "))
	}
	return nil
}

func head(s []string, n int) []string {
	if len(s) > n {
		return append(s[:n:n], fmt.Sprintf("... and %d more", len(s)-n))
	}
	return s
}

// haltReadyWatcher stops the Ready watcher, records its figures and
// returns what it saw not Ready.
func (w *simWorld) haltReadyWatcher() ([]string, error) {
	if w.watch == nil || w.watch.ready == nil {
		return nil, fmt.Errorf("no Ready watcher runs: add \"a watcher checks every graph is Ready every 250 ms\" first")
	}
	r := w.watch.ready
	r.halt()
	w.watch.ready = nil
	w.Figure("Ready checks", r.polls.Load())
	w.Figure("graphs seen not Ready", len(r.lapses))
	if r.polls.Load() == 0 {
		return nil, fmt.Errorf("the Ready watcher never listed the graphs (errors: %v)", head(r.errs, 5))
	}
	return r.lapses, nil
}
