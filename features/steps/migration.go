package steps

// The migration scenarios (scenarios/migration.feature): a cluster as Dynamo's own
// operator leaves it (../shared/migration: its CRDs, its graphs and
// components with the statuses it wrote, their children) running real pods
// on the simulator, then `helm install` of our chart; and our cluster-wide
// operator beside Dynamo's namespace-scoped one (its marker Lease).
//
// What is compared across the take-over is an inventory of the namespace
// (migration_inventory.go): every object of graphKinds by name and UID, and
// every pod's restart count. A pod restart, a pod template change (a new ReplicaSet) or a second
// workload shows there; so does a deleted claim.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cucumber/godog"
	appsv1 "k8s.io/api/apps/v1"
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

// registerMigrationSteps registers the take-over steps. Their state is the
// scenario's (migrationState); the scenario's simulator (and everything in
// it) goes when the scenario ends.
func registerMigrationSteps(sc *godog.ScenarioContext, world *simWorld) {
	w := world.migrationState()
	sc.Step(`^the cluster Dynamo's operator left: its CRDs, graphs, components and children in a namespace "([^"]*)"$`, w.dynamoLeftovers)
	sc.Step(`^every workload Dynamo's operator made runs Ready pods$`, w.dynamoWorkloadsReady)
	sc.Step(`^Dynamo's operator owns the claim "([^"]*)" by the graph "([^"]*)"$`, w.dynamoOwnedClaim)
	sc.Step(`^I helm install our chart as chart/README.md says$`, w.helmInstall)
	sc.Step(`^the API server serves our CRDs in place of Dynamo's$`, w.ourCRDsServed)
	sc.Step(`^every graph there becomes Ready by our operator's status$`, w.graphsReadyByUs)
	sc.Step(`^our operator has written every graph's status and adopted every workload there$`, w.reconciledEverything)
	sc.Step(`^I delete the graph "([^"]*)"$`, w.deleteGraph)
	sc.Step(`^the graph "([^"]*)" and its components are gone and the claim "([^"]*)" is kept, released from it$`, w.claimOutlivesGraph)
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
	return w.servedIn(ctx, v1alpha1.GroupVersion.Version, has, what)
}

// servedIn is served for the nvidia.com version version.
func (w *migrationWorld) servedIn(ctx context.Context, version string, has func(metav1.APIResource) bool, what string) error {
	dc, err := discovery.NewDiscoveryClientForConfig(w.Config)
	if err != nil {
		return err
	}
	return w.eventually(ctx, "the API server to serve "+what, func() error {
		list, err := dc.ServerResourcesForGroupVersion(v1alpha1.GroupVersion.Group + "/" + version)
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
	// Fixtures written in another version (v1beta1) wait for it too, and
	// for every kind of it: the client made next reads discovery once, and
	// a version or kind served a moment later would map to nothing.
	if v := w.nvidiaVersion; v != "" && v != v1alpha1.GroupVersion.Version {
		for _, r := range []string{"dynamographdeployments", "dynamocomponentdeployments"} {
			if err := w.servedIn(ctx, v, func(res metav1.APIResource) bool { return res.Name == r }, "Dynamo's CRDs in "+v+" ("+r+")"); err != nil {
				return err
			}
		}
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

// The hybrid scenario.
