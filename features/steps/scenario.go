// The upgrade and fault scenarios (scenarios/*.feature): a scenario starts
// a simulator with no operator (harness.Sim), or continues on the one the
// scenario before kept (a chain in one feature file), installs and upgrades
// operator releases built from git (harness.Builder) with helm, and checks
// what the workloads saw. simWorld is a scenario's state; Suite what every
// scenario shares.

package steps

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/internal/await"
	"github.com/dynamoctl/dynamo-operator/internal/testenv"
	"github.com/dynamoctl/dynamo-operator/scenarios/harness"
)

// Suite is what every scenario shares.
type Suite struct {
	// Root is the repository's working tree; ../shared sits beside it.
	Root string
	// SimBin is bin/dynamo-sim; Helm the pinned helm (make helm); BinDir the
	// Kubernetes binaries (KUBEBUILDER_ASSETS, empty: .cache/k8s).
	SimBin, Helm, BinDir string
	// StateDir is the simulators' state directory (one at a time).
	StateDir string
	// Builder builds the releases.
	Builder *harness.Builder
	// Previous is the ref of the previous release (harness.PreviousTag).
	Previous string
	// Report collects each scenario's result and figures.
	Report *Report

	// kept is the simulator a passing scenario left for the next one
	// ("the simulator is kept for the next scenario"), nil when none.
	kept *keptSim
}

// keptSim is what a scenario hands the next one that continues on its
// simulator: the cluster, the releases installed there and the graphs
// applied. Watchers, figures and per-scenario state are not carried.
type keptSim struct {
	from     string
	sim      *harness.Sim
	helm     *harness.Helm
	client   client.Client
	config   *rest.Config
	releases releases
	graphs   graphs
	edited   *edited
}

// DownKept stops a simulator a scenario kept but no scenario continued on
// (the last one of a run narrowed by GODOG_PATHS or GODOG_TAGS).
func (s *Suite) DownKept(ctx context.Context) error {
	if s.kept == nil {
		return nil
	}
	k := s.kept
	s.kept = nil
	return k.sim.Down(ctx)
}

// Prepare builds the releases every scenario may install, before the first
// scenario starts its clock: the previous release and the working tree.
func (s *Suite) Prepare(ctx context.Context) error {
	for _, ref := range []string{s.Previous, harness.WorkingTree} {
		start := time.Now()
		r, err := s.Builder.Build(ctx, ref)
		if err != nil {
			return err
		}
		fmt.Printf("scenarios: release %s = %s (commit %.12s, image %s) ready in %.1fs\n", ref, r.Tag, r.Commit, r.Image(), time.Since(start).Seconds())
	}
	return nil
}

// simWorld is the state of one scenario.
type simWorld struct {
	Suite *Suite
	// Sim is the scenario's simulator once a step started it; Helm, Client
	// and Config reach it.
	Sim    *harness.Sim
	Helm   *harness.Helm
	Client client.Client
	Config *rest.Config
	// EventualTimeout bounds the "eventually" steps.
	EventualTimeout time.Duration

	name    string
	started time.Time
	// keep: the scenario hands its simulator to the next one if it passes.
	keep     bool
	figures  []Figure
	cleanups []func(context.Context) error
	// bg are the scenario's background activities (watchers, clients),
	// stopped before the cleanups run.
	bg []func()

	// Per-concern state, one field per file that needs one.
	releases releases
	graphs   graphs
	watch    *watchers
	handover handover
	edited   *edited
	dayTwo   dayTwo
	// The fault and migration steps' state, spread over several files
	// each: made by the first of their registration functions.
	faults    *faultWorld
	migration *migrationWorld
}

// faultState is the scenario's fault state, made on first use.
func (w *simWorld) faultState() *faultWorld {
	if w.faults == nil {
		w.faults = &faultWorld{w: w}
	}
	return w.faults
}

// migrationState is the scenario's migration state, made on first use.
func (w *simWorld) migrationState() *migrationWorld {
	if w.migration == nil {
		w.migration = &migrationWorld{simWorld: w}
	}
	return w.migration
}

// Figure records a measured figure of the scenario for the report (the
// latest value of a name wins).
func (w *simWorld) Figure(name string, value any) {
	v := fmt.Sprint(value)
	for i := range w.figures {
		if w.figures[i].Name == name {
			w.figures[i].Value = v
			return
		}
	}
	w.figures = append(w.figures, Figure{Name: name, Value: v})
	fmt.Printf("    figure: %s = %s\n", name, v)
}

// Cleanup runs f when the scenario ends, before the simulator stops (the
// newest first).
func (w *simWorld) Cleanup(f func(context.Context) error) { w.cleanups = append(w.cleanups, f) }

// Background registers stop, which ends an activity the scenario started;
// it is called when the scenario ends if no step did so first.
func (w *simWorld) Background(stop func()) { w.bg = append(w.bg, stop) }

