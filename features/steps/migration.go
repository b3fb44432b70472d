package steps

// The migration scenarios (issue 17 part 5): a cluster as Dynamo's own
// operator leaves it (../shared/migration: its CRDs, its graphs and
// components with the statuses it wrote, their children) running real pods
// on the simulator, then `helm install` of our chart; and our cluster-wide
// operator beside Dynamo's namespace-scoped one (its marker Lease).
//
// What is compared across the take-over is an inventory of the namespace:
// every object of the kinds below by name and UID, and every pod's restart
// count. A pod restart, a pod template change (a new ReplicaSet) or a second
// workload shows there; so does a deleted claim.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/cucumber/godog"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/internal/await"
	"github.com/dynamoctl/dynamo-operator/internal/migration"
	"github.com/dynamoctl/dynamo-operator/internal/testenv"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/controllers"
	"github.com/dynamoctl/dynamo-operator/operator/render"
	"github.com/dynamoctl/dynamo-operator/operator/scope"
	"github.com/dynamoctl/dynamo-operator/sim/cluster"
)

// dynamoHelmManager is the field manager Dynamo's chart installs its CRDs
// with: ours must take them over from it in place.
const dynamoHelmManager = "helm"

// migrationWorld is the state of one migration scenario.
type migrationWorld struct {
	*simWorld
	// c knows our kinds and the CRDs; it is made again once Dynamo's CRDs
	// are served (a client's REST mapper does not see kinds added later).
	c client.Client
	// ns is the namespace Dynamo's operator left.
	ns string
	// nvidiaVersion is the version graphs and components are listed in for
	// the inventory: their storage version under Dynamo's CRDs, readable
	// before our conversion webhook serves (v1alpha1 unless set).
	nvidiaVersion string
	// before is the namespace's inventory before our operator ran.
	before inventory
	// installStarted is when helm install began.
	installStarted time.Time
	// hybrid: the namespaces ours shares with Dynamo's namespace-scoped
	// operator (dynamoNS) and keeps (oursNS), and the Lease's lifetime.
	dynamoNS, oursNS        string
	leaseCreated, leaseGone time.Time
	graphName               string
}

