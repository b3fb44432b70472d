package steps

// High availability (scenarios/ha.feature): the chart's two replicas under
// faults that take the leader away (killed, its node lost or drained, a
// helm upgrade), while graphs are created and updated and a client sends
// admissions. Each fault is noted with the pod it hit and whether that pod
// led; the proofs are the time from each fault to the next reconcile (the
// operator pods' V(2) logs), and every write of a replica matched with the
// election Lease's holder at that moment (the audit log: each replica's
// user agent carries its election identity).

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/cucumber/godog"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/internal/await"
	"github.com/dynamoctl/dynamo-operator/operator/app"
	"github.com/dynamoctl/dynamo-operator/sim/cluster"
	"github.com/dynamoctl/dynamo-operator/sim/faults"
)

func registerHASteps(sc *godog.ScenarioContext, w *simWorld) {
	f := w.faultState()
	sc.Step(`^the cluster-wide release runs (\d+) Ready operator replicas on different nodes, one leading$`, f.replicasSpread)
	sc.Step(`^not one graph write was refused$`, f.noWriteRefused)
	sc.Step(`^after each fault a leader reconciled within (\d+) seconds( plus the node's NotReady detection)?$`, f.reconciledAfterFaults)
	sc.Step(`^no operator replica wrote while another led$`, f.noStandbyWrites)
	sc.Step(`^the drain respected the operator's PodDisruptionBudget$`, f.drainRespectedBudget)
	sc.Step(`^every refused admission came within (\d+) seconds of a fault( plus the node's NotReady detection)?$`, f.refusalsAtFaults)
	sc.Step(`^the refused admissions are counted with how long after a fault each came$`, f.refusalFigures)
	sc.Step(`^the Ready condition of every graph in the namespace "([^"]+)" is recorded$`, f.recordReadyFlaps)
	sc.Step(`^no graph left Ready at a generation it was Ready at$`, f.noReadyFlaps)
}

// haFault is one fault that hit an operator pod.
type haFault struct {
	what, pod string
	// leader: the pod led when the fault hit it.
	leader bool
	// graceful: the pod was deleted (SIGTERM, drained); its own later log
	// lines are its shutdown, not a reconcile of the next leader.
	graceful bool
	at       time.Time
}

// haState is the HA steps' part of a fault scenario.
type haState struct {
	// one serializes the faults of a work: each hits a healthy pair.
	one    sync.Mutex
	mu     sync.Mutex
	faults []haFault
	// evictions are the drain's eviction requests, refused the ones the
	// PodDisruptionBudget turned away (429); drained the nodes drained.
	evictions, refused int
	drained            []string
	// dead are the election identities of the leaders killed.
	dead map[string]bool
	// flaps records the graphs' Ready conditions (recordReadyFlaps).
	flaps *readyFlaps
}

func (f *faultWorld) note(h haFault) {
	f.ha.mu.Lock()
	defer f.ha.mu.Unlock()
	f.ha.faults = append(f.ha.faults, h)
}

func (f *faultWorld) operatorDeployment(ctx context.Context) (*appsv1.Deployment, error) {
	d := &appsv1.Deployment{}
	err := f.w.Client.Get(ctx, types.NamespacedName{Namespace: ClusterNamespace, Name: ClusterRelease + "-dynamo-operator"}, d)
	return d, err
}

// replicasReady waits until every replica the release's Deployment asks for
// runs Ready and one leads, and returns the pods and the leader's name. A
// fault hits a healthy pair: two replicas mask one failure at a time.
func (f *faultWorld) replicasReady(ctx context.Context) ([]corev1.Pod, string, error) {
	ow := &world{cluster: &Cluster{Client: f.w.Client}, install: install{releases: map[string]string{ClusterRelease: ClusterNamespace}}}
	var pods []corev1.Pod
	var leader string
	err := f.w.eventually(ctx, "every operator replica Ready, one leading", func() error {
		d, err := f.operatorDeployment(ctx)
		if err != nil {
			return err
		}
		if err := ow.readyPods(ctx, ClusterRelease, int(ptr.Deref(d.Spec.Replicas, 1))); err != nil {
			return err
		}
		if pods, err = OperatorPods(ctx, f.w.Client, ClusterRelease, ClusterNamespace); err != nil {
			return err
		}
		var holder string
		if leader, holder, err = operatorLeader(ctx, f.w.Client, ClusterRelease, ClusterNamespace); err != nil {
			return err
		}
		f.ha.mu.Lock()
		dead := f.ha.dead[holder]
		f.ha.mu.Unlock()
		if dead {
			// The killed process's container restarted in the same pod,
			// under a new identity: the Lease is not yet taken over.
			return fmt.Errorf("the Lease is still held by the killed process %s", holder)
		}
		return nil
	}, await.Within(3*time.Minute))
	return pods, leader, err
}

