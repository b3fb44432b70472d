package steps

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cucumber/godog"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/dynamoctl/dynamo-operator/internal/await"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/render"
)

// What happens to a multinode service's groups when a node goes or the
// image changes (simulator only): the real LeaderWorkerSet controller
// recreates or replaces whole groups, and the graph says so.

// TaintOutOfService is the taint an administrator puts on a node that is
// gone for good (Kubernetes' non-graceful node shutdown): the pod garbage
// collector then deletes the pods still bound to it, which no kubelet will
// ever confirm as terminated.
const TaintOutOfService = "node.kubernetes.io/out-of-service"

// groups is a scenario's state of these steps.
type groups struct {
	lostNode          string
	lostAt, offlineAt time.Time
	// before are the UIDs of the lost group's pods before the loss.
	before map[types.UID]bool
	states *GraphStates
	roll   *groupRollout
}

func registerGroupSteps(sc *godog.ScenarioContext, w *world) {
	sc.After(func(ctx context.Context, _ *godog.Scenario, err error) (context.Context, error) {
		if w.groups.states != nil {
			w.groups.states.Halt()
		}
		w.groups = groups{}
		return ctx, nil
	})
	sc.Step(`^the node of a worker of group (\d+) of the dcd `+quoted+` is lost, and an admin marks it out of service once it is NotReady$`,
		w.loseGroupWorkerNode)
	sc.Step(`^the dgd `+quoted+` goes pending, then Ready again with group (\d+) of the dcd `+quoted+` recreated away from the lost node, and the times are reported$`,
		w.groupRecreated)
	sc.Step(`^I patch the dgd `+quoted+` with the following, watching the groups of the dcd `+quoted+` until its rollout is done:$`,
		w.patchWatchingGroups)
	sc.Step(`^the dcd `+quoted+` never had fewer than (\d+) whole groups Ready during the rollout, and never more than one group being replaced$`,
		unquote1n(w.groupsRolledOneAtATime))
	sc.Step(`^every pod of the dcd `+quoted+` runs the image `+quoted+`$`, w.podsRunImage)
}

// loseGroupWorkerNode stops the heartbeats of the node of the group's
// first worker (not its leader), as a machine that went dark, and once the
// node is NotReady puts the out-of-service taint on it, as an administrator
// does for a machine that will not come back.
func (w *world) loseGroupWorkerNode(ctx context.Context, group int, component string) error {
	component = unescape(component)
	byGroup, _, err := w.groupPods(ctx, component)
	if err != nil {
		return err
	}
	pods := byGroup[strconv.Itoa(group)]
	sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
	var worker *corev1.Pod
	for i := range pods {
		if pods[i].Labels[lwsv1.WorkerIndexLabelKey] != "0" && pods[i].Spec.NodeName != "" {
			worker = &pods[i]
			break
		}
	}
	if worker == nil {
		return fmt.Errorf("group %d of the dcd %s has no scheduled worker pod", group, component)
	}
	graph := worker.Labels[render.LabelGraphName]
	if graph == "" {
		return fmt.Errorf("pod %s names no graph (label %s)", worker.Name, render.LabelGraphName)
	}
	w.groups.before = map[types.UID]bool{}
	for _, p := range pods {
		w.groups.before[p.UID] = true
	}
	w.groups.states = RecordGraphStates(w.cluster.Client, types.NamespacedName{Namespace: w.namespace, Name: graph})
	node := worker.Spec.NodeName
	if err := w.fault(ctx, Fault{Kind: "node-loss", Node: node}); err != nil {
		return err
	}
	w.groups.lostNode, w.groups.lostAt = node, time.Now()
	err = w.eventually(ctx, "the node of a worker of group "+strconv.Itoa(group)+" of "+component+" NotReady", func() error {
		n := &corev1.Node{}
		if err := w.cluster.Client.Get(ctx, client.ObjectKey{Name: node}, n); err != nil {
			return err
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status != corev1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("node %s is still Ready", node)
	}, await.Within(2*time.Minute))
	if err != nil {
		return err
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n := &corev1.Node{}
		if err := w.cluster.Client.Get(ctx, client.ObjectKey{Name: node}, n); err != nil {
			return err
		}
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: TaintOutOfService, Value: "nodeshutdown", Effect: corev1.TaintEffectNoExecute})
		return w.cluster.Client.Update(ctx, n)
	})
	if err != nil {
		return fmt.Errorf("tainting node %s out of service: %w", node, err)
	}
	w.groups.offlineAt = time.Now()
	fmt.Printf("    node %s of pod %s lost; NotReady and out of service %.1fs later\n", node, worker.Name, w.groups.offlineAt.Sub(w.groups.lostAt).Seconds())
	return nil
}