// registerMigrationSteps registers the migration steps. Their state lives
// here, one per scenario; the scenario's simulator (and everything in it)
// goes when the scenario ends.
func registerMigrationSteps(sc *godog.ScenarioContext, world *simWorld) {
	w := &migrationWorld{simWorld: world}
	sc.Step(`^the cluster Dynamo's operator left: its CRDs, graphs, components and children in a namespace "([^"]*)"$`, w.dynamoLeftovers)
	sc.Step(`^the cluster Dynamo's current operator left, graphs and components stored in v1beta1: its CRDs, graphs, components and children in a namespace "([^"]*)"$`, w.dynamoV1beta1Leftovers)
	sc.Step(`^the graphs and components are stored in v1alpha1 alone: storedVersions is \[v1alpha1\]$`, w.storageMigrated)
	sc.Step(`^every graph and component reads in v1alpha1 and in v1beta1$`, w.readsInBothVersions)
	sc.Step(`^every workload Dynamo's operator made runs Ready pods$`, w.dynamoWorkloadsReady)
	sc.Step(`^Dynamo's operator owns the claim "([^"]*)" by the graph "([^"]*)"$`, w.dynamoOwnedClaim)
	sc.Step(`^I note every pod, workload, claim and component there$`, w.noteInventory)
	sc.Step(`^I helm install our chart as chart/README.md says$`, w.helmInstall)
	sc.Step(`^the API server serves our CRDs in place of Dynamo's$`, w.ourCRDsServed)
	sc.Step(`^every graph there becomes Ready by our operator's status$`, w.graphsReadyByUs)
	sc.Step(`^our operator has written every graph's status and adopted every workload there$`, w.reconciledEverything)
	sc.Step(`^no pod there was restarted or replaced$`, w.noPodRestarted)
	sc.Step(`^there is exactly one Deployment per component and no workload was created, replaced or deleted$`, w.noWorkloadChanged)
	sc.Step(`^no claim there was deleted$`, w.noClaimDeleted)
	sc.Step(`^every component's and graph's status reads in Dynamo's shape and in ours$`, w.statusBothShapes)
	sc.Step(`^I delete the graph "([^"]*)"$`, w.deleteGraph)
	sc.Step(`^the graph "([^"]*)" and its components are gone and the claim "([^"]*)" is kept, released from it$`, w.claimOutlivesGraph)
	sc.Step(`^I report what was adopted in place, replaced, created and deleted$`, w.reportInventory)

	sc.Step(`^the graph "([^"]*)" of "([^"]*)" runs Ready in a namespace for Dynamo's operator and one for ours$`, w.graphInTwoNamespaces)
	sc.Step(`^our operator is quiet in Dynamo's namespace$`, w.quietInDynamoNS)
	sc.Step(`^Dynamo's namespace-scoped operator starts in its namespace: its Lease, holder "([^"]*)", no renewTime$`, w.dynamoLeaseAppears)
	sc.Step(`^Dynamo's namespace-scoped operator renews its Lease$`, w.dynamoLeaseRenewed)
	sc.Step(`^I scale the service "([^"]*)" of the graph to (\d+) in both namespaces$`, w.scaleBoth)
	sc.Step(`^our operator scales "([^"]*)" to (\d+) in its own namespace$`, w.scaledInOurs)
	sc.Step(`^"([^"]*)" still runs (\d+) replicas? in Dynamo's namespace$`, w.stillInDynamoNS)
	sc.Step(`^our operator has written nothing in Dynamo's namespace since the Lease was created$`, w.noWritesUnderLease)
	sc.Step(`^Dynamo's namespace-scoped operator stops and deletes its Lease$`, w.dynamoLeaseDeleted)
	sc.Step(`^our operator scales "([^"]*)" to (\d+) in Dynamo's namespace$`, w.scaledInDynamoNS)
}

// newClient is a client of the cluster that knows our kinds and CRDs.
func newClient(cfg *rest.Config) (client.Client, error) {
	s := testenv.NewScheme()
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: s})
}

// served waits until the API server's discovery of nvidia.com/v1alpha1
// lists a resource that has.
func (w *migrationWorld) served(ctx context.Context, has func(metav1.APIResource) bool, what string) error {
	dc, err := discovery.NewDiscoveryClientForConfig(w.Config)
	if err != nil {
		return err
	}
	return w.eventually(ctx, "the API server to serve "+what, func() error {
		list, err := dc.ServerResourcesForGroupVersion(v1alpha1.GroupVersion.String())
		if err != nil {
			return err
		}
		if !slices.ContainsFunc(list.APIResources, has) {
			return errors.New("not served yet")
		}
		return nil
	}, await.Within(time.Minute))
}

func (w *migrationWorld) figure(name, format string, args ...any) {
	w.Figure(name, fmt.Sprintf(format, args...))
}

// client is the scenario's client of our kinds, made on first use.
func (w *migrationWorld) client() (client.Client, error) {
	if err := w.NeedSim(); err != nil {
		return nil, err
	}
	if w.c == nil {
		c, err := newClient(w.Config)
		if err != nil {
			return nil, err
		}
		w.c = c
	}
	return w.c, nil
}

func (w *migrationWorld) newNamespace(ctx context.Context, prefix string) (string, error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	if _, err := w.client(); err != nil {
		return "", err
	}
	if err := w.c.Create(ctx, ns); err != nil {
		return "", err
	}
	return ns.Name, waitDefaultServiceAccount(ctx, w.c, ns.Name)
}

// waitDefaultServiceAccount waits for the namespace's default
// ServiceAccount: pods are refused until the controller manager made it.
func waitDefaultServiceAccount(ctx context.Context, c client.Client, ns string) error {
	return await.Until(ctx, "the default ServiceAccount of "+ns, func() error {
		return c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "default"}, &corev1.ServiceAccount{})
	}, await.Within(time.Minute))
}