// holder is the election Lease's holder identity now.
func (f *faultWorld) holder(ctx context.Context) (string, error) {
	l := &coordinationv1.Lease{}
	if err := f.w.Client.Get(ctx, types.NamespacedName{Namespace: ClusterNamespace, Name: leaderElectionLease}, l); err != nil {
		return "", err
	}
	return ptr.Deref(l.Spec.HolderIdentity, ""), nil
}

func podNode(pods []corev1.Pod, name string) string {
	for _, p := range pods {
		if p.Name == name {
			return p.Spec.NodeName
		}
	}
	return ""
}

func (f *faultWorld) replicasSpread(ctx context.Context, n int) error {
	if err := f.w.NeedSim(); err != nil {
		return err
	}
	pods, leader, err := f.replicasReady(ctx)
	if err != nil {
		return err
	}
	nodes := map[string]bool{}
	for _, p := range pods {
		nodes[p.Spec.NodeName] = true
	}
	if len(pods) != n || len(nodes) != n {
		return fmt.Errorf("%d operator pods on %d nodes, want %d on %d", len(pods), len(nodes), n, n)
	}
	fmt.Printf("    operator replicas on %v; %s leads\n", sortedKeys(nodes), leader)
	return nil
}

// onHealthyPair makes a disruption of do, which gets the release's pods
// and its leader once every replica is Ready and a live process leads and
// has reconciled since the last fault.
// Faults hit one at a time: the next waits until do returned (a kill seen,
// a drain or an upgrade done) and the pair is healthy again.
func onHealthyPair(do func(f *faultWorld, ctx context.Context, seed uint64, pods []corev1.Pod, leader string) (string, error)) disruption {
	return func(f *faultWorld, ctx context.Context, seed uint64) (string, error) {
		f.ha.one.Lock()
		defer f.ha.one.Unlock()
		pods, leader, err := f.replicasReady(ctx)
		if err != nil {
			return "", err
		}
		if err := f.reconcilingSinceLastFault(ctx); err != nil {
			return "", err
		}
		return do(f, ctx, seed, pods, leader)
	}
}

// reconcilingSinceLastFault waits until a leader has reconciled since the
// last fault noted: a fault then hits a pair whose fail-over is complete,
// not a leader still starting its controllers.
func (f *faultWorld) reconcilingSinceLastFault(ctx context.Context) error {
	f.ha.mu.Lock()
	var last *haFault
	if n := len(f.ha.faults); n > 0 {
		h := f.ha.faults[n-1]
		last = &h
	}
	f.ha.mu.Unlock()
	if last == nil || !last.leader {
		return nil // a standby's death leaves the leader reconciling
	}
	skip := ""
	if last.graceful {
		skip = last.pod
	}
	return f.w.eventually(ctx, "a reconcile since the last fault", func() error {
		byPod, err := f.reconcileTimes()
		if err != nil {
			return err
		}
		if _, ok := nextReconcile(byPod, last.at, skip); !ok {
			return fmt.Errorf("no reconcile logged since %s %s at %s", last.what, last.pod, last.at.Format("15:04:05.000"))
		}
		return nil
	}, await.Within(2*time.Minute))
}

