package steps

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/cucumber/godog"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/internal/builders"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/render"
	"github.com/dynamoctl/dynamo-operator/sim/nodes"
)

// The features added since the previous release, through an upgrade: a
// scaling adapter on a service (an HPA scales it), a restart (spec.restart),
// topology constraints (the graph's and a service's packDomain). The
// previous release's CRDs know none of these fields and prune them; so
// graphs it made opt in after the upgrade, and graphs made with them under
// the working tree live through an operator roll with no pod restarted and
// no replica count reverted. The graphs are built here (dayTwoGraphs) and
// join the scenario's graphs, which every other step then checks.

// dayTwo is what the steps acted on, for the steps after them.
type dayTwo struct {
	// adapted is the service given a scaling adapter (graph and service).
	adapted struct{ namespace, graph, service string }
	// restarted is the graph restarted, and the restart's id.
	restarted struct{ namespace, graph, id string }
}

// queuedRequests is the external metric the adapter's HPA scales on, at
// queuedPerReplica queued requests a replica.
const (
	queuedRequests   = "dynamo_queued_requests"
	queuedPerReplica = 10
)

// dayTwoGraphs are the graphs of the scenario by name. smallGraph (a
// frontend and a CPU worker) is a graph with none of the new fields; a
// constrained graph carries every one a graph can be created with.
var dayTwoGraphs = map[string]func(name, ns string) *v1alpha1.DynamoGraphDeployment{
	"adapted":           smallGraph,
	"restarted":         smallGraph,
	"constrained-early": constrainedGraph,
	"constrained":       constrainedGraph,
}

// constrainedGraph packs every pod of the graph into one rack and the
// worker's onto one host, and gives the worker a scaling adapter.
func constrainedGraph(name, ns string) *v1alpha1.DynamoGraphDeployment {
	return builders.MakeGraph(name, ns).
		Topology("cluster", "rack").
		Service("Frontend", builders.MakeService().Type(v1alpha1.ComponentTypeFrontend)).
		Service("Worker", builders.MakeService().Type(v1alpha1.ComponentTypeWorker).PackDomain("host").ScalingAdapter(true)).
		Obj()
}

func registerDayTwoSteps(sc *godog.ScenarioContext, w *simWorld) {
	sc.Step(`^I create the graph "([^"]+)" in the namespace "([^"]+)"$`, w.createDayTwoGraph)
	sc.Step(`^the graph "([^"/]+)/([^"]+)" was stored without its scaling adapter and topology constraints$`, w.storedWithoutNewFields)
	sc.Step(`^I give the service "([^"]+)" of the graph "([^"/]+)/([^"]+)" a scaling adapter$`, w.giveScalingAdapter)
	sc.Step(`^an HPA scales that service's adapter to (\d+) replicas$`, w.hpaScalesAdapter)
	sc.Step(`^no pod of any graph restarted or was replaced, and that service gained (\d+) pods$`, w.onlyAdaptedGained)
	sc.Step(`^that service's adapter and component still have (\d+) replicas$`, w.adapterKeepsReplicas)
	sc.Step(`^I restart the graph "([^"/]+)/([^"]+)" with the id "([^"]+)"$`, w.restartGraph)
	sc.Step(`^its restart completes having replaced each of its pods, and no other pod restarted or was replaced$`, w.restartReplacedOnlyItsPods)
	sc.Step(`^the pods of the graph "([^"/]+)/([^"]+)" run in one rack, its worker's on one node$`, w.podsPacked)
	sc.Step(`^I upgrade the cluster-wide release to the working tree again, which replaces its operator pods$`, w.rollOperator)
}

// createDayTwoGraph creates a graph of dayTwoGraphs, as a user does, and
// adds it to the scenario's graphs.
func (w *simWorld) createDayTwoGraph(ctx context.Context, name, ns string) error {
	build, ok := dayTwoGraphs[name]
	if !ok {
		return fmt.Errorf("no graph %q is defined for this scenario (dayTwoGraphs)", name)
	}
	if err := w.NeedSim(); err != nil {
		return err
	}
	if err := w.ensureNamespace(ctx, ns); err != nil {
		return err
	}
	if err := w.Client.Create(ctx, build(name, ns)); err != nil {
		return err
	}
	w.graphs.list = append(w.graphs.list, Graph{Namespace: ns, Name: name})
	if !slices.Contains(w.graphs.namespaces, ns) {
		w.graphs.namespaces = append(w.graphs.namespaces, ns)
	}
	return nil
}

