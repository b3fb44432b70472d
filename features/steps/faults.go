package steps

// Fault scenarios (scenarios/faults.feature): the operator killed with
// SIGKILL at random moments while graphs are created and deleted, the API
// server restarted, the leader lost, a node lost, the webhook certificate
// expired; then nothing duplicated, orphaned, missing or left behind.
//
// Random moments come from one seed per scenario, printed and recorded as a
// figure; DYNAMO_FAULT_SEED replays it. A moment is "before the k-th graph
// is created (or deleted)", so a replay hits the same points of the work
// whatever the machine's speed.

import (
	"context"
	"crypto/x509"
	"encoding/pem"
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
	corev1 "k8s.io/api/core/v1"
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
	// less than the leader election's renew deadline (10 s), as a rolling
	// control-plane restart would.
	apiServerDown = 5 * time.Second
)

func registerFaultSteps(sc *godog.ScenarioContext, w *simWorld) {
	f := &faultWorld{w: w}
	sc.Step(`^I install `+ReleaseRef+` cluster-wide as chart/README.md says with (\d+) operator replicas$`, func(ctx context.Context, ref string, n int) error {
		return w.InstallRelease(ctx, ClusterRelease, ClusterNamespace, ref, fmt.Sprintf("%s=%d", replicasPath, n))
	})
	sc.Step(`^I scale the cluster-wide release to (\d+) operator replicas$`, f.scaleOperator)
	sc.Step(`^I delete the small graphs in the namespace "([^"]+)"$`, f.deleteGraphs)
	sc.Step(`^a small graph "([^"]+)" is Ready in the namespace "([^"]+)" as the reference$`, f.referenceGraph)
	sc.Step(`^I (create|delete) (\d+) small graphs in the namespace "([^"]+)" while (`+disruptionPattern()+`) (once|twice|\d+ times) at (?:a )?random moments?$`, f.workWhileDisrupted)
	sc.Step(`^all (\d+) graphs in the namespace "([^"]+)" become Ready$`, f.allReady)
	sc.Step(`^each graph in the namespace "([^"]+)" has exactly the children of the reference graph$`, f.exactChildren)
	sc.Step(`^no object in the namespace "([^"]+)" is orphaned$`, f.noOrphans)
	sc.Step(`^nothing the graphs owned is left in the namespace "([^"]+)"$`, f.nothingLeft)
	sc.Step(`^another operator process took the leader election over$`, f.leaderTakenOver)
	sc.Step(`^a graph "([^"]+)" with a GPU worker is Ready in the namespace "([^"]+)"$`, f.gpuGraphReady)
	sc.Step(`^the node running its worker is lost$`, f.loseWorkerNode)
	sc.Step(`^the graph goes pending and then Ready again with its worker on another node$`, f.pendingThenReady)
	sc.Step(`^the webhook certificate of the cluster-wide release expires$`, f.certExpires)
	sc.Step(`^the certificate Secret eventually holds a renewed certificate$`, f.certRenewed)
	sc.Step(`^the admission client keeps sending for (\d+) seconds$`, f.keepSending)
}