// dynamoLeftovers installs Dynamo's CRDs as its chart does (field manager
// helm) and creates what its operator left, statuses through the status
// subresource, in a fresh namespace.
func (w *migrationWorld) dynamoLeftovers(ctx context.Context, prefix string) error {
	f, err := migration.Load(migration.Dir(w.Suite.Root))
	if err != nil {
		return err
	}
	return w.leftovers(ctx, prefix, f)
}

// leftovers installs f's CRDs and creates its objects in a fresh
// namespace, as dynamoLeftovers says.
func (w *migrationWorld) leftovers(ctx context.Context, prefix string, f *migration.Fixtures) error {
	var err error
	if _, err := w.client(); err != nil {
		return err
	}
	if err := migration.InstallCRDs(ctx, client.WithFieldOwner(w.c, dynamoHelmManager), f.DynamoCRDs); err != nil {
		return err
	}
	if err := w.served(ctx, func(r metav1.APIResource) bool { return r.Name == "dynamographdeployments" }, "Dynamo's CRDs"); err != nil {
		return err
	}
	// A client made before the CRDs existed maps nvidia.com to nothing.
	if w.c, err = newClient(w.Config); err != nil {
		return err
	}
	if w.ns, err = w.newNamespace(ctx, prefix); err != nil {
		return err
	}
	// Statuses of Dynamo's kinds go through the status subresource, as its
	// operator wrote them; those of Deployments and Services are written by
	// the cluster's own controllers here, as they were there.
	objs := make([]*unstructured.Unstructured, len(f.Objects))
	for i, o := range f.Objects {
		objs[i] = o
		if o.GroupVersionKind().Group != v1alpha1.GroupVersion.Group {
			objs[i] = o.DeepCopy()
			delete(objs[i].Object, "status")
		}
	}
	// The Secrets and ConfigMaps its users made by hand (placeholders): the
	// simulator's kubelet, as a real one, starts no pod without them.
	if err := createPrereqs(ctx, w.c, objs, w.ns); err != nil {
		return err
	}
	created, err := migration.Create(ctx, w.c, w.ns, objs)
	if err != nil {
		return err
	}
	w.figure("dynamo objects loaded", "%d (%d graphs, %d components, %d Deployments)", len(created),
		countKind(created, "DynamoGraphDeployment"), countKind(created, "DynamoComponentDeployment"), countKind(created, "Deployment"))
	return nil
}

func countKind(objs []*unstructured.Unstructured, kind string) int {
	n := 0
	for _, o := range objs {
		if o.GetKind() == kind {
			n++
		}
	}
	return n
}

// dynamoWorkloadsReady waits until each Deployment has all its replicas
// updated, ready and available, on the simulator's nodes and probes.
func (w *migrationWorld) dynamoWorkloadsReady(ctx context.Context) error {
	return w.eventually(ctx, "every Deployment Dynamo's operator made to be available", func() error {
		return w.deploymentsAvailable(ctx, w.ns)
	}, await.Within(3*time.Minute))
}

// deploymentsAvailable says which Deployments of ns are not yet available.
func (w *migrationWorld) deploymentsAvailable(ctx context.Context, ns string) error {
	var list appsv1.DeploymentList
	if err := w.c.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return err
	}
	if len(list.Items) == 0 {
		return errors.New("no Deployments")
	}
	var waiting []string
	for _, d := range list.Items {
		want := ptr.Deref(d.Spec.Replicas, 1)
		s := d.Status
		if s.ObservedGeneration < d.Generation || s.UpdatedReplicas != want || s.ReadyReplicas != want || s.AvailableReplicas != want || s.Replicas != want {
			waiting = append(waiting, fmt.Sprintf("%s %d/%d ready", d.Name, s.ReadyReplicas, want))
		}
	}
	if len(waiting) > 0 {
		return errors.New(strings.Join(waiting, ", "))
	}
	return nil
}