// storedWithoutNewFields reads the graph as stored and fails on any
// scalingAdapter or topologyConstraint in it: what a release whose CRDs do
// not know them keeps of a graph that carries them.
func (w *simWorld) storedWithoutNewFields(ctx context.Context, ns, name string) error {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("DynamoGraphDeployment"))
	if err := w.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u); err != nil {
		return err
	}
	var kept []string
	if _, ok, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "topologyConstraint"); ok {
		kept = append(kept, "spec.topologyConstraint")
	}
	services, _, _ := unstructured.NestedMap(u.Object, "spec", "services")
	for svc := range services {
		for _, f := range []string{"scalingAdapter", "topologyConstraint"} {
			if _, ok, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "services", svc, f); ok {
				kept = append(kept, "spec.services."+svc+"."+f)
			}
		}
	}
	sort.Strings(kept)
	if len(kept) > 0 {
		return fmt.Errorf("graph %s/%s was stored with %s", ns, name, strings.Join(kept, ", "))
	}
	return nil
}

// updateGraph applies change to the graph as stored and writes it back,
// again on a conflict with the operator's writes, as kubectl edit would.
func (w *simWorld) updateGraph(ctx context.Context, ns, name string, change func(*v1alpha1.DynamoGraphDeployment) error) error {
	return w.eventually(ctx, "graph "+ns+"/"+name+" updated", func() error {
		dgd := &v1alpha1.DynamoGraphDeployment{}
		if err := w.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, dgd); err != nil {
			return err
		}
		if err := change(dgd); err != nil {
			return err
		}
		return w.Client.Update(ctx, dgd, client.FieldOwner(scenarioFieldOwner))
	})
}

func (w *simWorld) giveScalingAdapter(ctx context.Context, service, ns, graph string) error {
	if err := w.updateGraph(ctx, ns, graph, func(dgd *v1alpha1.DynamoGraphDeployment) error {
		svc := dgd.Spec.Services[service]
		if svc == nil {
			return fmt.Errorf("graph %s/%s has no service %q", ns, graph, service)
		}
		svc.ScalingAdapter = &v1alpha1.EnabledSpec{Enabled: true}
		return nil
	}); err != nil {
		return err
	}
	w.dayTwo.adapted.namespace, w.dayTwo.adapted.graph, w.dayTwo.adapted.service = ns, graph, service
	return nil
}

// hpaScalesAdapter points an HPA at the adapter of the service given one,
// on an external metric whose value asks for n replicas, and waits until
// the adapter, the component and the workload run n.
func (w *simWorld) hpaScalesAdapter(ctx context.Context, n int) error {
	a := w.dayTwo.adapted
	if a.graph == "" {
		return fmt.Errorf("no service was given a scaling adapter in this scenario")
	}
	name := render.ScalingAdapterName(a.graph, a.service)
	if err := SetExternalMetric(ctx, w.Client, a.namespace, queuedRequests, fmt.Sprint(n*queuedPerReplica)); err != nil {
		return err
	}
	hpa := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: a.namespace},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{
				APIVersion: v1alpha1.GroupVersion.String(), Kind: "DynamoGraphDeploymentScalingAdapter", Name: name},
			MinReplicas: ptr.To[int32](1),
			MaxReplicas: int32(n),
			Metrics: []autoscalingv2.MetricSpec{{
				Type: autoscalingv2.ExternalMetricSourceType,
				External: &autoscalingv2.ExternalMetricSource{
					Metric: autoscalingv2.MetricIdentifier{Name: queuedRequests},
					Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType,
						AverageValue: resource.NewQuantity(queuedPerReplica, resource.DecimalSI)},
				},
			}},
		},
	}
	// The adapter is the operator's to create once it sees the opt-in.
	if err := w.eventually(ctx, "the adapter "+name+" created", func() error {
		return w.Client.Get(ctx, client.ObjectKey{Namespace: a.namespace, Name: name}, &v1alpha1.DynamoGraphDeploymentScalingAdapter{})
	}); err != nil {
		return err
	}
	if err := w.Client.Create(ctx, hpa); err != nil {
		return err
	}
	start := time.Now()
	if err := w.replicasAre(ctx, n); err != nil {
		return err
	}
	w.Figure("HPA scaled the adapter and its pods in (s)", fmt.Sprintf("%.1f", time.Since(start).Seconds()))
	return nil
}

