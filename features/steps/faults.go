package steps

// Fault scenarios (scenarios/faults.feature, and ha.feature's load): the
// operator killed with SIGKILL at random moments while graphs are created,
// updated and deleted, the API server restarted, a node lost, the webhook
// certificate expired; then nothing duplicated, orphaned, missing or left
// behind.
//
// Random moments come from one seed per scenario, printed and recorded as a
// figure; DYNAMO_FAULT_SEED replays it. A moment is "before the k-th graph
// is created (or deleted)", so a replay hits the same points of the work
// whatever the machine's speed.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cucumber/godog"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/internal/await"
	"github.com/dynamoctl/dynamo-operator/internal/builders"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/sim/faults"
)

// SeedEnv replays a fault scenario's random moments.
const SeedEnv = "DYNAMO_FAULT_SEED"

// The chart's names for the cluster-wide release (chart/README.md's install).
const (
	certSecret   = ClusterRelease + "-dynamo-operator-webhook-cert"
	replicasPath = "dynamo-operator.controllerManager.replicas"
	// apiServerDown is how long "the API server restarts" keeps it down:
	// less than the chart's leader election renew deadline (6 s), as a
	// rolling control-plane restart would.
	apiServerDown = 5 * time.Second
)

func registerFaultSteps(sc *godog.ScenarioContext, w *simWorld) {
	f := w.faultState()
	sc.Step(`^I install `+ReleaseRef+` cluster-wide as chart/README.md says with (\d+) operator replicas?$`, func(ctx context.Context, ref string, n int) error {
		return w.InstallRelease(ctx, ClusterRelease, ClusterNamespace, ref, fmt.Sprintf("%s=%d", replicasPath, n))
	})
	sc.Step(`^I delete the small graphs in the namespace "([^"]+)"$`, f.deleteGraphs)
	sc.Step(`^a small graph "([^"]+)" is Ready in the namespace "([^"]+)" as the reference$`, f.referenceGraph)
	sc.Step(`^I (create|update|delete) (\d+) small graphs in the namespace "([^"]+)" while (`+disruptionPattern()+`) (once|twice|\d+ times) at (?:a )?random moments?$`, f.workWhileDisrupted)
	sc.Step(`^all (\d+) graphs in the namespace "([^"]+)" become Ready$`, f.allReady)
}

// faultWorld is a fault scenario's state.
type faultWorld struct {
	w    *simWorld
	seed uint64
	rng  *rand.Rand

	// reference counts the children of a graph made with no fault, by
	// their key relative to the graph (childKey); refName and refNS name
	// that graph.
	reference      map[string]int
	refName, refNS string
	// graphs are the names of the small graphs created, by namespace.
	graphs map[string][]string
	// lastCreated and lastFault are when the work and the disruptions of
	// the last create step ended.
	lastCreated, lastFault time.Time
	// node loss: the graph watched, the node lost, the states seen.
	watched   types.NamespacedName
	lostNode  string
	lostAt    time.Time
	states    *GraphStates
	certEpoch time.Time

	// refused counts the graph writes of the scenario's works refused
	// (and retried), refusedBy by cause.
	refused   int
	refusedBy map[string]int
	refusedAt []time.Time
	// ha is the high-availability steps' state (ha.go).
	ha haState
}

// random is the scenario's seeded source; the seed is printed and recorded
// on first use.
func (f *faultWorld) random() *rand.Rand {
	if f.rng != nil {
		return f.rng
	}
	f.seed = uint64(time.Now().UnixNano())
	if s := os.Getenv(SeedEnv); s != "" {
		if v, err := strconv.ParseUint(s, 10, 64); err == nil {
			f.seed = v
		}
	}
	fmt.Printf("    fault seed %d (replay: %s=%d)\n", f.seed, SeedEnv, f.seed)
	f.w.Figure("seed", f.seed)
	f.rng = rand.New(rand.NewPCG(f.seed, f.seed^0x5deece66d))
	return f.rng
}

// smallGraph is the graph the fault scenarios create by the hundred: a
// frontend and a CPU-only worker, one replica each.
func smallGraph(name, ns string) *v1alpha1.DynamoGraphDeployment {
	return builders.MakeGraph(name, ns).
		Service("Frontend", builders.MakeService().Type(v1alpha1.ComponentTypeFrontend)).
		Service("Worker", builders.MakeService().Type(v1alpha1.ComponentTypeWorker)).
		Obj()
}