// killReplica SIGKILLs one operator replica, chosen with seed.
func (f *faultWorld) killReplica(ctx context.Context, seed uint64, pods []corev1.Pod, leader string) (string, error) {
	// The seed itself picks: a PCG seeded (s, s) gives the same first bit
	// for most seeds, and the same pod would die every time.
	pod := pods[seed%uint64(len(pods))]
	target := pod.Name
	holder, err := f.holder(ctx)
	if err != nil {
		return "", err
	}
	msg, err := f.retryFault(ctx, faults.Request{Kind: "pod-kill", Pod: ClusterNamespace + "/" + target})
	if err != nil {
		return msg, err
	}
	if target == leader {
		f.ha.mu.Lock()
		if f.ha.dead == nil {
			f.ha.dead = map[string]bool{}
		}
		f.ha.dead[holder] = true
		f.ha.mu.Unlock()
	}
	f.note(haFault{what: "killed", pod: target, leader: target == leader, at: time.Now()})
	fmt.Printf("    %s killed %s (%s)\n", time.Now().Format("15:04:05.000"), target, map[bool]string{true: "leader", false: "standby"}[target == leader])
	err = f.w.eventually(ctx, "the kill of "+target+" seen", func() error {
		now, err := OperatorPods(ctx, f.w.Client, ClusterRelease, ClusterNamespace)
		if err != nil {
			return err
		}
		for i := range now {
			if now[i].Name == target {
				if n := restarts(now[i].Status.ContainerStatuses); n <= restarts(pod.Status.ContainerStatuses) {
					return fmt.Errorf("pod %s restarted %d times, as before the kill", target, n)
				}
				return nil
			}
		}
		return nil // gone: replaced
	}, await.Within(time.Minute))
	return map[bool]string{true: "the leader", false: "a standby"}[target == leader] + ": " + msg, err
}

// deleteReplica deletes one operator replica's pod, chosen with seed, as
// `kubectl delete pod` does (SIGTERM, the pod's grace period): it fails its
// readiness, answers admissions for the drain, releases the Lease. It
// returns once the pod is gone.
func (f *faultWorld) deleteReplica(ctx context.Context, seed uint64, pods []corev1.Pod, leader string) (string, error) {
	pod := pods[seed%uint64(len(pods))]
	target := pod.Name
	if err := f.w.Client.Delete(ctx, &pod); err != nil {
		return "", err
	}
	at := time.Now()
	f.note(haFault{what: "deleted", pod: target, leader: target == leader, graceful: true, at: at})
	role := map[bool]string{true: "the leader", false: "a standby"}[target == leader]
	fmt.Printf("    %s deleted %s (%s)\n", at.Format("15:04:05.000"), target, role)
	err := f.w.eventually(ctx, "the pod "+target+" gone", func() error {
		p := &corev1.Pod{}
		err := f.w.Client.Get(ctx, types.NamespacedName{Namespace: pod.Namespace, Name: target}, p)
		if apierrors.IsNotFound(err) || (err == nil && p.UID != pod.UID) {
			return nil
		}
		if err != nil {
			return err
		}
		return fmt.Errorf("the pod %s is still terminating", target)
	}, await.Within(2*time.Minute))
	return fmt.Sprintf("%s: pod %s deleted, gone after %.1fs", role, target, time.Since(at).Seconds()), err
}

// loseLeaderNode loses the node under the leading replica (sim/faults
// node-loss: the machine goes dark with the operator's process).
func (f *faultWorld) loseLeaderNode(ctx context.Context, _ uint64, pods []corev1.Pod, leader string) (string, error) {
	node := podNode(pods, leader)
	msg, err := f.fault(ctx, faults.Request{Kind: "node-loss", Node: node})
	if err != nil {
		return msg, err
	}
	f.lostNode, f.lostAt = node, time.Now()
	f.note(haFault{what: "node lost", pod: leader, leader: true, at: f.lostAt})
	return msg, nil
}

// drainLeaderNode does what `kubectl drain` does to the leading replica's
// node: cordon it, evict every pod on it through the Eviction API (a 429,
// the PodDisruptionBudget's refusal, is retried every second), then, once
// the evicted replica's replacement is Ready elsewhere, uncordon it.
func (f *faultWorld) drainLeaderNode(ctx context.Context, _ uint64, pods []corev1.Pod, leader string) (string, error) {
	node := podNode(pods, leader)
	if err := f.cordon(ctx, node, true); err != nil {
		return "", err
	}
	var onNode corev1.PodList
	if err := f.w.Client.List(ctx, &onNode, client.MatchingFields{"spec.nodeName": node}); err != nil {
		return "", err
	}
	evicted := 0
	for i := range onNode.Items {
		p := &onNode.Items[i]
		if p.DeletionTimestamp != nil {
			continue
		}
		err := await.Until(ctx, "evicting "+p.Namespace+"/"+p.Name, func() error {
			f.ha.mu.Lock()
			f.ha.evictions++
			f.ha.mu.Unlock()
			err := f.w.Client.SubResource("eviction").Create(ctx, p, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace}})
			if apierrors.IsTooManyRequests(err) {
				f.ha.mu.Lock()
				f.ha.refused++
				f.ha.mu.Unlock()
			}
			return client.IgnoreNotFound(err)
		}, await.Within(3*time.Minute), await.Every(time.Second))
		if err != nil {
			return "", err
		}
		evicted++
		if p.Name == leader {
			f.note(haFault{what: "drained", pod: leader, leader: true, graceful: true, at: time.Now()})
		}
	}
	f.ha.mu.Lock()
	f.ha.drained = append(f.ha.drained, node)
	f.ha.mu.Unlock()
	if _, _, err := f.replicasReady(ctx); err != nil {
		return "", err
	}
	if err := f.cordon(ctx, node, false); err != nil {
		return "", err
	}
	return fmt.Sprintf("node %s drained (%d pods evicted, %s the leader among them) and uncordoned", node, evicted, leader), nil
}