// dynamoOwnedClaim creates a claim as Dynamo's operator creates one for a
// graph's spec.pvcs: owned by the graph, which deletes it with the graph.
func (w *migrationWorld) dynamoOwnedClaim(ctx context.Context, claim, graph string) error {
	g := &v1alpha1.DynamoGraphDeployment{}
	if err := w.c.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: graph}, g); err != nil {
		return err
	}
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: claim, Namespace: w.ns, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: v1alpha1.GroupVersion.String(), Kind: "DynamoGraphDeployment", Name: g.Name, UID: g.UID,
			Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")}},
		},
	}
	return w.c.Create(ctx, pvc)
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

// helmInstall installs the working tree's chart as chart/README.md says and times
// it: the take-over's clock starts here.
func (w *migrationWorld) helmInstall(ctx context.Context) error {
	w.installStarted = time.Now()
	if err := w.InstallRelease(ctx, ClusterRelease, ClusterNamespace, "the working tree"); err != nil {
		return err
	}
	w.figure("helm install to the operator Ready (s)", "%.1f", time.Since(w.installStarted).Seconds())
	return nil
}

// ourCRDsServed checks that the API server switched to our CRDs: ours give
// the component a scale subresource, Dynamo's do not.
func (w *migrationWorld) ourCRDsServed(ctx context.Context) error {
	return w.served(ctx, func(r metav1.APIResource) bool { return r.Name == "dynamocomponentdeployments/scale" },
		"our CRDs (dynamocomponentdeployments/scale)")
}

// graphsReadyByUs waits until every graph's Ready condition is ours (our
// reason, for its current generation): Dynamo's status said Ready too, so
// only our reason proves our operator has judged it.
func (w *migrationWorld) graphsReadyByUs(ctx context.Context) error {
	err := w.eventually(ctx, "every graph Ready by our operator", func() error {
		var graphs v1alpha1.DynamoGraphDeploymentList
		if err := w.c.List(ctx, &graphs, client.InNamespace(w.ns)); err != nil {
			return err
		}
		var waiting []string
		for _, g := range graphs.Items {
			ready := meta.FindStatusCondition(g.Status.Conditions, "Ready")
			if g.Status.State != v1alpha1.GraphStateSuccessful || ready == nil || ready.Status != metav1.ConditionTrue ||
				ready.Reason != controllers.ReasonAllComponentsAvailable || g.Status.ObservedGeneration != g.Generation {
				why := string(g.Status.State)
				if ready != nil {
					why += " " + ready.Reason + ": " + ready.Message
				}
				waiting = append(waiting, g.Name+" ("+why+")")
			}
		}
		if len(graphs.Items) == 0 {
			return errors.New("no graphs")
		}
		if len(waiting) > 0 {
			return errors.New(strings.Join(waiting, "; "))
		}
		return nil
	}, await.Within(3*time.Minute))
	if err == nil {
		w.figure("helm install to every graph Ready by our operator (s)", "%.1f", time.Since(w.installStarted).Seconds())
	}
	return err
}

// operatorWrites are the chart-installed operator's writes in ns since
// from, from the audit log.
func (w *migrationWorld) operatorWrites(ns string, from, to time.Time) ([]cluster.Write, error) {
	all, err := w.Sim.WritesBy(w.OperatorUser(ClusterRelease))
	if err != nil {
		return nil, err
	}
	var out []cluster.Write
	for _, wr := range all {
		if wr.Namespace == ns && !wr.At.Before(from) && wr.At.Before(to) {
			out = append(out, wr)
		}
	}
	return out, nil
}

