package steps

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"sort"
	"strings"
	"time"

	"github.com/cucumber/godog"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/render"
	"github.com/dynamoctl/dynamo-operator/sim/nodes"
)

// LabelReserved marks the GPU nodes a scenario adds for itself, and taints
// them: only pods that tolerate the taint and select the label (a graph's
// extraPodSpec) land there, so the scenario knows exactly how many GPUs its
// graph can have, whatever else the shared simulator runs.
const LabelReserved = "sim.dynamo.nvidia.com/reserved"

// gang is a scenario's state of the all-or-nothing placement steps.
type gang struct {
	// nodes are the GPU nodes the scenario added, removed when it ends.
	nodes []string
	// capacityAddedAt is when the last node was added.
	capacityAddedAt time.Time
}

// All-or-nothing placement of multinode groups (simulator: the real
// kube-scheduler with gang scheduling on).
func registerGangSteps(sc *godog.ScenarioContext, w *world) {
	sc.After(func(ctx context.Context, _ *godog.Scenario, err error) (context.Context, error) {
		return ctx, w.removeReservedNodes()
	})
	sc.Step(`^(\d+) GPU nodes? with (\d+) GPUs? each (?:are|is) reserved for `+quoted+`$`, w.reserveGPUNodes)
	sc.Step(`^I add (\d+) GPU nodes? with (\d+) GPUs? each reserved for `+quoted+`$`, w.addReservedGPUNodes)
	sc.Step(`^exactly one group of the dcd `+quoted+` runs, and the other waits without holding a GPU, its PodGroup Unschedulable$`,
		unquote1(w.oneGroupRunsOtherWaits))
	sc.Step(`^every group of the dcd `+quoted+` is placed whole, and the time since the capacity was added is reported$`,
		unquote1(w.everyGroupPlaced))
}

func (w *world) reserveGPUNodes(ctx context.Context, count, gpus int, reservation string) error {
	reservation = strings.Trim(reservation, `"`)
	for range count {
		if err := w.addReservedNode(ctx, gpus, reservation); err != nil {
			return err
		}
	}
	return nil
}

func (w *world) addReservedGPUNodes(ctx context.Context, count, gpus int, reservation string) error {
	if err := w.reserveGPUNodes(ctx, count, gpus, reservation); err != nil {
		return err
	}
	w.gang.capacityAddedAt = time.Now()
	return nil
}

// addReservedNode adds one simulated GPU node (the simulator's KWOK drives
// every node labelled as its pools' are), labelled and tainted for the
// reservation.
func (w *world) addReservedNode(ctx context.Context, gpus int, reservation string) error {
	// Node names and label values stay short whatever the namespace's name.
	h := fnv.New32a()
	_, _ = h.Write([]byte(w.namespace))
	pool := nodes.Pool{Name: fmt.Sprintf("rsv-%08x", h.Sum32()), Count: 1, GPUs: gpus, Product: "NVIDIA-H100-80GB-HBM3", MemoryMiB: 81559}
	node := pool.Node(len(w.gang.nodes))
	node.Labels[LabelReserved] = reservation
	node.Spec.Taints = []corev1.Taint{{Key: LabelReserved, Value: reservation, Effect: corev1.TaintEffectNoSchedule}}
	if err := w.cluster.Client.Create(ctx, node); err != nil {
		return fmt.Errorf("adding GPU node %s: %w", node.Name, err)
	}
	w.gang.nodes = append(w.gang.nodes, node.Name)
	// Ready before the step ends: a node KWOK has not taken up yet would
	// be no capacity at all for the scheduler.
	return w.eventually(ctx, "the GPU node "+node.Name+" Ready", func() error {
		n := &corev1.Node{}
		if err := w.cluster.Client.Get(ctx, client.ObjectKey{Name: node.Name}, n); err != nil {
			return err
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("node %s is not Ready", node.Name)
	})
}

func (w *world) removeReservedNodes() error {
	err := w.deleteNodes(w.gang.nodes)
	w.gang.nodes = nil
	return err
}

// deleteNodes deletes the Nodes a scenario added, when it ends.
func (w *world) deleteNodes(names []string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var errs []error
	for _, name := range names {
		err := w.cluster.Client.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}})
		if client.IgnoreNotFound(err) != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// groupPods are a multinode component's pods by group index.
func (w *world) groupPods(ctx context.Context, component string) (map[string][]corev1.Pod, int, error) {
	dcd := &v1alpha1.DynamoComponentDeployment{}
	if err := w.cluster.Client.Get(ctx, client.ObjectKey{Namespace: w.namespace, Name: component}, dcd); err != nil {
		return nil, 0, err
	}
	if dcd.Spec.Multinode == nil {
		return nil, 0, fmt.Errorf("dcd %s is not multinode", component)
	}
	pods := &corev1.PodList{}
	if err := w.cluster.Client.List(ctx, pods, client.InNamespace(w.namespace),
		client.MatchingLabels{render.LabelComponent: component}); err != nil {
		return nil, 0, err
	}
	groups := map[string][]corev1.Pod{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			groups[p.Labels[lwsv1.GroupIndexLabelKey]] = append(groups[p.Labels[lwsv1.GroupIndexLabelKey]], p)
		}
	}
	return groups, int(dcd.Spec.Multinode.NodeCount), nil
}