// replicasAre waits until the adapted service's adapter, component and
// Deployment ask for n replicas and n pods are available.
func (w *simWorld) replicasAre(ctx context.Context, n int) error {
	a := w.dayTwo.adapted
	key := client.ObjectKey{Namespace: a.namespace, Name: render.ComponentName(a.graph, a.service)}
	return w.eventually(ctx, fmt.Sprintf("the service %s of %s/%s at %d replicas", a.service, a.namespace, a.graph, n), func() error {
		adapter := &v1alpha1.DynamoGraphDeploymentScalingAdapter{}
		if err := w.Client.Get(ctx, client.ObjectKey{Namespace: a.namespace, Name: render.ScalingAdapterName(a.graph, a.service)}, adapter); err != nil {
			return err
		}
		dcd := &v1alpha1.DynamoComponentDeployment{}
		if err := w.Client.Get(ctx, key, dcd); err != nil {
			return err
		}
		dep := &appsv1.Deployment{}
		if err := w.Client.Get(ctx, key, dep); err != nil {
			return err
		}
		got := fmt.Sprintf("adapter %d, component %d, Deployment %d (%d available)", adapter.Spec.Replicas,
			ptr.Deref(dcd.Spec.Replicas, -1), ptr.Deref(dep.Spec.Replicas, -1), dep.Status.AvailableReplicas)
		if want := fmt.Sprintf("adapter %d, component %d, Deployment %d (%d available)", n, n, n, n); got != want {
			return fmt.Errorf("%s, want %s", got, want)
		}
		return nil
	})
}

// onlyAdaptedGained is noPodRestarted but for n new pods of the service
// given a scaling adapter, which its HPA scaled up: the opt-in itself
// replaces none of its pods.
func (w *simWorld) onlyAdaptedGained(ctx context.Context, n int) error {
	a := w.dayTwo.adapted
	if a.graph == "" {
		return fmt.Errorf("no service was given a scaling adapter in this scenario")
	}
	changes, err := w.podChanges(ctx)
	if err != nil {
		return err
	}
	component := render.ComponentName(a.graph, a.service)
	var others []string
	gained := 0
	for _, c := range changes {
		if c.kind == podNew && c.graph == a.namespace+"/"+a.graph && c.component == component {
			gained++
			continue
		}
		others = append(others, c.text)
	}
	w.Figure("pods the adapted service gained", gained)
	w.Figure("pods restarted or replaced", len(others))
	if len(others) > 0 {
		return fmt.Errorf("%d pod changes:\n  %s", len(others), strings.Join(others, "\n  "))
	}
	if gained != n {
		return fmt.Errorf("the service %s of %s/%s gained %d pods, want %d", a.service, a.namespace, a.graph, gained, n)
	}
	return nil
}

// adapterKeepsReplicas checks that what the HPA set still holds: the
// adapter, the component and the Deployment at n replicas, n available.
func (w *simWorld) adapterKeepsReplicas(ctx context.Context, n int) error {
	if w.dayTwo.adapted.graph == "" {
		return fmt.Errorf("no service was given a scaling adapter in this scenario")
	}
	// Already so, or the step would wait for a revert to be undone.
	return w.replicasAre(ctx, n)
}

func (w *simWorld) restartGraph(ctx context.Context, ns, graph, id string) error {
	if err := w.updateGraph(ctx, ns, graph, func(dgd *v1alpha1.DynamoGraphDeployment) error {
		dgd.Spec.Restart = &v1alpha1.Restart{ID: id}
		return nil
	}); err != nil {
		return err
	}
	w.dayTwo.restarted.namespace, w.dayTwo.restarted.graph, w.dayTwo.restarted.id = ns, graph, id
	return nil
}