// reconciledEverything proves the window in which nothing restarted is one
// in which our operator acted on every object: the audit log holds its
// status write of each graph and a write of each Deployment, and each
// Deployment carries our labels (adopted). It then waits until the operator
// is quiet there, so a late rollout would be seen by the steps after it.
func (w *migrationWorld) reconciledEverything(ctx context.Context) error {
	var deployments appsv1.DeploymentList
	var graphs v1alpha1.DynamoGraphDeploymentList
	err := w.eventually(ctx, "our operator to write every graph's status and adopt every Deployment", func() error {
		if err := w.c.List(ctx, &deployments, client.InNamespace(w.ns)); err != nil {
			return err
		}
		if err := w.c.List(ctx, &graphs, client.InNamespace(w.ns)); err != nil {
			return err
		}
		writes, err := w.operatorWrites(w.ns, w.installStarted, time.Now().Add(time.Hour))
		if err != nil {
			return err
		}
		var missing []string
		for _, g := range graphs.Items {
			if !wrote(writes, "dynamographdeployments/"+g.Name+"/status") {
				missing = append(missing, "no status write of graph "+g.Name)
			}
		}
		for _, d := range deployments.Items {
			if !wrote(writes, "deployments/"+d.Name) {
				missing = append(missing, "no write of Deployment "+d.Name)
			}
			if d.Labels[render.LabelManagedBy] != render.ManagedByValue {
				missing = append(missing, "Deployment "+d.Name+" not adopted")
			}
		}
		if len(missing) > 0 {
			return errors.New(strings.Join(missing, "; "))
		}
		return nil
	}, await.Within(2*time.Minute))
	if err != nil {
		return err
	}
	writes, _ := w.operatorWrites(w.ns, w.installStarted, time.Now().Add(time.Hour))
	refused := map[int]int{}
	for _, wr := range writes {
		if wr.Code >= 300 {
			refused[wr.Code]++
		}
	}
	// Refused writes are retried; 500s here are the operator's own webhooks
	// called before its pod is Ready (no endpoints yet).
	w.figure("take-over writes by our operator: all, refused by status code", "%d, %v", len(writes), refused)
	return w.waitQuiet(ctx, w.ns, 5*time.Second)
}

// wrote reports whether writes hold one whose URI path ends in suffix.
func wrote(writes []cluster.Write, suffix string) bool {
	for _, wr := range writes {
		path, _, _ := strings.Cut(wr.Line, "?")
		if strings.HasSuffix(path, "/"+suffix) {
			return true
		}
	}
	return false
}