func (f *faultWorld) cordon(ctx context.Context, node string, on bool) error {
	patch := fmt.Sprintf(`{"spec":{"unschedulable":%t}}`, on)
	return f.w.Client.Patch(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}, client.RawPatch(types.MergePatchType, []byte(patch)))
}

// upgradeRelease helm-upgrades the cluster-wide release to the chart it
// runs with a new pod annotation, so its pods roll out as in any upgrade
// that changes them (the image, a value). Each pod that leads when it is
// seen terminating is a fault of the leader at that moment (the rollout
// may hand leadership over twice).
func (f *faultWorld) upgradeRelease(ctx context.Context, _ uint64, pods []corev1.Pod, _ string) (string, error) {
	r, ns, ok := f.w.InstalledRelease(ClusterRelease)
	if !ok {
		return "", fmt.Errorf("the cluster-wide release is not installed")
	}
	watchCtx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	for _, p := range pods {
		wg.Add(1)
		go func(name string) {
			defer wg.Done()
			_ = await.Until(watchCtx, "the pod "+name+" terminating", func() error {
				holder, herr := f.holder(watchCtx)
				now, err := OperatorPods(watchCtx, f.w.Client, ClusterRelease, ns)
				if err != nil {
					return err
				}
				for i := range now {
					if now[i].Name == name && now[i].DeletionTimestamp == nil {
						return fmt.Errorf("still running")
					}
				}
				// Seen going: it led if it still held the Lease just before
				// (a pod releases it only once it stops).
				f.note(haFault{what: "upgraded", pod: name, leader: herr == nil && strings.HasPrefix(holder, name+"_"), graceful: true, at: time.Now()})
				return nil
			}, await.Within(5*time.Minute), await.Every(100*time.Millisecond))
		}(p.Name)
	}
	start := time.Now()
	// An annotation no earlier upgrade of the chain set.
	if _, err := f.w.Helm.Upgrade(ctx, ClusterRelease, ns, r, fmt.Sprintf("dynamo-operator.controllerManager.podAnnotations.scenario-upgrade=at-%d", start.UnixNano())); err != nil {
		return "", err
	}
	took := time.Since(start)
	if _, _, err := f.replicasReady(ctx); err != nil {
		return "", err
	}
	stop()
	wg.Wait()
	return fmt.Sprintf("helm upgrade rolled both replicas in %.1fs", took.Seconds()), nil
}

func (f *faultWorld) noWriteRefused(context.Context) error {
	if f.refused > 0 {
		return fmt.Errorf("%d graph writes were refused (and retried): %v", f.refused, f.refusedBy)
	}
	return nil
}

// reconcileTimes are the times of the reconciles the operator pods'
// logs show (any graph or component), by log file, sorted.
func (f *faultWorld) reconcileTimes() (map[string][]time.Time, error) {
	files, err := filepath.Glob(filepath.Join(f.w.Sim.PodLogs(), ClusterNamespace+"_"+ClusterRelease+"-dynamo-operator-*.log"))
	if err != nil {
		return nil, err
	}
	out := map[string][]time.Time{}
	for _, path := range files {
		ts, err := reconcilesIn(path)
		if err != nil {
			return nil, err
		}
		out[strings.TrimSuffix(strings.TrimPrefix(filepath.Base(path), ClusterNamespace+"_"), ".log")] = ts
	}
	return out, nil
}

func reconcilesIn(path string) ([]time.Time, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = file.Close() }()
	var out []time.Time
	sc := bufio.NewScanner(file)
	sc.Buffer(make([]byte, 0, 1<<20), 1<<24)
	for sc.Scan() {
		var l logLine
		if json.Unmarshal(sc.Bytes(), &l) != nil || l.Controller == "" || (l.Graph == nil && l.Component == nil) {
			continue
		}
		sec := int64(l.TS)
		out = append(out, time.Unix(sec, int64((l.TS-float64(sec))*1e9)))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Before(out[j]) })
	return out, sc.Err()
}