func graphName(i int) string { return fmt.Sprintf("g-%03d", i) }

func (f *faultWorld) referenceGraph(ctx context.Context, name, ns string) error {
	if err := f.w.NeedSim(); err != nil {
		return err
	}
	if err := f.w.ensureNamespace(ctx, ns); err != nil {
		return err
	}
	// A scenario continuing on a kept simulator finds the reference there,
	// and may start while the operator the one before killed is still
	// coming back (its webhook refuses): retried, as a GitOps tool would.
	if err := f.w.eventually(ctx, "the reference graph "+name+" created", func() error {
		if err := f.w.Client.Create(ctx, smallGraph(name, ns)); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		return nil
	}); err != nil {
		return err
	}
	if err := f.w.eventually(ctx, "the reference graph "+name+" Ready", func() error { return f.notReady(ctx, ns, []string{name}) }); err != nil {
		return err
	}
	inv, err := f.inventory(ctx, ns)
	if err != nil {
		return err
	}
	f.reference, f.refName, f.refNS = inv.children[name], name, ns
	if len(f.reference) == 0 {
		return fmt.Errorf("the reference graph %s/%s has no children", ns, name)
	}
	return nil
}

// A disruption is one fault the scenario injects at a random moment; it
// returns what it did. seed picks its target where it has a choice. A new
// one is one entry here.
type disruption func(f *faultWorld, ctx context.Context, seed uint64) (string, error)

var disruptions = map[string]disruption{
	"the operator is killed":               (*faultWorld).killOperator,
	"the API server restarts":              (*faultWorld).restartAPIServer,
	"an operator replica is killed":        onHealthyPair((*faultWorld).killReplica),
	"an operator replica is deleted":       onHealthyPair((*faultWorld).deleteReplica),
	"the leader's node is lost":            onHealthyPair((*faultWorld).loseLeaderNode),
	"the leader's node is drained":         onHealthyPair((*faultWorld).drainLeaderNode),
	"the cluster-wide release is upgraded": onHealthyPair((*faultWorld).upgradeRelease),
}

func disruptionPattern() string {
	names := make([]string, 0, len(disruptions))
	for k := range disruptions {
		names = append(names, regexp.QuoteMeta(k))
	}
	sort.Strings(names)
	return strings.Join(names, "|")
}

func times(s string) (int, error) {
	switch s {
	case "once":
		return 1, nil
	case "twice":
		return 2, nil
	}
	return strconv.Atoi(strings.TrimSuffix(s, " times"))
}