// faultWorld is a fault scenario's state.
type faultWorld struct {
	w    *simWorld
	seed uint64
	rng  *rand.Rand

	// reference counts the children of a graph made with no fault, by
	// their key relative to the graph (childKey).
	reference map[string]int
	// graphs are the names of the small graphs created, by namespace.
	graphs map[string][]string
	// lastCreated and lastFault are when the work and the disruptions of
	// the last create step ended.
	lastCreated, lastFault time.Time
	// killed is the leader election identity of the last process killed
	// as the leader, and when.
	killed   string
	killedAt time.Time

	// node loss: the graph watched, the node lost, the states seen.
	watched   types.NamespacedName
	lostNode  string
	lostAt    time.Time
	states    *GraphStates
	certEpoch time.Time
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
	f.reference = inv.children[name]
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
	"the operator is killed":  (*faultWorld).killOperator,
	"the leader is killed":    (*faultWorld).killLeader,
	"the API server restarts": (*faultWorld).restartAPIServer,
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
			if verb == "create" {
				err = f.w.Client.Create(ctx, smallGraph(name, ns))
				if apierrors.IsAlreadyExists(err) {
					err = nil // created, but the answer was lost (API server restart)
				}
			} else {
				g := &v1alpha1.DynamoGraphDeployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
				err = client.IgnoreNotFound(f.w.Client.Delete(ctx, g, client.PropagationPolicy(metav1.DeletePropagationBackground)))
			}
			if err != nil {
				refused++
				retries[refusal(err)]++
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
	if verb == "create" {
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

// killLeader SIGKILLs the process holding the leader election Lease.
func (f *faultWorld) killLeader(ctx context.Context, _ uint64) (string, error) {
	holder, pod, err := f.leader(ctx)
	if err != nil {
		return "", err
	}
	msg, err := f.retryFault(ctx, faults.Request{Kind: "pod-kill", Pod: ClusterNamespace + "/" + pod})
	if err == nil {
		f.killed, f.killedAt = holder, time.Now()
	}
	return msg, err
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

// leader is the cluster-wide release's leading pod and its holder identity.
func (f *faultWorld) leader(ctx context.Context) (holder, pod string, err error) {
	pod, holder, err = operatorLeader(ctx, f.w.Client, ClusterRelease, ClusterNamespace)
	return holder, pod, err
}

func (f *faultWorld) leaderTakenOver(ctx context.Context) error {
	if f.killed == "" {
		return fmt.Errorf("no leader was killed in this scenario")
	}
	var holder string
	err := f.w.eventually(ctx, "another operator process leading", func() error {
		h, _, err := f.leader(ctx)
		if err != nil {
			return err
		}
		if h == f.killed {
			return fmt.Errorf("the killed process %s still holds the Lease", h)
		}
		holder = h
		return nil
	}, await.Within(2*time.Minute))
	if err != nil {
		return err
	}
	// Either replica may win: the standby, or the killed pod's restarted
	// container (a new process, a new identity) if it asks first.
	killedPod, _, _ := strings.Cut(f.killed, "_")
	newPod, _, _ := strings.Cut(holder, "_")
	f.w.Figure("leader fail-over (s)", fmt.Sprintf("%.1f", time.Since(f.killedAt).Seconds()))
	f.w.Figure("new leader", map[bool]string{true: "the killed pod, restarted", false: "the other replica"}[newPod == killedPod])
	return nil
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

// graphInventory is what a namespace holds, by graph.
type graphInventory struct {
	// children counts each graph's descendants by childKey.
	children map[string]map[string]int
	// orphans are objects whose owner is gone, or that carry the
	// operator's managed-by label with no owner.
	orphans []string
	// owned lists every object with an owner or the operator's label
	// (what must be gone once the graphs are).
	owned []string
}

type objMeta struct {
	kind string
	m    *metav1.PartialObjectMetadata
}

// inventory lists the namespace's objects of graphKinds (metadata only)
// and walks each one's owner references up to its graph.
func (f *faultWorld) inventory(ctx context.Context, ns string) (*graphInventory, error) {
	byUID := map[types.UID]objMeta{}
	var all []objMeta
	for _, gvk := range graphKinds() {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		err := f.w.Client.List(ctx, list, client.InNamespace(ns))
		if meta.IsNoMatchError(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("listing %s in %s: %w", gvk.Kind, ns, err)
		}
		for i := range list.Items {
			o := objMeta{kind: gvk.Kind, m: &list.Items[i]}
			byUID[o.m.UID] = o
			all = append(all, o)
		}
	}
	inv := &graphInventory{children: map[string]map[string]int{}}
	for _, o := range all {
		if o.kind == "DynamoGraphDeployment" {
			inv.children[o.m.Name] = map[string]int{}
		}
	}
	for _, o := range all {
		if o.kind == "DynamoGraphDeployment" {
			continue
		}
		id := o.kind + " " + o.m.Name
		managed := o.m.Labels["app.kubernetes.io/managed-by"] == "dynamo-operator"
		if len(o.m.OwnerReferences) == 0 {
			if managed {
				inv.orphans = append(inv.orphans, id+" (the operator's, no owner)")
				inv.owned = append(inv.owned, id)
			}
			continue
		}
		inv.owned = append(inv.owned, id)
		if o.m.DeletionTimestamp != nil {
			continue // on its way out (a pod replaced, a cascade)
		}
		graph, key, err := childKey(o, byUID)
		if err != nil {
			inv.orphans = append(inv.orphans, id+" ("+err.Error()+")")
			continue
		}
		if graph != "" {
			inv.children[graph][key]++
		}
	}
	return inv, nil
}

// childKey walks o's owners up to a graph and names o relative to it:
// "Deployment <graph>-worker"; an object of a generated name is named by
// its owner: "Pod of ReplicaSet of Deployment <graph>-worker". Objects
// owned by something other than a graph's descendants (kube-root-ca.crt
// and the like have no owner) give graph "".
func childKey(o objMeta, byUID map[types.UID]objMeta) (graph, key string, err error) {
	ref := metav1.GetControllerOfNoCopy(o.m)
	if ref == nil {
		ref = &o.m.OwnerReferences[0]
	}
	owner, ok := byUID[ref.UID]
	if !ok {
		return "", "", fmt.Errorf("owner %s %s is gone", ref.Kind, ref.Name)
	}
	if owner.kind == "DynamoGraphDeployment" {
		return owner.m.Name, o.kind + " " + relative(o.m.Name, owner.m.Name), nil
	}
	if len(owner.m.OwnerReferences) == 0 {
		return "", "", nil
	}
	graph, ownerKey, err := childKey(owner, byUID)
	if err != nil || graph == "" {
		return graph, "", err
	}
	if o.kind == "ReplicaSet" || o.m.GenerateName != "" {
		return graph, o.kind + " of " + ownerKey, nil
	}
	return graph, o.kind + " " + relative(o.m.Name, graph), nil
}

func relative(name, graph string) string {
	if rest, ok := strings.CutPrefix(name, graph); ok {
		return "<graph>" + rest
	}
	return name
}

func (f *faultWorld) exactChildren(ctx context.Context, ns string) error {
	if f.reference == nil {
		return fmt.Errorf("no reference graph: add \"a small graph ... is Ready in the namespace ... as the reference\" first")
	}
	inv, err := f.inventory(ctx, ns)
	if err != nil {
		return err
	}
	var problems []string
	duplicates, missing := 0, 0
	for _, g := range f.graphs[ns] {
		got := inv.children[g]
		keys := map[string]bool{}
		for k := range got {
			keys[k] = true
		}
		for k := range f.reference {
			keys[k] = true
		}
		for _, k := range sortedKeys(keys) {
			switch d := got[k] - f.reference[k]; {
			case d > 0:
				duplicates += d
				problems = append(problems, fmt.Sprintf("%s: %d more %s than the reference", g, d, k))
			case d < 0:
				missing -= d
				problems = append(problems, fmt.Sprintf("%s: %d fewer %s than the reference", g, -d, k))
			}
		}
	}
	total := 0
	for _, c := range f.reference {
		total += c
	}
	f.w.Figure("children per graph (reference)", total)
	f.w.Figure("duplicate children", duplicates)
	f.w.Figure("missing children", missing)
	if len(problems) > 0 {
		return fmt.Errorf("graphs differ from the reference graph %v:\n  %s", f.reference, strings.Join(head(problems, 30), "\n  "))
	}
	return nil
}

func (f *faultWorld) noOrphans(ctx context.Context, ns string) error {
	inv, err := f.inventory(ctx, ns)
	if err != nil {
		return err
	}
	f.w.Figure("orphaned children", len(inv.orphans))
	if len(inv.orphans) > 0 {
		return fmt.Errorf("%d orphaned objects in %s:\n  %s", len(inv.orphans), ns, strings.Join(head(inv.orphans, 30), "\n  "))
	}
	return nil
}

// nothingLeft waits until no graph and nothing a graph owned is left (the
// garbage collector removes children once their owner is gone; the
// operator must not bring any back).
func (f *faultWorld) nothingLeft(ctx context.Context, ns string) error {
	start := time.Now()
	var left []string
	err := f.w.eventually(ctx, "nothing the graphs owned left in "+ns, func() error {
		inv, err := f.inventory(ctx, ns)
		if err != nil {
			return err
		}
		left = inv.owned
		for g := range inv.children {
			left = append(left, "DynamoGraphDeployment "+g)
		}
		if len(left) > 0 {
			return fmt.Errorf("%d objects left in %s: %s", len(left), ns, strings.Join(head(left, 20), ", "))
		}
		return nil
	}, await.Within(3*time.Minute))
	f.w.Figure("leftover children", len(left))
	if err == nil {
		f.w.Figure("everything gone after the last delete (s)", fmt.Sprintf("%.1f", time.Since(start).Seconds()))
	}
	return err
}

// scaleOperator helm-upgrades the cluster-wide release, same chart, to n
// operator replicas (a leader and standbys), and waits until they are ready.
func (f *faultWorld) scaleOperator(ctx context.Context, n int) error {
	r, ns, ok := f.w.InstalledRelease(ClusterRelease)
	if !ok {
		return fmt.Errorf("the cluster-wide release is not installed")
	}
	_, err := f.w.Helm.Upgrade(ctx, ClusterRelease, ns, r, fmt.Sprintf("%s=%d", replicasPath, n))
	return err
}

// deleteGraphs deletes every graph in ns with no fault: a clean slate for
// the next scenario on the same simulator (its check is nothingLeft).
func (f *faultWorld) deleteGraphs(ctx context.Context, ns string) error {
	if err := f.w.NeedSim(); err != nil {
		return err
	}
	return f.w.Client.DeleteAllOf(ctx, &v1alpha1.DynamoGraphDeployment{}, client.InNamespace(ns))
}

// --- node loss ---

func (f *faultWorld) gpuGraphReady(ctx context.Context, name, ns string) error {
	if err := f.w.NeedSim(); err != nil {
		return err
	}
	if err := f.w.ensureNamespace(ctx, ns); err != nil {
		return err
	}
	g := builders.MakeGraph(name, ns).
		Service("Frontend", builders.MakeService().Type(v1alpha1.ComponentTypeFrontend)).
		Service("Worker", builders.MakeService().Type(v1alpha1.ComponentTypeWorker).GPUs(1)).
		Obj()
	if err := f.w.Client.Create(ctx, g); err != nil {
		return err
	}
	f.watched = types.NamespacedName{Namespace: ns, Name: name}
	return f.w.eventually(ctx, "the graph "+name+" Ready", func() error { return f.notReady(ctx, ns, []string{name}) })
}

// workerPod is the watched graph's GPU worker pod (not being deleted).
func (f *faultWorld) workerPod(ctx context.Context) (*corev1.Pod, error) {
	var pods corev1.PodList
	if err := f.w.Client.List(ctx, &pods, client.InNamespace(f.watched.Namespace)); err != nil {
		return nil, err
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.DeletionTimestamp != nil || !strings.HasPrefix(p.Name, f.watched.Name+"-") {
			continue
		}
		for _, c := range p.Spec.Containers {
			if q, ok := c.Resources.Limits["nvidia.com/gpu"]; ok && !q.IsZero() {
				return p, nil
			}
		}
	}
	return nil, fmt.Errorf("graph %s has no GPU worker pod", f.watched)
}

func (f *faultWorld) loseWorkerNode(ctx context.Context) error {
	p, err := f.workerPod(ctx)
	if err != nil {
		return err
	}
	if p.Spec.NodeName == "" {
		return fmt.Errorf("pod %s is not scheduled", p.Name)
	}
	f.states = RecordGraphStates(f.w.Client, f.watched)
	f.w.Background(f.states.Halt)
	msg, err := f.fault(ctx, faults.Request{Kind: "node-loss", Node: p.Spec.NodeName})
	if err != nil {
		return err
	}
	f.lostNode, f.lostAt = p.Spec.NodeName, time.Now()
	fmt.Printf("    %s (pod %s)\n", msg, p.Name)
	return nil
}

func (f *faultWorld) pendingThenReady(ctx context.Context) error {
	if f.states == nil {
		return fmt.Errorf("no node was lost in this scenario")
	}
	var onto string
	err := f.w.eventually(ctx, "the graph pending, then Ready with its worker on another node", func() error {
		if f.states.FirstNotReady().IsZero() {
			return fmt.Errorf("the graph has not left Ready yet (states seen: %s)", f.states.String())
		}
		if err := f.notReady(ctx, f.watched.Namespace, []string{f.watched.Name}); err != nil {
			return err
		}
		p, err := f.workerPod(ctx)
		if err != nil {
			return err
		}
		if p.Spec.NodeName == f.lostNode {
			return fmt.Errorf("the worker pod %s is still on the lost node %s", p.Name, f.lostNode)
		}
		onto = p.Spec.NodeName
		return nil
	}, await.Within(4*time.Minute))
	f.states.Halt()
	fmt.Printf("    graph states after the node loss: %s\n", f.states.String())
	if err != nil {
		return err
	}
	f.w.Figure("graph not Ready after the node loss (s)", fmt.Sprintf("%.1f", f.states.FirstNotReady().Sub(f.lostAt).Seconds()))
	f.w.Figure("graph Ready again after the node loss (s)", fmt.Sprintf("%.1f", time.Since(f.lostAt).Seconds()))
	f.w.Figure("worker moved", f.lostNode+" -> "+onto)
	if !f.states.Saw(string(v1alpha1.GraphStatePending)) {
		return fmt.Errorf("the graph left Ready but was never pending: %s", f.states.String())
	}
	return nil
}

// --- certificate expiry ---

func (f *faultWorld) certExpires(ctx context.Context) error {
	f.certEpoch = time.Now()
	msg, err := f.fault(ctx, faults.Request{Kind: "cert-expiry", Secret: ClusterNamespace + "/" + certSecret})
	if err != nil {
		return err
	}
	fmt.Printf("    %s\n", msg)
	return nil
}

// certRenewed waits until the Secret's serving certificate is valid now
// and for a while yet (the operator issued a new one).
func (f *faultWorld) certRenewed(ctx context.Context) error {
	err := f.w.eventually(ctx, "a renewed certificate in the certificate Secret", func() error {
		s := &corev1.Secret{}
		if err := f.w.Client.Get(ctx, client.ObjectKey{Namespace: ClusterNamespace, Name: certSecret}, s); err != nil {
			return err
		}
		block, _ := pem.Decode(s.Data[corev1.TLSCertKey])
		if block == nil {
			return fmt.Errorf("the Secret %s has no PEM certificate", certSecret)
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return err
		}
		if now := time.Now(); now.After(c.NotAfter) || now.Before(c.NotBefore) {
			return fmt.Errorf("the serving certificate is valid %s to %s, not now", c.NotBefore, c.NotAfter)
		}
		return nil
	}, await.Within(2*time.Minute))
	if err == nil {
		f.w.Figure("certificate renewed after (s)", fmt.Sprintf("%.1f", time.Since(f.certEpoch).Seconds()))
	}
	return err
}

// keepSending lets the admission client run on, so that its requests
// straddle the renewal and the webhook server's reload.
func (f *faultWorld) keepSending(ctx context.Context, seconds int) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Duration(seconds) * time.Second):
		return nil
	}
}
