package steps

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/cucumber/godog"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

// The take-over's inventory of Dynamo's namespace: every object of
// graphKinds by name and UID, every pod's restart count, noted before our
// operator runs and compared after.

func registerMigrationInventorySteps(sc *godog.ScenarioContext, world *simWorld) {
	w := world.migrationState()
	sc.Step(`^I note every pod, workload, claim and component there$`, w.noteInventory)
	sc.Step(`^no pod there was restarted or replaced$`, w.noPodRestarted)
	sc.Step(`^there is exactly one Deployment per component and no workload was created, replaced or deleted$`, w.noWorkloadChanged)
	sc.Step(`^no claim there was deleted$`, w.noClaimDeleted)
	sc.Step(`^I report what was adopted in place, replaced, created and deleted$`, w.reportInventory)
}

// item is one object of an inventory.
type item struct {
	uid string
	// restarts is a pod's containers' restart count, summed.
	restarts int32
}

// inventory maps "Kind/name" to the object's identity.
type inventory map[string]item

func (w *migrationWorld) inventory(ctx context.Context, ns string) (inventory, error) {
	inv := inventory{}
	for _, gvk := range graphKinds() {
		if gvk.Group == v1alpha1.GroupVersion.Group && w.nvidiaVersion != "" {
			gvk.Version = w.nvidiaVersion
		}
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		err := w.c.List(ctx, list, client.InNamespace(ns))
		if meta.IsNoMatchError(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("listing %ss: %w", gvk.Kind, err)
		}
		for _, o := range list.Items {
			if gvk.Kind == "ServiceAccount" && o.GetName() == "default" {
				continue
			}
			it := item{uid: string(o.GetUID())}
			if gvk.Kind == "Pod" {
				statuses, _, _ := unstructured.NestedSlice(o.Object, "status", "containerStatuses")
				for _, s := range statuses {
					n, _, _ := unstructured.NestedInt64(s.(map[string]any), "restartCount")
					it.restarts += int32(n)
				}
			}
			inv[gvk.Kind+"/"+o.GetName()] = it
		}
	}
	return inv, nil
}

// inventoryDiff is what became of a before-inventory.
type inventoryDiff struct {
	kept, replaced, created, deleted []string
	// restarted lists pods kept whose restart count rose.
	restarted []string
}