// nextReconcile is the first reconcile after t in any operator pod's log
// but skip's.
func nextReconcile(byPod map[string][]time.Time, t time.Time, skip string) (time.Time, bool) {
	var best time.Time
	for pod, ts := range byPod {
		if pod == skip {
			continue
		}
		i := sort.Search(len(ts), func(i int) bool { return ts[i].After(t) })
		if i < len(ts) && (best.IsZero() || ts[i].Before(best)) {
			best = ts[i]
		}
	}
	return best, !best.IsZero()
}

// reconciledAfterFaults: after each fault that took the leader away, a
// leader reconciled within bound seconds (plus, for a lost node, the time
// the cluster took to see it NotReady).
func (f *faultWorld) reconciledAfterFaults(ctx context.Context, bound int, plusDetection string) error {
	f.ha.mu.Lock()
	hits := append([]haFault(nil), f.ha.faults...)
	f.ha.mu.Unlock()
	if len(hits) == 0 {
		return fmt.Errorf("no fault hit an operator pod in this scenario")
	}
	detection := time.Duration(0)
	if plusDetection != "" {
		d, err := f.notReadyDetection(ctx)
		if err != nil {
			return err
		}
		detection = d
		f.w.Figure("node NotReady after the loss (s)", fmt.Sprintf("%.1f", d.Seconds()))
	}
	limit := time.Duration(bound)*time.Second + detection
	drain, err := f.operatorDrain(ctx)
	if err != nil {
		return err
	}
	gaps := make([]time.Duration, len(hits))
	err = f.w.eventually(ctx, "a reconcile logged after every fault", func() error {
		byPod, err := f.reconcileTimes()
		if err != nil {
			return err
		}
		for i, h := range hits {
			skip := ""
			if h.graceful {
				skip = h.pod
			}
			next, ok := nextReconcile(byPod, h.at, skip)
			if !ok && !h.leader {
				gaps[i] = -1 // the leader, untouched, had nothing left to do
				continue
			}
			if !ok {
				return fmt.Errorf("no reconcile logged since %s %s at %s", h.what, h.pod, h.at.Format("15:04:05.000"))
			}
			gaps[i] = next.Sub(h.at)
			if h.graceful && h.leader {
				// A deleted leader reconciles on through its drain and
				// hands over at its end: the successor's wait counts from
				// there.
				gaps[i] -= drain
			}
		}
		return nil
	}, await.Within(2*time.Minute))
	if err != nil {
		return err
	}
	var worst time.Duration
	var over, lines []string
	leaderFaults := 0
	for i, h := range hits {
		role := map[bool]string{true: "leader", false: "standby"}[h.leader]
		next := fmt.Sprintf("next reconcile after %.1fs", gaps[i].Seconds())
		if h.graceful && h.leader && gaps[i] >= 0 {
			next = fmt.Sprintf("next reconcile %.1fs after its %s drain", gaps[i].Seconds(), drain)
		}
		if gaps[i] < 0 {
			next = "nothing left to reconcile"
		}
		lines = append(lines, fmt.Sprintf("%s %s (%s) at %s: %s", h.what, h.pod, role, h.at.Format("15:04:05.000"), next))
		if !h.leader {
			continue
		}
		leaderFaults++
		worst = max(worst, gaps[i])
		if gaps[i] > limit {
			over = append(over, lines[len(lines)-1])
		}
	}
	fmt.Printf("    faults and the next reconcile:\n      %s\n", strings.Join(lines, "\n      "))
	f.w.Figure("faults (of the leader)", fmt.Sprintf("%d (%d)", len(hits), leaderFaults))
	f.w.Figure("leader fault -> next reconcile, worst (s)", fmt.Sprintf("%.1f", worst.Seconds()))
	if len(over) > 0 {
		return fmt.Errorf("no reconcile within %s of %d faults:\n  %s", limit, len(over), strings.Join(over, "\n  "))
	}
	return nil
}