// groupRecreated waits until the graph, having gone pending, is Ready
// again with the group made anew: nodeCount pods, all Ready, none of
// before the loss, none on the lost node.
func (w *world) groupRecreated(ctx context.Context, graph string, group int, component string) error {
	graph, component = unescape(graph), unescape(component)
	g := w.groups
	if g.states == nil {
		return errors.New("no node was lost in this scenario")
	}
	var placed []string
	err := w.eventually(ctx, "group "+strconv.Itoa(group)+" of "+component+" recreated away from the lost node, and "+graph+" Ready", func() error {
		if g.states.First(string(v1alpha1.GraphStatePending)).IsZero() {
			return fmt.Errorf("the graph has not been pending (states seen: %s)", g.states)
		}
		if err := w.fieldEquals(ctx, "dgd", graph, `.status.conditions[?(@.type=="Ready")].status`, "True"); err != nil {
			return err
		}
		byGroup, nodeCount, err := w.groupPods(ctx, component)
		if err != nil {
			return err
		}
		pods := byGroup[strconv.Itoa(group)]
		if len(pods) != nodeCount {
			return fmt.Errorf("group %d has %d pods, want %d", group, len(pods), nodeCount)
		}
		placed = placed[:0]
		for _, p := range pods {
			switch {
			case g.before[p.UID]:
				return fmt.Errorf("pod %s is the one from before the loss", p.Name)
			case p.Spec.NodeName == g.lostNode:
				return fmt.Errorf("pod %s is on the lost node %s", p.Name, g.lostNode)
			case !podReady(&p):
				return fmt.Errorf("pod %s is not Ready", p.Name)
			}
			placed = append(placed, p.Name+"@"+p.Spec.NodeName)
		}
		return nil
	}, await.Within(4*time.Minute))
	g.states.Halt()
	fmt.Printf("    graph states after the node loss: %s\n", g.states)
	if err != nil {
		return err
	}
	sort.Strings(placed)
	fmt.Printf("    graph pending %.1fs after the node loss, Ready again %.1fs after it (%.1fs after the node was marked out of service); group %d now %s\n",
		g.states.First(string(v1alpha1.GraphStatePending)).Sub(g.lostAt).Seconds(), time.Since(g.lostAt).Seconds(),
		time.Since(g.offlineAt).Seconds(), group, strings.Join(placed, " "))
	return nil
}

// GraphStates polls a graph's status.state and Ready condition every
// 250 ms from when it is made, and keeps each change with when it was first
// seen. The fault scenarios (faults.go) use it too.
type GraphStates struct {
	mu       sync.Mutex
	changes  []string
	firsts   map[string]time.Time
	notReady time.Time
	stop     func()
	done     chan struct{}
}

// RecordGraphStates starts recording the graph key until Halt.
func RecordGraphStates(c client.Client, key types.NamespacedName) *GraphStates {
	ctx, cancel := context.WithCancel(context.Background())
	r := &GraphStates{firsts: map[string]time.Time{}, stop: cancel, done: make(chan struct{})}
	start := time.Now()
	last := ""
	go func() {
		defer close(r.done)
		// A sample every 250 ms until Halt: a recorder, not a wait.
		wait.UntilWithContext(ctx, func(ctx context.Context) {
			g := &v1alpha1.DynamoGraphDeployment{}
			if err := c.Get(ctx, key, g); err != nil {
				return
			}
			ready := "Unknown"
			if cond := meta.FindStatusCondition(g.Status.Conditions, v1alpha1.ConditionReady); cond != nil {
				ready = string(cond.Status)
			}
			state := string(g.Status.State)
			now := time.Now()
			r.mu.Lock()
			defer r.mu.Unlock()
			if cur := state + "/Ready=" + ready; cur != last {
				r.changes = append(r.changes, fmt.Sprintf("+%.1fs %s", now.Sub(start).Seconds(), cur))
				last = cur
			}
			if _, ok := r.firsts[state]; !ok {
				r.firsts[state] = now
			}
			if ready != "True" && r.notReady.IsZero() {
				r.notReady = now
			}
		}, 250*time.Millisecond)
	}()
	return r
}

// First is when state was first seen; zero if never.
func (r *GraphStates) First(state string) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.firsts[state]
}

// Saw reports whether state was seen.
func (r *GraphStates) Saw(state string) bool { return !r.First(state).IsZero() }

// FirstNotReady is when the Ready condition was first seen other than
// True; zero if never.
func (r *GraphStates) FirstNotReady() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.notReady
}

// Halt stops the recording; it may be called more than once.
func (r *GraphStates) Halt() {
	r.stop()
	<-r.done
}

func (r *GraphStates) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.changes, ", ")
}

// groupRollout is what the watch of a multinode component's pods saw
// during one rollout.
type groupRollout struct {
	component string
	// fewestWhole is the fewest groups whole and Ready at any moment;
	// mostReplaced the most groups not whole and Ready at once.
	fewestWhole, mostReplaced int
	took                      time.Duration
}