// workWhileDisrupted creates (or deletes) n small graphs one after another,
// as a user or a GitOps tool would (a refused request is retried), and
// injects the disruption before seeded, distinct graph indices. The
// disruptions run beside the work; the step returns when both are done.
func (f *faultWorld) workWhileDisrupted(ctx context.Context, verb string, n int, ns, what, count string) error {
	if err := f.w.NeedSim(); err != nil {
		return err
	}
	k, err := times(count)
	if err != nil || k < 1 || k >= n {
		return fmt.Errorf("%q: want once, twice or N times with N below %d", count, n)
	}
	rng := f.random()
	moments := rng.Perm(n - 1)[:k]
	for i := range moments {
		moments[i]++ // never before the first graph: "while" the work runs
	}
	sort.Ints(moments)
	at := map[int]uint64{} // graph index -> the disruption's seed
	for _, m := range moments {
		at[m] = rng.Uint64()
	}
	if verb == "create" {
		if err := f.w.ensureNamespace(ctx, ns); err != nil {
			return err
		}
	}
	var update []byte
	if verb == "update" {
		if update, err = f.updateReference(ctx); err != nil {
			return err
		}
	}
	do := disruptions[what]
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		done     []string
		errs     []error
		lastDone time.Time
	)
	refused, retries := 0, map[string]int{}
	start := time.Now()
	for i := range n {
		if seed, ok := at[i]; ok {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				began := time.Since(start)
				msg, err := do(f, ctx, seed)
				mu.Lock()
				defer mu.Unlock()
				lastDone = time.Now()
				if err != nil {
					errs = append(errs, fmt.Errorf("%s before graph %d: %w", what, i, err))
					return
				}
				done = append(done, fmt.Sprintf("before %s %d at +%.1fs (done at +%.1fs): %s", verb, i, began.Seconds(), time.Since(start).Seconds(), msg))
			}(i)
		}
		name := graphName(i)
		// A refused request is retried until it is taken, within 4 minutes.
		err := await.Until(ctx, verb+" "+ns+"/"+name, func() error {
			var err error
			switch verb {
			case "create":
				err = f.w.Client.Create(ctx, smallGraph(name, ns))
				if apierrors.IsAlreadyExists(err) {
					err = nil // created, but the answer was lost (API server restart)
				}
			case "update":
				g := &v1alpha1.DynamoGraphDeployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
				err = f.w.Client.Patch(ctx, g, client.RawPatch(types.MergePatchType, update))
			default:
				g := &v1alpha1.DynamoGraphDeployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
				err = client.IgnoreNotFound(f.w.Client.Delete(ctx, g, client.PropagationPolicy(metav1.DeletePropagationBackground)))
			}
			if err != nil {
				refused++
				retries[refusal(err)]++
				f.refusedAt = append(f.refusedAt, time.Now())
			}
			return err
		}, await.Within(4*time.Minute), await.Every(250*time.Millisecond))
		if err != nil {
			return err
		}
		// Paced as a client creating graphs one by one, so the random
		// moments fall inside the work rather than after it.
		time.Sleep(100 * time.Millisecond)
	}
	workDone := time.Now()
	wg.Wait()
	if verb != "delete" {
		if f.graphs == nil {
			f.graphs = map[string][]string{}
		}
		f.graphs[ns] = nil
		for i := range n {
			f.graphs[ns] = append(f.graphs[ns], graphName(i))
		}
		f.lastCreated = workDone
	}
	f.lastFault = lastDone
	f.refused += refused
	if f.refusedBy == nil {
		f.refusedBy = map[string]int{}
	}
	for k, v := range retries {
		f.refusedBy[k] += v
	}
	for _, d := range done {
		fmt.Printf("    %s: %s\n", what, d)
	}
	f.w.Figure(verb+": graphs", n)
	f.w.Figure(verb+": "+what, len(done))
	f.w.Figure(verb+": requests refused and retried", refused)
	f.w.Figure(verb+": work took (s)", fmt.Sprintf("%.1f", workDone.Sub(start).Seconds()))
	if refused > 0 {
		fmt.Printf("    refused requests, by error: %v\n", retries)
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if len(done) != k {
		return fmt.Errorf("%s %d times, wanted %d", what, len(done), k)
	}
	return nil
}

// updateReference makes the next update of the small graphs (their
// frontend scaled from 1 replica to 2, or back), applies it to
// the reference graph first and takes the reference again once that is
// Ready: the updated graphs must end with its children.
func (f *faultWorld) updateReference(ctx context.Context) ([]byte, error) {
	if f.refName == "" {
		return nil, fmt.Errorf("no reference graph: add \"a small graph ... is Ready in the namespace ... as the reference\" first")
	}
	ref := &v1alpha1.DynamoGraphDeployment{}
	if err := f.w.Client.Get(ctx, types.NamespacedName{Namespace: f.refNS, Name: f.refName}, ref); err != nil {
		return nil, err
	}
	replicas := 2
	if s := ref.Spec.Services["Frontend"]; s != nil && s.Replicas != nil && *s.Replicas == 2 {
		replicas = 1
	}
	update := []byte(fmt.Sprintf(`{"spec":{"services":{"Frontend":{"replicas":%d}}}}`, replicas))
	if err := f.w.eventually(ctx, "the reference graph updated", func() error {
		return f.w.Client.Patch(ctx, ref, client.RawPatch(types.MergePatchType, update))
	}); err != nil {
		return nil, err
	}
	if err := f.w.eventually(ctx, "the updated reference graph Ready with its children", func() error {
		if err := f.notReady(ctx, f.refNS, []string{f.refName}); err != nil {
			return err
		}
		inv, err := f.inventory(ctx, f.refNS)
		if err != nil {
			return err
		}
		if n := inv.children[f.refName]["Pod of ReplicaSet of Deployment <graph>-frontend"]; n != replicas {
			return fmt.Errorf("the reference graph has %d frontend pods, want %d", n, replicas)
		}
		f.reference = inv.children[f.refName]
		return nil
	}); err != nil {
		return nil, err
	}
	return update, nil
}