// operatorDrain is the release's webhook drain: how long a deleted
// replica answers admissions (and, leading, reconciles) before it stops,
// from the operator Deployment's --webhook-drain.
func (f *faultWorld) operatorDrain(ctx context.Context) (time.Duration, error) {
	d, err := f.operatorDeployment(ctx)
	if err != nil {
		return 0, err
	}
	for _, c := range d.Spec.Template.Spec.Containers {
		for _, a := range c.Args {
			if v, ok := strings.CutPrefix(a, "--webhook-drain="); ok {
				return time.ParseDuration(v)
			}
		}
	}
	return 0, fmt.Errorf("the operator Deployment %s sets no --webhook-drain", d.Name)
}

// notReadyDetection is how long after the loss the lost node's Ready
// condition left True.
func (f *faultWorld) notReadyDetection(ctx context.Context) (time.Duration, error) {
	if f.lostNode == "" {
		return 0, fmt.Errorf("no node was lost in this scenario")
	}
	var d time.Duration
	err := f.w.eventually(ctx, "the lost node "+f.lostNode+" NotReady", func() error {
		n := &corev1.Node{}
		if err := f.w.Client.Get(ctx, types.NamespacedName{Name: f.lostNode}, n); err != nil {
			return err
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status != corev1.ConditionTrue {
				d = c.LastTransitionTime.Sub(f.lostAt)
				return nil
			}
		}
		return fmt.Errorf("node %s is still Ready", f.lostNode)
	}, await.Within(2*time.Minute))
	return d, err
}

// certificateWrite: a write of the webhook serving certificate's machinery:
// the certificate Secret, and its CA injected into the webhook
// configurations and the CRDs' conversion webhook.
func certificateWrite(x cluster.Write) bool {
	switch x.Resource {
	case "customresourcedefinitions", "validatingwebhookconfigurations", "mutatingwebhookconfigurations":
		return true
	case "secrets":
		return x.Namespace == ClusterNamespace && x.Name == certSecret
	}
	return false
}

// electionLease: a write of the cluster-wide release's election Lease.
func electionLease(x cluster.Write) bool {
	return x.Resource == "leases" && x.Namespace == ClusterNamespace && x.Name == leaderElectionLease
}

// noStandbyWrites matches every write of the operator's ServiceAccount in
// the audit log with the election Lease's holder when the API server got
// it; a replica that does not lead writes nothing, but the serving
// certificate's objects (certificateWrite) before any replica led: the
// first install's certificate, which any replica makes (certs.Options.Leading). A replica holds the Lease from its first successful write of it (an
// acquisition) until another replica's; the writer is the identity in the
// request's user agent. Writes of no replica (the apply-crds init
// container, which applies the CRDs on every pod start by design) may only
// be CRDs.
func (f *faultWorld) noStandbyWrites(context.Context) error {
	writes, err := f.w.Sim.WritesBy(f.w.OperatorUser(ClusterRelease))
	if err != nil {
		return err
	}
	type term struct {
		id   string
		from time.Time
	}
	var terms []term
	for _, x := range writes {
		if electionLease(x) && x.Code < 300 {
			if id := app.ReplicaIdentity(x.UserAgent); len(terms) == 0 || terms[len(terms)-1].id != id {
				terms = append(terms, term{id: id, from: x.At})
			}
		}
	}
	leaderAt := func(t time.Time) string {
		i := sort.Search(len(terms), func(i int) bool { return terms[i].from.After(t) })
		if i == 0 {
			return ""
		}
		return terms[i-1].id
	}
	byLeader, crds, bootstrap := 0, 0, 0
	var standby, other, certs []string
	for _, x := range writes {
		if electionLease(x) {
			continue
		}
		id := app.ReplicaIdentity(x.UserAgent)
		switch {
		case id == "" && x.Resource == "customresourcedefinitions":
			crds++
		case id == "":
			other = append(other, x.At.Format("15:04:05.000")+" "+x.Line+" ("+x.UserAgent+")")
		case leaderAt(x.Received) == id:
			byLeader++
		case leaderAt(x.Received) == "" && certificateWrite(x):
			bootstrap++
		case certificateWrite(x):
			certs = append(certs, fmt.Sprintf("%s %s by %s while %q led", x.Received.Format("15:04:05.000"), x.Line, id, leaderAt(x.Received)))
		default:
			standby = append(standby, fmt.Sprintf("%s %s by %s while %q led", x.Received.Format("15:04:05.000"), x.Line, id, leaderAt(x.Received)))
		}
	}
	f.w.Figure("leader terms seen", len(terms))
	f.w.Figure("writes by the leader", byLeader)
	f.w.Figure("writes by a replica not leading", len(standby))
	f.w.Figure("certificate writes by a replica not leading", len(certs))
	f.w.Figure("certificate writes before any replica led", bootstrap)
	f.w.Figure("CRD applies by the apply-crds init container", crds)
	var errs []error
	if len(terms) < 2 {
		errs = append(errs, fmt.Errorf("the audit log shows %d leader terms: the scenario took no leadership away", len(terms)))
	}
	if len(certs) > 0 {
		errs = append(errs, fmt.Errorf("%d certificate writes by a replica that did not lead (the leader alone writes them once one leads):\n  %s", len(certs), strings.Join(head(certs, 20), "\n  ")))
	}
	if len(standby) > 0 {
		errs = append(errs, fmt.Errorf("%d writes by a replica that did not lead:\n  %s", len(standby), strings.Join(head(standby, 20), "\n  ")))
	}
	if len(other) > 0 {
		errs = append(errs, fmt.Errorf("%d writes of the operator's ServiceAccount by no replica, beyond the CRDs:\n  %s", len(other), strings.Join(head(other, 20), "\n  ")))
	}
	return errors.Join(errs...)
}

