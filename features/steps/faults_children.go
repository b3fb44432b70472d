package steps

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/cucumber/godog"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/internal/await"
)

// What a namespace of graphs holds after the faults: each graph exactly
// the children of the reference graph, no orphan, and nothing left once the
// graphs are deleted. The inventory lists graphKinds and walks owner
// references up to the graphs.

func registerFaultChildrenSteps(sc *godog.ScenarioContext, w *simWorld) {
	f := w.faultState()
	sc.Step(`^each graph in the namespace "([^"]+)" has exactly the children of the reference graph$`, f.exactChildren)
	sc.Step(`^no object in the namespace "([^"]+)" is orphaned$`, f.noOrphans)
	sc.Step(`^nothing the graphs owned is left in the namespace "([^"]+)"$`, f.nothingLeft)
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