func (w *simWorld) tearDown(passed bool) error {
	for i := len(w.bg) - 1; i >= 0; i-- {
		w.bg[i]()
	}
	w.bg = nil
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var errs []error
	if w.Sim != nil && !w.graphs.notedAt.IsZero() {
		w.figureOperatorWrites()
	}
	for i := len(w.cleanups) - 1; i >= 0; i-- {
		if err := w.cleanups[i](ctx); err != nil {
			errs = append(errs, err)
		}
	}
	w.cleanups = nil
	if w.Sim != nil && w.keep && passed && len(errs) == 0 {
		// The next scenario continues here (resumeSim); a failed one
		// leaves nothing to continue on, and the next fails saying so.
		w.Suite.kept = &keptSim{from: w.name, sim: w.Sim, helm: w.Helm, client: w.Client, config: w.Config,
			releases: w.releases, graphs: w.graphs, edited: w.edited}
		w.Sim, w.Client, w.Config, w.Helm = nil, nil, nil, nil
	}
	w.keep = false
	if w.Sim != nil {
		if err := w.Sim.Down(ctx); err != nil {
			errs = append(errs, fmt.Errorf("stopping the simulator: %w", err))
		}
		if !passed {
			// The next scenario's simulator starts in the same directory
			// and would delete the logs that say why this one failed.
			dest := filepath.Join(filepath.Dir(w.Suite.StateDir), "failed", testenv.NamespacePrefix(w.name))
			if err := w.Sim.MoveLogs(dest); err != nil {
				errs = append(errs, err)
			} else {
				fmt.Printf("    the failed scenario's logs (API server, audit, pods) are kept in %s\n", dest)
			}
		}
		w.Sim, w.Client, w.Config, w.Helm = nil, nil, nil, nil
	}
	w.releases, w.graphs, w.watch, w.handover, w.edited, w.dayTwo = releases{}, graphs{}, nil, handover{}, nil, dayTwo{}
	return errors.Join(errs...)
}

// scenarioPoll is how often a scenario step checks again: its checks list
// every graph, pod or log line of a simulator running some hundred pods, so
// they poll less often than await.Poll.
const scenarioPoll = 500 * time.Millisecond

// eventually waits until check passes, up to the scenario's EventualTimeout
// unless opts say otherwise; the error names what and check's last error.
func (w *simWorld) eventually(ctx context.Context, what string, check func() error, opts ...await.Option) error {
	return await.Until(ctx, what, check, append([]await.Option{await.Within(w.EventualTimeout), await.Every(scenarioPoll)}, opts...)...)
}

// keepSim hands the scenario's simulator to the next scenario if this one
// passes; that one starts with "the simulator the previous scenario kept".
func (w *simWorld) keepSim() error {
	if err := w.NeedSim(); err != nil {
		return err
	}
	w.keep = true
	return nil
}

// resumeSim continues on the simulator the previous scenario kept, with
// the releases it installed and the graphs it applied (and noted).
func (w *simWorld) resumeSim() error {
	if w.Sim != nil {
		return fmt.Errorf("the scenario's simulator is already up")
	}
	k := w.Suite.kept
	if k == nil {
		return fmt.Errorf("no simulator was kept: the scenario before this one (in the same feature file) failed, or was left out by GODOG_TAGS; run the feature file whole")
	}
	w.Suite.kept = nil
	w.Sim, w.Helm, w.Client, w.Config = k.sim, k.helm, k.client, k.config
	w.releases, w.graphs, w.edited = k.releases, k.graphs, k.edited
	fmt.Printf("    continuing on the simulator of %q\n", k.from)
	return nil
}

// NeedSim fails a step that needs the simulator before one is up.
func (w *simWorld) NeedSim() error {
	if w.Sim == nil {
		return fmt.Errorf("no simulator yet: start the scenario with \"Given a simulated cluster with no operator\"")
	}
	return nil
}

// Figure is one measured value of a scenario.
type Figure struct{ Name, Value string }

// Result is one scenario's outcome.
type Result struct {
	Scenario string
	Err      error
	Duration time.Duration
	Figures  []Figure
}

// Report collects the results of a run.
type Report struct {
	mu      sync.Mutex
	results []Result
}

// Add records a result.
func (r *Report) Add(res Result) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.results = append(r.results, res)
}

// Summary is the text summary: one line per scenario (pass or fail, its
// duration) and its figures below it.
func (r *Report) Summary() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	failed := 0
	for _, res := range r.results {
		status := "PASS"
		if res.Err != nil {
			status = "FAIL"
			failed++
		}
		fmt.Fprintf(&b, "%s %6.1fs  %s\n", status, res.Duration.Seconds(), res.Scenario)
		for _, f := range res.Figures {
			fmt.Fprintf(&b, "       %-40s %s\n", f.Name, f.Value)
		}
		if res.Err != nil {
			lines := strings.Split(res.Err.Error(), "\n")
			for i, l := range head(lines, 4) {
				if i == 0 {
					fmt.Fprintf(&b, "       error: %s\n", firstLine(l))
				} else {
					fmt.Fprintf(&b, "         %s\n", firstLine(l))
				}
			}
		}
	}
	fmt.Fprintf(&b, "%d scenarios, %d passed, %d failed\n", len(r.results), len(r.results)-failed, failed)
	return b.String()
}

// WriteSummary writes the summary to path.
func (r *Report) WriteSummary(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(r.Summary()), 0o644)
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	if len(line) > 300 {
		line = line[:300] + "..."
	}
	return line
}
