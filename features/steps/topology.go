package steps

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/cucumber/godog"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/dynamoctl/dynamo-operator/operator/render"
)

// Steps about topology-aware placement: where a graph's pods landed, and
// nodes carrying a topology label joining.

// topology is a scenario's state of the placement steps.
type topology struct {
	// nodes are the Nodes the scenario added, removed when it ends.
	nodes []string
}

func registerTopologySteps(sc *godog.ScenarioContext, w *world) {
	sc.After(func(ctx context.Context, _ *godog.Scenario, err error) (context.Context, error) {
		return ctx, w.removeTopologyNodes()
	})
	sc.Step(`^a node labelled `+quoted+` joins the cluster$`, unquote1(w.labelledNodeJoins))
	sc.Step(`^every pod of the dgd `+quoted+` runs on nodes with one value of the label `+quoted+`, and where they run is reported$`,
		unquote2(w.graphInOneDomain))
	sc.Step(`^the pods of each group of the dcd `+quoted+` run on nodes with one value of the label `+quoted+`, and where they run is reported$`,
		unquote2(w.groupsInOneDomain))
}

// labelledNodeJoins creates a Node carrying the label key=value (envtest: a
// Node object, which nothing runs pods on; the test Deployment driver reads
// it as the scheduler would).
func (w *world) labelledNodeJoins(ctx context.Context, label string) error {
	key, value, _ := strings.Cut(label, "=")
	name := fmt.Sprintf("topology-%s-%d", w.namespace, len(w.topology.nodes))
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{key: value}}}
	if err := w.cluster.Client.Create(ctx, node); err != nil {
		return err
	}
	w.topology.nodes = append(w.topology.nodes, name)
	return nil
}

func (w *world) removeTopologyNodes() error {
	err := w.deleteNodes(w.topology.nodes)
	w.topology.nodes = nil
	return err
}

// graphInOneDomain checks that every pod of the graph runs on a node whose
// label has one value, and prints each pod's node and that value.
func (w *world) graphInOneDomain(ctx context.Context, graph, label string) error {
	pods, err := w.podsWith(ctx, client.MatchingLabels{render.LabelGraphName: graph})
	if err != nil {
		return err
	}
	fmt.Printf("    graph %s, by %s:\n", graph, label)
	return w.inOneDomain(ctx, pods, label)
}

// groupsInOneDomain checks each group of a multinode component apart: its
// pods (told by LeaderWorkerSet's group-key label) share one value of the
// label; groups may differ.
func (w *world) groupsInOneDomain(ctx context.Context, component, label string) error {
	pods, err := w.podsWith(ctx, client.MatchingLabels{render.LabelComponent: component})
	if err != nil {
		return err
	}
	groups := map[string][]corev1.Pod{}
	for _, p := range pods {
		groups[p.Labels[lwsv1.GroupIndexLabelKey]] = append(groups[p.Labels[lwsv1.GroupIndexLabelKey]], p)
	}
	if len(groups) < 2 {
		return fmt.Errorf("the dcd %s has %d groups, want several to tell them apart", component, len(groups))
	}
	for _, index := range sortedKeys(groups) {
		fmt.Printf("    group %s of %s, by %s:\n", index, component, label)
		if err := w.inOneDomain(ctx, groups[index], label); err != nil {
			return fmt.Errorf("group %s: %w", index, err)
		}
	}
	return nil
}

func (w *world) podsWith(ctx context.Context, sel client.MatchingLabels) ([]corev1.Pod, error) {
	var pods corev1.PodList
	if err := w.cluster.Client.List(ctx, &pods, client.InNamespace(w.namespace), sel); err != nil {
		return nil, err
	}
	if len(pods.Items) == 0 {
		return nil, fmt.Errorf("no pod matches %v", sel)
	}
	sort.Slice(pods.Items, func(i, j int) bool { return pods.Items[i].Name < pods.Items[j].Name })
	return pods.Items, nil
}

// inOneDomain prints each pod's node and the node's value of label, and
// fails unless every pod is placed and all values are one.
func (w *world) inOneDomain(ctx context.Context, pods []corev1.Pod, label string) error {
	values := map[string]bool{}
	for _, p := range pods {
		if p.Spec.NodeName == "" {
			return fmt.Errorf("pod %s is not placed on a node", p.Name)
		}
		node := &corev1.Node{}
		if err := w.cluster.Client.Get(ctx, client.ObjectKey{Name: p.Spec.NodeName}, node); err != nil {
			return err
		}
		v, ok := node.Labels[label]
		if !ok {
			return fmt.Errorf("pod %s runs on node %s, which has no label %s", p.Name, node.Name, label)
		}
		fmt.Printf("      %s on %s (%s)\n", p.Name, node.Name, v)
		values[v] = true
	}
	if len(values) != 1 {
		return fmt.Errorf("the pods run in %d domains of %s: %v", len(values), label, sortedKeys(values))
	}
	return nil
}