// waitQuiet waits until the operator has written nothing in ns for window.
func (w *migrationWorld) waitQuiet(ctx context.Context, ns string, window time.Duration) error {
	return w.eventually(ctx, fmt.Sprintf("our operator to be quiet in %s for %v", ns, window), func() error {
		writes, err := w.operatorWrites(ns, time.Now().Add(-window), time.Now().Add(time.Hour))
		if err != nil {
			return err
		}
		if len(writes) > 0 {
			return errors.New("last write " + writes[len(writes)-1].Line)
		}
		return nil
	}, await.Within(2*time.Minute))
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

// dynamoServiceStatus mirrors Dynamo's Go type for a service's status
// (ServiceReplicaStatus in ai-dynamo/dynamo's api/v1alpha1), to read our
// status as Dynamo's operator and tools read it.
type dynamoServiceStatus struct {
	ComponentKind     string   `json:"componentKind"`
	ComponentName     string   `json:"componentName"`
	ComponentNames    []string `json:"componentNames,omitempty"`
	Replicas          int32    `json:"replicas"`
	UpdatedReplicas   int32    `json:"updatedReplicas"`
	ReadyReplicas     *int32   `json:"readyReplicas,omitempty"`
	AvailableReplicas *int32   `json:"availableReplicas,omitempty"`
}

type dynamoGraphStatus struct {
	State      string                         `json:"state"`
	Conditions []metav1.Condition             `json:"conditions"`
	Services   map[string]dynamoServiceStatus `json:"services,omitempty"`
}

type dynamoComponentStatus struct {
	Conditions []metav1.Condition   `json:"conditions"`
	Service    *dynamoServiceStatus `json:"service,omitempty"`
}

// statusBothShapes reads every graph and component through our typed
// client and as Dynamo's types, and checks the fields Dynamo's readers use.
func (w *migrationWorld) statusBothShapes(ctx context.Context) error {
	var problems []string
	var components v1alpha1.DynamoComponentDeploymentList
	if err := w.c.List(ctx, &components, client.InNamespace(w.ns)); err != nil {
		return fmt.Errorf("our client cannot read the components: %w", err)
	}
	var graphs v1alpha1.DynamoGraphDeploymentList
	if err := w.c.List(ctx, &graphs, client.InNamespace(w.ns)); err != nil {
		return fmt.Errorf("our client cannot read the graphs: %w", err)
	}
	for _, c := range components.Items {
		s := c.Status.Service
		if s == nil || s.ComponentName != c.Name || ptr.Deref(s.ReadyReplicas, 0) != ptr.Deref(c.Spec.Replicas, 1) {
			problems = append(problems, fmt.Sprintf("component %s: our status.service %+v", c.Name, s))
		}
	}
	for _, kind := range []string{"DynamoGraphDeployment", "DynamoComponentDeployment"} {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind(kind + "List"))
		if err := w.c.List(ctx, list, client.InNamespace(w.ns)); err != nil {
			return err
		}
		for _, o := range list.Items {
			raw, err := json.Marshal(o.Object["status"])
			if err != nil {
				return err
			}
			if kind == "DynamoGraphDeployment" {
				var st dynamoGraphStatus
				if err := json.Unmarshal(raw, &st); err != nil {
					problems = append(problems, fmt.Sprintf("graph %s does not decode as Dynamo's: %v", o.GetName(), err))
					continue
				}
				if st.State != "successful" || len(st.Services) == 0 {
					problems = append(problems, fmt.Sprintf("graph %s as Dynamo's: state %q, %d services", o.GetName(), st.State, len(st.Services)))
				}
				for name, s := range st.Services {
					if s.ComponentKind != "Deployment" || len(s.ComponentNames) != 1 || s.ComponentNames[0] != s.ComponentName {
						problems = append(problems, fmt.Sprintf("graph %s as Dynamo's: services[%s] = %+v", o.GetName(), name, s))
					}
				}
				continue
			}
			var st dynamoComponentStatus
			if err := json.Unmarshal(raw, &st); err != nil {
				problems = append(problems, fmt.Sprintf("component %s does not decode as Dynamo's: %v", o.GetName(), err))
				continue
			}
			if st.Service == nil || st.Service.ComponentKind != "Deployment" || st.Service.ComponentName != o.GetName() ||
				!slices.Equal(st.Service.ComponentNames, []string{o.GetName()}) {
				problems = append(problems, fmt.Sprintf("component %s as Dynamo's: service %+v", o.GetName(), st.Service))
			}
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%d status problems:\n%s", len(problems), strings.Join(problems, "\n"))
	}
	return nil
}

func (w *migrationWorld) deleteGraph(ctx context.Context, name string) error {
	return w.c.Delete(ctx, &v1alpha1.DynamoGraphDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: name}})
}