// restartReplacedOnlyItsPods waits until the restarted graph reports the
// restart Completed and is Ready, every pod of it noted before is gone and
// as many new ones run; and fails on any other pod's change.
func (w *simWorld) restartReplacedOnlyItsPods(ctx context.Context) error {
	r := w.dayTwo.restarted
	if r.graph == "" {
		return fmt.Errorf("no graph was restarted in this scenario")
	}
	graph := r.namespace + "/" + r.graph
	noted := 0
	for _, p := range w.graphs.pods {
		if p.graph == graph {
			noted++
		}
	}
	if noted == 0 {
		return fmt.Errorf("no pod of %s was noted", graph)
	}
	start := time.Now()
	var others []string
	err := w.eventually(ctx, "the restart "+r.id+" of "+graph+" completed", func() error {
		dgd := &v1alpha1.DynamoGraphDeployment{}
		if err := w.Client.Get(ctx, client.ObjectKey{Namespace: r.namespace, Name: r.graph}, dgd); err != nil {
			return err
		}
		if st := dgd.Status.Restart; st == nil || st.ObservedID != r.id || st.Phase != v1alpha1.RestartPhaseCompleted {
			return fmt.Errorf("status.restart is %+v", st)
		}
		if c := meta.FindStatusCondition(dgd.Status.Conditions, "Ready"); c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("not Ready: %+v", c)
		}
		changes, err := w.podChanges(ctx)
		if err != nil {
			return err
		}
		others = others[:0]
		gone, added := 0, 0
		for _, c := range changes {
			switch {
			case c.graph == graph && c.kind == podGone && strings.HasSuffix(c.text, "is gone (replaced)"):
				gone++
			case c.graph == graph && c.kind == podNew:
				added++
			case c.graph == graph && c.kind == podGone:
				// Still terminating: checked again.
			default:
				others = append(others, c.text)
			}
		}
		if len(others) > 0 {
			// A change of another graph's pods does not go away: it
			// fails the step below rather than being waited out.
			return nil
		}
		if gone != noted || added != noted {
			return fmt.Errorf("%d of %d pods replaced, %d new", gone, noted, added)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if len(others) > 0 {
		return fmt.Errorf("%d changes of pods of other graphs:\n  %s", len(others), strings.Join(others, "\n  "))
	}
	w.Figure("restart replaced the graph's "+fmt.Sprint(noted)+" pods in (s)", fmt.Sprintf("%.1f", time.Since(start).Seconds()))
	return nil
}

// podsPacked checks the graph's topology constraint took: every pod of the
// graph on a node of one rack, every pod of its worker on one node.
func (w *simWorld) podsPacked(ctx context.Context, ns, graph string) error {
	var pods corev1.PodList
	if err := w.Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{render.LabelGraphName: graph}); err != nil {
		return err
	}
	racks, hosts := map[string]bool{}, map[string]bool{}
	worker := render.ComponentName(graph, "Worker")
	for _, p := range pods.Items {
		node := &corev1.Node{}
		if err := w.Client.Get(ctx, types.NamespacedName{Name: p.Spec.NodeName}, node); err != nil {
			return fmt.Errorf("pod %s's node: %w", p.Name, err)
		}
		racks[node.Labels[nodes.LabelRack]] = true
		if p.Labels[render.LabelComponent] == worker {
			hosts[node.Name] = true
		}
	}
	if len(pods.Items) == 0 || len(racks) != 1 || racks[""] || len(hosts) != 1 {
		return fmt.Errorf("graph %s/%s's %d pods run in racks %v, its worker's on nodes %v", ns, graph, len(pods.Items), racks, hosts)
	}
	return nil
}

// rollOperator helm-upgrades the cluster-wide release to the working tree,
// which it runs already, with a pod annotation no earlier upgrade set: the
// operator's pods are replaced, as by any upgrade of the chart, and the
// new ones take every graph over from the ones before.
func (w *simWorld) rollOperator(ctx context.Context) error {
	r, err := w.Release(ctx, "the working tree")
	if err != nil {
		return err
	}
	_, ns, ok := w.InstalledRelease(ClusterRelease)
	if !ok {
		return fmt.Errorf("the scenario installed no release %q", ClusterRelease)
	}
	before, err := OperatorPods(ctx, w.Client, ClusterRelease, ns)
	if err != nil {
		return err
	}
	start := time.Now()
	if _, err := w.Helm.Upgrade(ctx, ClusterRelease, ns, r, fmt.Sprintf("dynamo-operator.controllerManager.podAnnotations.scenario-upgrade=at-%d", start.UnixNano())); err != nil {
		return err
	}
	err = w.eventually(ctx, "the operator pods before the upgrade gone", func() error {
		now, err := OperatorPods(ctx, w.Client, ClusterRelease, ns)
		if err != nil {
			return err
		}
		for _, p := range now {
			for _, b := range before {
				if p.UID == b.UID {
					return fmt.Errorf("operator pod %s still runs", p.Name)
				}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	w.Figure("helm upgrade replacing the operator pods (s)", fmt.Sprintf("%.1f", time.Since(start).Seconds()))
	return nil
}