func diffInventories(before, after inventory) inventoryDiff {
	var d inventoryDiff
	for _, k := range slices.Sorted(maps.Keys(before)) {
		a, ok := after[k]
		switch {
		case !ok:
			d.deleted = append(d.deleted, k)
		case a.uid != before[k].uid:
			d.replaced = append(d.replaced, k)
		default:
			d.kept = append(d.kept, k)
			if a.restarts > before[k].restarts {
				d.restarted = append(d.restarted, fmt.Sprintf("%s (%d -> %d)", k, before[k].restarts, a.restarts))
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(after)) {
		if _, ok := before[k]; !ok {
			d.created = append(d.created, k)
		}
	}
	return d
}

// ofKind keeps the keys of kind.
func ofKind(keys []string, kind string) []string {
	var out []string
	for _, k := range keys {
		if strings.HasPrefix(k, kind+"/") {
			out = append(out, k)
		}
	}
	return out
}

func (w *migrationWorld) noteInventory(ctx context.Context) error {
	inv, err := w.inventory(ctx, w.ns)
	if err != nil {
		return err
	}
	var restarts int32
	pods := 0
	for k, it := range inv {
		if strings.HasPrefix(k, "Pod/") {
			pods++
			restarts += it.restarts
		}
	}
	w.before = inv
	w.figure("before the take-over", "%d objects, %d pods, %d restarts so far", len(inv), pods, restarts)
	return nil
}

func (w *migrationWorld) diff(ctx context.Context) (inventoryDiff, error) {
	if w.before == nil {
		return inventoryDiff{}, fmt.Errorf("no inventory was noted before the take-over")
	}
	after, err := w.inventory(ctx, w.ns)
	if err != nil {
		return inventoryDiff{}, err
	}
	return diffInventories(w.before, after), nil
}

func (w *migrationWorld) noPodRestarted(ctx context.Context) error {
	d, err := w.diff(ctx)
	if err != nil {
		return err
	}
	var problems []string
	if p := ofKind(d.replaced, "Pod"); len(p) > 0 {
		problems = append(problems, "replaced: "+strings.Join(p, ", "))
	}
	if p := ofKind(d.deleted, "Pod"); len(p) > 0 {
		problems = append(problems, "deleted: "+strings.Join(p, ", "))
	}
	if p := ofKind(d.created, "Pod"); len(p) > 0 {
		problems = append(problems, "created: "+strings.Join(p, ", "))
	}
	if len(d.restarted) > 0 {
		problems = append(problems, "restarted: "+strings.Join(d.restarted, ", "))
	}
	w.figure("pods kept / restarted / replaced or created", "%d / %d / %d", len(ofKind(d.kept, "Pod")), len(d.restarted),
		len(ofKind(d.replaced, "Pod"))+len(ofKind(d.created, "Pod")))
	if len(problems) > 0 {
		return fmt.Errorf("pods changed across the take-over: %s", strings.Join(problems, "; "))
	}
	if len(ofKind(d.kept, "Pod")) == 0 {
		return fmt.Errorf("the premise fails: no pods ran before the take-over")
	}
	return nil
}

// noWorkloadChanged: every Deployment and ReplicaSet is the one Dynamo's
// operator's left (a changed pod template would make a new ReplicaSet), and
// each component has exactly one Deployment, of its own name.
func (w *migrationWorld) noWorkloadChanged(ctx context.Context) error {
	d, err := w.diff(ctx)
	if err != nil {
		return err
	}
	var problems []string
	for _, kind := range []string{"Deployment", "ReplicaSet", "DynamoComponentDeployment", "DynamoGraphDeployment"} {
		for what, keys := range map[string][]string{"replaced": d.replaced, "created": d.created, "deleted": d.deleted} {
			if ks := ofKind(keys, kind); len(ks) > 0 {
				problems = append(problems, what+": "+strings.Join(ks, ", "))
			}
		}
	}
	var components v1alpha1.DynamoComponentDeploymentList
	var deployments appsv1.DeploymentList
	if err := w.c.List(ctx, &components, client.InNamespace(w.ns)); err != nil {
		return err
	}
	if err := w.c.List(ctx, &deployments, client.InNamespace(w.ns)); err != nil {
		return err
	}
	perComponent := map[string][]string{}
	for _, dep := range deployments.Items {
		owner := metav1.GetControllerOf(&dep)
		if owner == nil || owner.Kind != "DynamoComponentDeployment" {
			problems = append(problems, "Deployment "+dep.Name+" has no component as controller")
			continue
		}
		perComponent[owner.Name] = append(perComponent[owner.Name], dep.Name)
	}
	for _, c := range components.Items {
		if got := perComponent[c.Name]; len(got) != 1 || got[0] != c.Name {
			problems = append(problems, fmt.Sprintf("component %s has Deployments %v", c.Name, got))
		}
	}
	w.figure("Deployments / ReplicaSets kept in place", "%d / %d", len(ofKind(d.kept, "Deployment")), len(ofKind(d.kept, "ReplicaSet")))
	if len(problems) > 0 {
		sort.Strings(problems)
		return fmt.Errorf("workloads changed across the take-over:\n%s", strings.Join(problems, "\n"))
	}
	return nil
}

func (w *migrationWorld) noClaimDeleted(ctx context.Context) error {
	d, err := w.diff(ctx)
	if err != nil {
		return err
	}
	gone := append(ofKind(d.deleted, "PersistentVolumeClaim"), ofKind(d.replaced, "PersistentVolumeClaim")...)
	if len(gone) > 0 {
		return fmt.Errorf("claims deleted or replaced: %s", strings.Join(gone, ", "))
	}
	if len(ofKind(d.kept, "PersistentVolumeClaim")) == 0 {
		return fmt.Errorf("the premise fails: no claim before the take-over")
	}
	return nil
}

// reportInventory records, per kind, how many objects were kept in place,
// replaced, created and deleted by the take-over.
func (w *migrationWorld) reportInventory(ctx context.Context) error {
	d, err := w.diff(ctx)
	if err != nil {
		return err
	}
	for _, gvk := range graphKinds() {
		k := gvk.Kind
		created := ofKind(d.created, k)
		w.figure("take-over "+k, "kept %d, replaced %d, created %d %v, deleted %d %v", len(ofKind(d.kept, k)),
			len(ofKind(d.replaced, k)), len(created), created, len(ofKind(d.deleted, k)), ofKind(d.deleted, k))
	}
	return nil
}