func (f *faultWorld) drainRespectedBudget(ctx context.Context) error {
	f.ha.mu.Lock()
	evictions, refused, drained := f.ha.evictions, f.ha.refused, append([]string(nil), f.ha.drained...)
	f.ha.mu.Unlock()
	if len(drained) == 0 {
		return fmt.Errorf("no node was drained in this scenario")
	}
	pdb := &policyv1.PodDisruptionBudget{}
	if err := f.w.Client.Get(ctx, types.NamespacedName{Namespace: ClusterNamespace, Name: ClusterRelease + "-dynamo-operator"}, pdb); err != nil {
		return fmt.Errorf("the release's PodDisruptionBudget: %w", err)
	}
	f.w.Figure("eviction requests (refused by a PodDisruptionBudget)", fmt.Sprintf("%d (%d)", evictions, refused))
	if got := pdb.Spec.MinAvailable; got == nil || got.IntValue() != 1 {
		return fmt.Errorf("the PodDisruptionBudget's minAvailable is %v, want 1", got)
	}
	if evictions == 0 {
		return fmt.Errorf("the drain evicted nothing")
	}
	return nil
}

// refusalsAtFaults: no admission was refused (the client's dry-runs and the
// graph writes) but in the moments after a fault, within window (plus,
// after a lost node, the time the cluster took to see it NotReady). A
// SIGKILLed replica's pod stays in the webhook Service's endpoints until its
// death is seen (its kubelet writes it at once; a lost node's pod, until
// the node lifecycle controller marks it), and the API server does not
// retry an admission call a dead endpoint failed: those are the calls that
// fail. It stops the admission client.
func (f *faultWorld) refusalsAtFaults(ctx context.Context, window int, plusDetection string) error {
	a, err := f.w.haltAdmissionClient()
	if err != nil {
		return err
	}
	failed := a.failed.Load()
	f.w.Figure("graph writes refused (and retried)", f.refused)
	limit := time.Duration(window) * time.Second
	if plusDetection != "" {
		d, err := f.notReadyDetection(ctx)
		if err != nil {
			return err
		}
		limit += d
	}
	f.ha.mu.Lock()
	hits := append([]haFault(nil), f.ha.faults...)
	f.ha.mu.Unlock()
	// A refusal is seen once the request failed; the fault's moment is
	// noted once the fault was done: allow a second before it.
	near := func(t time.Time) bool {
		for _, h := range hits {
			if !t.Before(h.at.Add(-time.Second)) && !t.After(h.at.Add(limit)) {
				return true
			}
		}
		return false
	}
	var apart []string
	failures := a.Failures()
	for i, t := range a.FailedAt() {
		if !near(t) {
			apart = append(apart, "admission "+failures[i])
		}
	}
	for _, t := range f.refusedAt {
		if !near(t) {
			apart = append(apart, "graph write refused at "+t.Format("15:04:05.000"))
		}
	}
	if failed > 0 {
		fmt.Printf("    failed admissions:\n      %s\n", strings.Join(head(failures, 20), "\n      "))
	}
	if len(apart) > 0 {
		return fmt.Errorf("%d refusals more than %s after any fault:\n  %s", len(apart), limit, strings.Join(head(apart, 20), "\n  "))
	}
	return nil
}