// refusal names why a request was refused, briefly: the figure groups them.
func refusal(err error) string {
	msg := err.Error()
	for _, c := range []struct{ has, cause string }{
		{"no endpoints available for service", "webhook: no Ready operator pod"},
		{"failed calling webhook", "webhook: connection to the operator lost"},
		{"connection refused", "API server: connection refused"},
		{"connection reset by peer", "API server: connection reset"},
		{"EOF", "API server: connection closed"},
	} {
		if strings.Contains(msg, c.has) {
			return c.cause
		}
	}
	if reason := apierrors.ReasonForError(err); reason != metav1.StatusReasonUnknown {
		return "API: " + string(reason)
	}
	return firstLine(msg)
}

// killOperator SIGKILLs an operator pod's process (one chosen with the
// seed among the release's pods). A pod whose process is in its restart
// back-off has nothing to kill: the kill waits until it runs again.
func (f *faultWorld) killOperator(ctx context.Context, seed uint64) (string, error) {
	return f.retryFault(ctx, faults.Request{Kind: "pod-kill", Namespace: ClusterNamespace, Seed: seed})
}

func (f *faultWorld) restartAPIServer(ctx context.Context, _ uint64) (string, error) {
	return f.fault(ctx, faults.Request{Kind: "apiserver-restart", Duration: apiServerDown})
}

func (f *faultWorld) fault(ctx context.Context, r faults.Request) (string, error) {
	fctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	return f.w.Sim.Control().Fault(fctx, r)
}

// retryFault injects r, again while the process to kill is in its restart
// back-off (for up to a minute); any other error of the fault ends it.
func (f *faultWorld) retryFault(ctx context.Context, r faults.Request) (string, error) {
	var msg string
	var last error // the fault's own error, unless it was one to retry
	err := await.Until(ctx, "the fault "+r.Kind, func() error {
		var err error
		msg, err = f.fault(ctx, r)
		if err != nil && !strings.Contains(err.Error(), "no running container process") {
			last = err
			return nil
		}
		return err
	}, await.Within(time.Minute))
	if last != nil {
		return msg, last
	}
	return msg, err
}

// notReady fails naming the graphs whose Ready condition is not True for
// their current generation.
func (f *faultWorld) notReady(ctx context.Context, ns string, names []string) error {
	var list v1alpha1.DynamoGraphDeploymentList
	if err := f.w.Client.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return err
	}
	byName := map[string]*v1alpha1.DynamoGraphDeployment{}
	for i := range list.Items {
		byName[list.Items[i].Name] = &list.Items[i]
	}
	var bad []string
	for _, n := range names {
		g, ok := byName[n]
		if !ok {
			bad = append(bad, n+" (missing)")
			continue
		}
		c := meta.FindStatusCondition(g.Status.Conditions, "Ready")
		switch {
		case c == nil:
			bad = append(bad, n+" (no Ready condition)")
		case c.Status != metav1.ConditionTrue || c.ObservedGeneration != g.Generation:
			bad = append(bad, fmt.Sprintf("%s (Ready=%s for generation %d of %d: %s)", n, c.Status, c.ObservedGeneration, g.Generation, c.Message))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("%d of %d graphs not Ready: %s", len(bad), len(names), strings.Join(head(bad, 10), "; "))
	}
	return nil
}

func (f *faultWorld) allReady(ctx context.Context, n int, ns string) error {
	names := f.graphs[ns]
	if len(names) != n {
		return fmt.Errorf("the scenario created %d graphs in %s, not %d", len(names), ns, n)
	}
	if err := f.w.eventually(ctx, fmt.Sprintf("all %d graphs in %s Ready", n, ns), func() error { return f.notReady(ctx, ns, names) }); err != nil {
		return err
	}
	now := time.Now()
	f.w.Figure("all Ready after the last create (s)", fmt.Sprintf("%.1f", now.Sub(f.lastCreated).Seconds()))
	if !f.lastFault.IsZero() {
		f.w.Figure("all Ready after the last fault (s)", fmt.Sprintf("%.1f", now.Sub(f.lastFault).Seconds()))
	}
	return nil
}

// deleteGraphs deletes every graph in ns with no fault: a clean slate for
// the next scenario on the same simulator (its check is nothingLeft).
func (f *faultWorld) deleteGraphs(ctx context.Context, ns string) error {
	if err := f.w.NeedSim(); err != nil {
		return err
	}
	return f.w.Client.DeleteAllOf(ctx, &v1alpha1.DynamoGraphDeployment{}, client.InNamespace(ns))
}