// claimOutlivesGraph: Dynamo's finalizer no longer holds the graph (ours
// dropped it), its components went with it, and the claim Dynamo's
// operator had tied to it stays, without an owner and labelled retained.
func (w *migrationWorld) claimOutlivesGraph(ctx context.Context, graph, claim string) error {
	err := w.eventually(ctx, "the graph "+graph+" and its components to be gone", func() error {
		err := w.c.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: graph}, &v1alpha1.DynamoGraphDeployment{})
		if err == nil || !apierrors.IsNotFound(err) {
			return fmt.Errorf("graph: %v", err)
		}
		var left v1alpha1.DynamoComponentDeploymentList
		if err := w.c.List(ctx, &left, client.InNamespace(w.ns), client.MatchingLabels{render.LabelGraphName: graph}); err != nil {
			return err
		}
		if len(left.Items) > 0 {
			return fmt.Errorf("%d components left", len(left.Items))
		}
		return nil
	}, await.Within(2*time.Minute))
	if err != nil {
		return err
	}
	pvc := &corev1.PersistentVolumeClaim{}
	if err := w.c.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: claim}, pvc); err != nil {
		return fmt.Errorf("the claim did not outlive its graph: %w", err)
	}
	if pvc.DeletionTimestamp != nil || len(pvc.OwnerReferences) != 0 || pvc.Labels[render.LabelPVCRetained] != "true" {
		return fmt.Errorf("claim %s after its graph went: deleting %v, owners %v, labels %v", claim, pvc.DeletionTimestamp, pvc.OwnerReferences, pvc.Labels)
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

// The hybrid scenario.

func (w *migrationWorld) graphInTwoNamespaces(ctx context.Context, graph, file string) error {
	if _, err := w.client(); err != nil {
		return err
	}
	data, err := os.ReadFile(filepath.Join(w.Suite.Root, file))
	if err != nil {
		return err
	}
	w.graphName = graph
	for _, target := range []*string{&w.dynamoNS, &w.oursNS} {
		prefix := "dynamo-scoped"
		if target == &w.oursNS {
			prefix = "ours"
		}
		ns, err := w.newNamespace(ctx, prefix)
		if err != nil {
			return err
		}
		*target = ns
		objs, err := ParseManifests(data)
		if err != nil {
			return err
		}
		if err := createPrereqs(ctx, w.c, objs, ns); err != nil {
			return err
		}
		for _, o := range objs {
			o.SetNamespace(ns)
			if err := w.c.Create(ctx, o); err != nil {
				return fmt.Errorf("creating %s %s in %s: %w", o.GetKind(), o.GetName(), ns, err)
			}
		}
	}
	for _, ns := range []string{w.dynamoNS, w.oursNS} {
		err := w.eventually(ctx, "the graph "+graph+" Ready in "+ns, func() error {
			g := &v1alpha1.DynamoGraphDeployment{}
			if err := w.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: graph}, g); err != nil {
				return err
			}
			r := meta.FindStatusCondition(g.Status.Conditions, "Ready")
			if r == nil || r.Status != metav1.ConditionTrue || g.Status.ObservedGeneration != g.Generation {
				return fmt.Errorf("%+v", r)
			}
			return nil
		}, await.Within(3*time.Minute))
		if err != nil {
			return err
		}
	}
	return nil
}

func (w *migrationWorld) quietInDynamoNS(ctx context.Context) error {
	return w.waitQuiet(ctx, w.dynamoNS, 5*time.Second)
}

// dynamoLeaseAppears creates the marker Lease as Dynamo's namespace-scoped
// operator does (deploy/operator/internal/namespace_scope at df888f68): its
// holderIdentity, a duration, acquireTime, no renewTime until its first
// renewal.
func (w *migrationWorld) dynamoLeaseAppears(ctx context.Context, holder string) error {
	now := metav1.NewMicroTime(time.Now())
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: scope.LeaseName, Namespace: w.dynamoNS},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To(holder),
			LeaseDurationSeconds: ptr.To[int32](30),
			AcquireTime:          &now,
		},
	}
	w.leaseCreated = time.Now()
	return w.c.Create(ctx, lease)
}

func (w *migrationWorld) dynamoLeaseRenewed(ctx context.Context) error {
	lease := &coordinationv1.Lease{}
	if err := w.c.Get(ctx, client.ObjectKey{Namespace: w.dynamoNS, Name: scope.LeaseName}, lease); err != nil {
		return err
	}
	lease.Spec.RenewTime = ptr.To(metav1.NewMicroTime(time.Now()))
	return w.c.Update(ctx, lease)
}