// patchWatchingGroups watches the component's pods (watchPodsThrough)
// while it patches the graph, until the rollout is done: replicas groups of
// nodeCount Ready pods, none of a template revision from before the patch.
// At each event it counts the groups whole (nodeCount Ready pods of one
// revision) and the others.
func (w *world) patchWatchingGroups(ctx context.Context, graph, component string, doc *godog.DocString) error {
	graph, component = unescape(graph), unescape(component)
	dcd := &v1alpha1.DynamoComponentDeployment{}
	if err := w.cluster.Client.Get(ctx, client.ObjectKey{Namespace: w.namespace, Name: component}, dcd); err != nil {
		return err
	}
	if dcd.Spec.Multinode == nil {
		return fmt.Errorf("dcd %s is not multinode", component)
	}
	nodeCount := int(dcd.Spec.Multinode.NodeCount)
	replicas := 1
	if dcd.Spec.Replicas != nil {
		replicas = int(*dcd.Spec.Replicas)
	}
	before := map[string]bool{} // template revisions before the patch
	rec := &groupRollout{component: component}
	var start time.Time
	pods, err := w.watchPodsThrough(ctx, render.LabelComponent+"="+component, 6*time.Minute, func(pods map[string]*corev1.Pod) error {
		for _, p := range pods {
			before[p.Labels[lwsv1.RevisionKey]] = true
		}
		rec.fewestWhole, rec.mostReplaced = countGroups(pods, nodeCount)
		start = time.Now()
		return w.patchWith(ctx, "dgd", graph, doc)
	}, func(pods map[string]*corev1.Pod) bool {
		whole, replaced := countGroups(pods, nodeCount)
		rec.fewestWhole = min(rec.fewestWhole, whole)
		rec.mostReplaced = max(rec.mostReplaced, replaced)
		return groupRolloutDone(pods, before, replicas, nodeCount)
	})
	if err != nil {
		return fmt.Errorf("the rollout of the dcd %s: %w; pods: %s", component, err, describeGroupPods(pods))
	}
	rec.took = time.Since(start)
	w.groups.roll = rec
	fmt.Printf("    dcd %s: rollout of %d groups of %d done in %.1fs; fewest whole groups Ready at any moment %d, most groups being replaced at once %d\n",
		component, replicas, nodeCount, rec.took.Seconds(), rec.fewestWhole, rec.mostReplaced)
	return nil
}

// countGroups counts the groups whose nodeCount pods are all Ready and of
// one template revision (whole), and the other groups that have pods.
func countGroups(pods map[string]*corev1.Pod, nodeCount int) (whole, other int) {
	type group struct {
		ready     int
		revisions map[string]bool
	}
	groups := map[string]*group{}
	for _, p := range pods {
		key := p.Labels[lwsv1.GroupIndexLabelKey]
		g := groups[key]
		if g == nil {
			g = &group{revisions: map[string]bool{}}
			groups[key] = g
		}
		g.revisions[p.Labels[lwsv1.RevisionKey]] = true
		if podReady(p) {
			g.ready++
		}
	}
	for _, g := range groups {
		if g.ready == nodeCount && len(g.revisions) == 1 {
			whole++
		} else {
			other++
		}
	}
	return whole, other
}

func groupRolloutDone(pods map[string]*corev1.Pod, before map[string]bool, replicas, nodeCount int) bool {
	if len(pods) != replicas*nodeCount {
		return false
	}
	for _, p := range pods {
		if before[p.Labels[lwsv1.RevisionKey]] || !podReady(p) {
			return false
		}
	}
	whole, _ := countGroups(pods, nodeCount)
	return whole == replicas
}

func describeGroupPods(pods map[string]*corev1.Pod) string {
	return describeEach(pods, func(p *corev1.Pod) string {
		return fmt.Sprintf("%s (group %s, revision %s, ready %t)", p.Name,
			p.Labels[lwsv1.GroupIndexLabelKey], p.Labels[lwsv1.RevisionKey], podReady(p))
	})
}

func (w *world) groupsRolledOneAtATime(_ context.Context, component string, n int) error {
	r := w.groups.roll
	if r == nil || r.component != component {
		return fmt.Errorf("no rollout of the dcd %q was watched", component)
	}
	if r.fewestWhole < n {
		return fmt.Errorf("the dcd %q had only %d whole groups Ready at one moment of its rollout, want at least %d", component, r.fewestWhole, n)
	}
	if r.mostReplaced > 1 {
		return fmt.Errorf("the dcd %q had %d groups being replaced at once", component, r.mostReplaced)
	}
	return nil
}

// podsRunImage checks the main container of every pod of the component.
func (w *world) podsRunImage(ctx context.Context, component, image string) error {
	component, image = unescape(component), unescape(image)
	pods := &corev1.PodList{}
	if err := w.cluster.Client.List(ctx, pods, client.InNamespace(w.namespace), client.MatchingLabels{render.LabelComponent: component}); err != nil {
		return err
	}
	if len(pods.Items) == 0 {
		return fmt.Errorf("the dcd %s has no pods", component)
	}
	for _, p := range pods.Items {
		if got := p.Spec.Containers[0].Image; got != image {
			return fmt.Errorf("pod %s runs %s, want %s", p.Name, got, image)
		}
	}
	return nil
}