// podGroupScheduled is the PodGroupScheduled condition the scheduler wrote
// on a group's PodGroup, nil when none yet.
func (w *world) podGroupScheduled(ctx context.Context, name string) (*metav1.Condition, error) {
	pg := &unstructured.Unstructured{}
	pg.SetGroupVersionKind(render.PodGroupGVK)
	if err := w.cluster.Client.Get(ctx, client.ObjectKey{Namespace: w.namespace, Name: name}, pg); err != nil {
		return nil, err
	}
	return condition(pg, "PodGroupScheduled"), nil
}

func bound(pods []corev1.Pod) (n int) {
	for _, p := range pods {
		if p.Spec.NodeName != "" {
			n++
		}
	}
	return n
}

func podsReady(pods []corev1.Pod) bool {
	for _, p := range pods {
		ready := false
		for _, c := range p.Status.Conditions {
			ready = ready || (c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue)
		}
		if !ready {
			return false
		}
	}
	return true
}

// oneGroupRunsOtherWaits: with GPUs for one and a half groups, one group's
// nodeCount pods all run, and no pod of the other is bound to a node. The
// absence is checked once the scheduler has demonstrably judged the waiting
// group (its PodGroup says Unschedulable) while every one of its pods
// existed, and again after the running group became Ready: without gang
// scheduling a pod of it would hold the spare GPU by then.
func (w *world) oneGroupRunsOtherWaits(ctx context.Context, component string) error {
	var running, waiting string
	check := func() error {
		groups, nodeCount, err := w.groupPods(ctx, component)
		if err != nil {
			return err
		}
		if len(groups) != 2 {
			return fmt.Errorf("%d groups of pods, want 2", len(groups))
		}
		running, waiting = "", ""
		for index, pods := range groups {
			if len(pods) != nodeCount {
				return fmt.Errorf("group %s has %d pods, want %d", index, len(pods), nodeCount)
			}
			switch n := bound(pods); {
			case n == nodeCount && podsReady(pods):
				running = index
			case n == 0:
				waiting = index
			default:
				return fmt.Errorf("group %s has %d of %d pods bound (Ready: %t)", index, n, nodeCount, podsReady(pods))
			}
		}
		if running == "" || waiting == "" {
			return fmt.Errorf("groups %v: want one running and one waiting", keys(groups))
		}
		cond, err := w.podGroupScheduled(ctx, render.PodGroupName(component, atoi(waiting)))
		if err != nil {
			return err
		}
		if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != "Unschedulable" {
			return fmt.Errorf("the waiting group %s's PodGroup says %+v, want PodGroupScheduled False Unschedulable", waiting, cond)
		}
		return nil
	}
	if err := w.eventually(ctx, "one group of "+component+" running, the other waiting unscheduled", check); err != nil {
		return err
	}
	fmt.Printf("    group %s of %s Running %.1fs after the graph was applied\n", running, component, time.Since(w.appliedAt).Seconds())
	// Unchanged after the operator and the scheduler acted on the Ready
	// group (status written, the waiting group requeued by its events).
	if err := w.eventually(ctx, "the dcd "+component+" with one Ready replica", func() error {
		return w.fieldEquals(ctx, "dcd", component, ".status.readyReplicas", "1")
	}); err != nil {
		return err
	}
	if err := check(); err != nil {
		return fmt.Errorf("after the component counted its Ready group: %w", err)
	}
	groups, _, _ := w.groupPods(ctx, component)
	fmt.Printf("    waiting group %s: %d of %d pods bound\n", waiting, bound(groups[waiting]), len(groups[waiting]))
	return nil
}

// everyGroupPlaced: every group's pods all bound and Ready.
func (w *world) everyGroupPlaced(ctx context.Context, component string) error {
	err := w.eventually(ctx, "every group of "+component+" placed whole", func() error {
		dcd := &v1alpha1.DynamoComponentDeployment{}
		if err := w.cluster.Client.Get(ctx, client.ObjectKey{Namespace: w.namespace, Name: component}, dcd); err != nil {
			return err
		}
		groups, nodeCount, err := w.groupPods(ctx, component)
		if err != nil {
			return err
		}
		if want := int(ptrOr(dcd.Spec.Replicas, 1)); len(groups) != want {
			return fmt.Errorf("%d groups, want %d", len(groups), want)
		}
		for index, pods := range groups {
			if len(pods) != nodeCount || bound(pods) != nodeCount || !podsReady(pods) {
				return fmt.Errorf("group %s: %d pods, %d bound, Ready %t; want %d", index, len(pods), bound(pods), podsReady(pods), nodeCount)
			}
			if _, err := w.podGroupScheduled(ctx, render.PodGroupName(component, atoi(index))); apierrors.IsNotFound(err) {
				return fmt.Errorf("group %s has no PodGroup", index)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Printf("    every group of %s placed and Ready %.1fs after the capacity was added\n", component, time.Since(w.gang.capacityAddedAt).Seconds())
	return nil
}

func keys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func atoi(s string) int {
	n := 0
	_, _ = fmt.Sscan(s, &n)
	return n
}

func ptrOr(p *int32, def int32) int32 {
	if p == nil {
		return def
	}
	return *p
}