func (w *migrationWorld) scaleBoth(ctx context.Context, service string, replicas int) error {
	for _, ns := range []string{w.dynamoNS, w.oursNS} {
		g := &v1alpha1.DynamoGraphDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: w.graphName}}
		body := fmt.Sprintf(`{"spec":{"services":{%q:{"replicas":%d}}}}`, service, replicas)
		if err := w.c.Patch(ctx, g, client.RawPatch("application/merge-patch+json", []byte(body))); err != nil {
			return fmt.Errorf("scaling %s in %s: %w", service, ns, err)
		}
	}
	return nil
}

// deploymentReplicas is the replicas of the Deployment of the graph's
// service in ns.
func (w *migrationWorld) deploymentReplicas(ctx context.Context, ns, service string) (int32, error) {
	d := &appsv1.Deployment{}
	if err := w.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: render.ComponentName(w.graphName, service)}, d); err != nil {
		return 0, err
	}
	return ptr.Deref(d.Spec.Replicas, 1), nil
}

func (w *migrationWorld) scaledIn(ctx context.Context, ns, service string, replicas int) error {
	return w.eventually(ctx, fmt.Sprintf("%s scaled to %d in %s", service, replicas, ns), func() error {
		r, err := w.deploymentReplicas(ctx, ns, service)
		if err != nil {
			return err
		}
		if r != int32(replicas) {
			return fmt.Errorf("%d replicas", r)
		}
		return nil
	}, await.Within(90*time.Second))
}

func (w *migrationWorld) scaledInOurs(ctx context.Context, service string, replicas int) error {
	return w.scaledIn(ctx, w.oursNS, service, replicas)
}

func (w *migrationWorld) scaledInDynamoNS(ctx context.Context, service string, replicas int) error {
	if err := w.scaledIn(ctx, w.dynamoNS, service, replicas); err != nil {
		return err
	}
	writes, err := w.operatorWrites(w.dynamoNS, w.leaseGone, time.Now().Add(time.Hour))
	if err != nil || len(writes) == 0 {
		return fmt.Errorf("no write of ours in %s after the Lease went in the audit log (%v)", w.dynamoNS, err)
	}
	w.figure("Dynamo's Lease deleted to our first write there (s)", "%.2f", writes[0].At.Sub(w.leaseGone).Seconds())
	return nil
}

func (w *migrationWorld) stillInDynamoNS(ctx context.Context, service string, replicas int) error {
	r, err := w.deploymentReplicas(ctx, w.dynamoNS, service)
	if err != nil {
		return err
	}
	if r != int32(replicas) {
		return fmt.Errorf("%s runs %d replicas in Dynamo's namespace %s, want %d: ours acted there", service, r, w.dynamoNS, replicas)
	}
	return nil
}

func (w *migrationWorld) noWritesUnderLease(ctx context.Context) error {
	writes, err := w.operatorWrites(w.dynamoNS, w.leaseCreated, time.Now())
	if err != nil {
		return err
	}
	if len(writes) > 0 {
		lines := make([]string, len(writes))
		for i, wr := range writes {
			lines[i] = wr.Line + " at " + wr.At.Format(time.RFC3339Nano)
		}
		return fmt.Errorf("our operator wrote %d times in %s while Dynamo's Lease lived:\n%s", len(writes), w.dynamoNS, strings.Join(lines, "\n"))
	}
	elsewhere, err := w.operatorWrites(w.oursNS, w.leaseCreated, time.Now())
	if err != nil {
		return err
	}
	if len(elsewhere) == 0 {
		return fmt.Errorf("the premise fails: our operator wrote nothing in %s either while the Lease lived", w.oursNS)
	}
	w.figure("our writes under Dynamo's Lease: its namespace / ours", "0 / %d", len(elsewhere))
	return nil
}

func (w *migrationWorld) dynamoLeaseDeleted(ctx context.Context) error {
	w.leaseGone = time.Now()
	return w.c.Delete(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: w.dynamoNS, Name: scope.LeaseName}})
}
