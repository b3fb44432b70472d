// Package multinodetest runs the operator against an API server that has
// no LeaderWorkerSet API at first; it has a control plane of its own
// because installing a CRD is visible to every test sharing one.
package multinodetest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/dynamoctl/dynamo-operator/internal/await"
	"github.com/dynamoctl/dynamo-operator/internal/builders"
	"github.com/dynamoctl/dynamo-operator/internal/migration"
	"github.com/dynamoctl/dynamo-operator/internal/testenv"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/controllers"
	"github.com/dynamoctl/dynamo-operator/operator/render"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.UseDevMode(true)))
	os.Exit(testenv.Run(m, func(e *testenv.Env) { env = e }))
}

// installLWSCRD installs LeaderWorkerSet's CRD (again: it is idempotent).
func installLWSCRD(ctx context.Context, t *testing.T) {
	t.Helper()
	file, err := testenv.LWSCRDFile()
	if err != nil {
		t.Fatal(err)
	}
	crds, err := migration.ReadCRDs(file)
	if err != nil {
		t.Fatal(err)
	}
	s := testenv.NewScheme()
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	admin, err := client.New(env.Config, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	if err := migration.InstallCRDs(ctx, admin, crds); err != nil {
		t.Fatal(err)
	}
	// The tests' own client maps the kind too before they read it: its
	// mapper may have looked the group up before the CRD was there.
	await.New(t).Eventually(func() bool {
		_, err := env.Client.RESTMapper().RESTMapping(schema.GroupKind{Group: lwsv1.GroupVersion.Group, Kind: "LeaderWorkerSet"}, lwsv1.GroupVersion.Version)
		return err == nil
	}).Should(gomega.BeTrue(), "the test client maps LeaderWorkerSet")
}

// On a cluster without LeaderWorkerSet a multinode graph fails saying what
// to install; once the CRD is installed the same operator process renders
// the groups, and the component counts groups, not pods.
func TestMultinodeWaitsForTheLWSAPIThenCountsGroups(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := env.Namespace(t, "multinode")
	env.StartControllers(ctx, t)

	graph := builders.MakeGraph("llm", ns).
		Service("decode", builders.MakeService().Replicas(2).VLLMGroups(4, 4)).Obj()
	if err := env.Client.Create(ctx, graph); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKey{Namespace: ns, Name: "llm-decode"}
	dcd := &v1alpha1.DynamoComponentDeployment{}
	await.New(t).Eventually(func() bool {
		if env.Client.Get(ctx, key, dcd) != nil {
			return false
		}
		c := meta.FindStatusCondition(dcd.Status.Conditions, v1alpha1.ConditionAvailable)
		return c != nil && c.Reason == controllers.ReasonMissingAPI
	}).Should(gomega.BeTrue(), "the component says LeaderWorkerSet is missing")
	c := meta.FindStatusCondition(dcd.Status.Conditions, v1alpha1.ConditionAvailable)
	for _, want := range []string{"spec.multinode", "install LeaderWorkerSet", "without restarting the operator"} {
		if !strings.Contains(c.Message, want) {
			t.Errorf("message %q lacks %q", c.Message, want)
		}
	}
	// No Deployment stands in for the groups.
	if err := env.Client.Get(ctx, key, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment"}}); err == nil {
		t.Error("a Deployment was rendered for a multinode service")
	}
	g := &v1alpha1.DynamoGraphDeployment{}
	await.New(t).Eventually(func() bool {
		return env.Client.Get(ctx, client.ObjectKeyFromObject(graph), g) == nil && g.Status.State == v1alpha1.GraphStateFailed &&
			strings.Contains(meta.FindStatusCondition(g.Status.Conditions, v1alpha1.ConditionReady).Message, "LeaderWorkerSet")
	}).Should(gomega.BeTrue(), "the graph reports the component's failure")

	installLWSCRD(ctx, t)
	installed := time.Now()
	lws := &lwsv1.LeaderWorkerSet{}
	await.New(t).Eventually(func() bool {
		return env.Client.Get(ctx, key, lws) == nil
	}).WithTimeout(60*time.Second).Should(gomega.BeTrue(), "the operator renders the LeaderWorkerSet")
	t.Logf("LeaderWorkerSet rendered %v after the CRD was installed", time.Since(installed).Round(100*time.Millisecond))
	if *lws.Spec.Replicas != 2 || *lws.Spec.LeaderWorkerTemplate.Size != 4 {
		t.Errorf("replicas %d size %d, want 2 groups of 4", *lws.Spec.Replicas, *lws.Spec.LeaderWorkerTemplate.Size)
	}
	if !metav1.IsControlledBy(lws, dcd) {
		t.Error("the LeaderWorkerSet is not the component's")
	}

	// LeaderWorkerSet's controller reports both groups ready; there is
	// none here, so the test writes what it would.
	lws.Status = lwsv1.LeaderWorkerSetStatus{ObservedGeneration: lws.Generation, Replicas: 2, ReadyReplicas: 2, UpdatedReplicas: 2}
	if err := env.Client.Status().Update(ctx, lws); err != nil {
		t.Fatal(err)
	}
	await.New(t).Eventually(func() bool {
		if env.Client.Get(ctx, key, dcd) != nil {
			return false
		}
		c := meta.FindStatusCondition(dcd.Status.Conditions, v1alpha1.ConditionAvailable)
		return c != nil && c.Status == metav1.ConditionTrue && dcd.Status.ObservedGeneration == dcd.Generation
	}).Should(gomega.BeTrue(), "the component is available")
	if dcd.Status.Replicas != 2 || dcd.Status.ReadyReplicas != 2 || dcd.Status.Service.ComponentKind != v1alpha1.ComponentKindLeaderWorkerSet {
		t.Errorf("status counts %d replicas, %d ready, kind %s; want 2 groups of LeaderWorkerSet",
			dcd.Status.Replicas, dcd.Status.ReadyReplicas, dcd.Status.Service.ComponentKind)
	}

	// The scale subresource says the same: 2 instances, selected by their leaders.
	scale := &unstructured.Unstructured{}
	scale.SetGroupVersionKind(schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"})
	if err := env.Client.SubResource("scale").Get(ctx, dcd, scale); err != nil {
		t.Fatal(err)
	}
	replicas, _, _ := unstructured.NestedInt64(scale.Object, "status", "replicas")
	selector, _, _ := unstructured.NestedString(scale.Object, "status", "selector")
	spec, _, _ := unstructured.NestedInt64(scale.Object, "spec", "replicas")
	if diff := cmp.Diff("2 2 "+render.LabelComponent+"=llm-decode,"+render.LabelMultinodeRole+"=leader",
		fmt.Sprintf("%d %d %s", spec, replicas, selector)); diff != "" {
		t.Errorf("scale (spec status selector) (-want +got):\n%s", diff)
	}

	// The Service selects the leaders, which serve.
	svc := &corev1.Service{}
	if err := env.Client.Get(ctx, key, svc); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(render.MultinodeSelector(dcd), svc.Spec.Selector); diff != "" {
		t.Errorf("Service selector (-want +got):\n%s", diff)
	}
}

// After an upgrade from v0.2.0, which rendered a multinode service as one
// Deployment of replicas × nodeCount pods, the service keeps that
// Deployment, its pods untouched, and says what happens next; scaling
// reaches it; the next spec change replaces it by a LeaderWorkerSet
// (render/doc.go: a rendering change reaches a workload at its service's
// next spec change). It runs after the test above, which needs a cluster
// without the LeaderWorkerSet API at its start.
func TestMultinodeUpgradeKeepsThePreviousDeploymentUntilTheSpecChanges(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	installLWSCRD(ctx, t)
	ns := env.Namespace(t, "multinode-upgrade")
	dcd := builders.MakeComponent("llm-decode", ns, builders.MakeService().Type(v1alpha1.ComponentTypeWorker).Replicas(2).GPUs(4).Multinode(2).
		Image("nvcr.io/nvidia/ai-dynamo/vllm-runtime:0.9.0").
		Command([]string{"python3", "-m", "dynamo.vllm"}, "--tensor-parallel-size", "8")).Obj()
	if err := env.Client.Create(ctx, dcd); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(dcd)

	// What v0.2.0 left: its Deployment (the single-node rendering of the
	// service, replicas × nodeCount pods), stamped with its renderer and
	// the input it rendered.
	single := dcd.DeepCopy()
	single.Spec.Multinode = nil
	old, err := render.Deployment(single, nil, render.Options{})
	if err != nil {
		t.Fatal(err)
	}
	old.Spec.Replicas = ptr.To[int32](4)
	if err := env.CreateEarlierRendering(ctx, dcd, old, "v0.2.0"); err != nil {
		t.Fatal(err)
	}
	if err := env.StartDeploymentDriver(ctx, 0); err != nil {
		t.Fatal(err)
	}

	env.StartControllers(ctx, t)

	// The operator acts on the component (its status, its Service) and
	// leaves the Deployment's spec as v0.2.0 wrote it.
	env.AwaitEarlierRenderingKept(ctx, t, dcd, controllers.ReasonLeaderWorkerSetAtNextChange, "v0.2.0", "LeaderWorkerSet")
	svc := &corev1.Service{}
	await.New(t).Eventually(func() bool { return env.Client.Get(ctx, key, svc) == nil }).Should(gomega.BeTrue(), "the component's Service")
	if diff := cmp.Diff(old.Spec.Selector.MatchLabels, svc.Spec.Selector); diff != "" {
		t.Errorf("the Service must select the kept Deployment's pods (-want +got):\n%s", diff)
	}
	events := &eventsv1.EventList{}
	await.New(t).Eventually(func() bool {
		if env.Client.List(ctx, events, client.InNamespace(ns)) != nil {
			return false
		}
		for _, e := range events.Items {
			if e.Reason == controllers.ReasonLeaderWorkerSetAtNextChange && e.Regarding.Name == dcd.Name {
				return true
			}
		}
		return false
	}).Should(gomega.BeTrue(), "an event says what happens at the next spec change")
	env.ExpectEarlierRenderingUnwritten(ctx, t, old)
	if err := env.Client.Get(ctx, key, &lwsv1.LeaderWorkerSet{}); !apierrors.IsNotFound(err) {
		t.Errorf("a LeaderWorkerSet beside the kept Deployment (get: %v)", err)
	}

	// Scaling never waits for a spec change: 3 instances are 6 pods.
	patch := client.MergeFrom(dcd.DeepCopy())
	dcd.Spec.Replicas = ptr.To[int32](3)
	if err := env.Client.Patch(ctx, dcd, patch); err != nil {
		t.Fatal(err)
	}
	live := &appsv1.Deployment{}
	await.New(t).Eventually(func() bool {
		return env.Client.Get(ctx, key, live) == nil && *live.Spec.Replicas == 6
	}).Should(gomega.BeTrue(), "the kept Deployment scales to 3 × 2 pods")
	if diff := cmp.Diff(old.Spec.Template, live.Spec.Template); diff != "" {
		t.Errorf("scaling changed the pod template (-v0.2.0 +now):\n%s", diff)
	}

	// The next spec change: the LeaderWorkerSet replaces the Deployment.
	patch = client.MergeFrom(dcd.DeepCopy())
	dcd.Spec.Envs = append(dcd.Spec.Envs, corev1.EnvVar{Name: "EDITED", Value: "1"})
	if err := env.Client.Patch(ctx, dcd, patch); err != nil {
		t.Fatal(err)
	}
	lws := &lwsv1.LeaderWorkerSet{}
	await.New(t).Eventually(func() bool {
		return env.Client.Get(ctx, key, lws) == nil && apierrors.IsNotFound(env.Client.Get(ctx, key, &appsv1.Deployment{}))
	}).Should(gomega.BeTrue(), "the LeaderWorkerSet replaces the Deployment")
	if *lws.Spec.Replicas != 3 || *lws.Spec.LeaderWorkerTemplate.Size != 2 {
		t.Errorf("replicas %d size %d, want 3 groups of 2", *lws.Spec.Replicas, *lws.Spec.LeaderWorkerTemplate.Size)
	}
	await.New(t).Eventually(func() bool {
		return env.Client.Get(ctx, key, dcd) == nil && testenv.WorkloadCurrent(dcd) &&
			dcd.Status.Service.ComponentKind == v1alpha1.ComponentKindLeaderWorkerSet
	}).Should(gomega.BeTrue(), "the component no longer says a change is pending")

	// This component has no graph, so no renderer annotation of its own,
	// and its status now names a LeaderWorkerSet: the one this operator
	// rendered, which is no other operator's. Its groups become ready (the
	// test writes what LeaderWorkerSet's controller would) and it is
	// Available, not refused as another operator's.
	if err := env.Client.Get(ctx, key, lws); err != nil {
		t.Fatal(err)
	}
	lws.Status = lwsv1.LeaderWorkerSetStatus{ObservedGeneration: lws.Generation, Replicas: 3, ReadyReplicas: 3, UpdatedReplicas: 3}
	if err := env.Client.Status().Update(ctx, lws); err != nil {
		t.Fatal(err)
	}
	await.New(t).Eventually(func() bool {
		return env.Client.Get(ctx, key, dcd) == nil && dcd.Status.ReadyReplicas == 3 &&
			meta.IsStatusConditionTrue(dcd.Status.Conditions, v1alpha1.ConditionAvailable)
	}).Should(gomega.BeTrue(), "the component is available on its LeaderWorkerSet")
	for _, c := range dcd.Status.Conditions {
		if c.Reason == controllers.ReasonNotAdoptable {
			t.Errorf("condition %s: %s", c.Type, c.Message)
		}
	}
}

// A component whose status names a LeaderWorkerSet another operator made
// (Dynamo's: no renderer annotation) is refused, and nothing is rendered
// beside it: it would run the service twice on the same GPUs.
func TestAnotherOperatorsLeaderWorkerSetIsNotAdopted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	installLWSCRD(ctx, t)
	ns := env.Namespace(t, "multinode-foreign")
	dcd := builders.MakeComponent("llm-decode", ns, builders.MakeService().Replicas(1).VLLMGroups(2, 4)).Obj()
	if err := env.Client.Create(ctx, dcd); err != nil {
		t.Fatal(err)
	}
	theirs, err := render.LeaderWorkerSet(dcd, nil, render.Options{})
	if err != nil {
		t.Fatal(err)
	}
	theirs.Name, theirs.Annotations = dcd.Name+"-0", nil
	if err := controllerutil.SetControllerReference(dcd, theirs, env.Scheme); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, theirs); err != nil {
		t.Fatal(err)
	}
	dcd.Status.Service = &v1alpha1.ServiceReplicaStatus{
		ComponentKind: v1alpha1.ComponentKindLeaderWorkerSet, ComponentName: theirs.Name, ComponentNames: []string{theirs.Name},
	}
	if err := env.Client.Status().Update(ctx, dcd); err != nil {
		t.Fatal(err)
	}

	env.StartControllers(ctx, t)
	key := client.ObjectKeyFromObject(dcd)
	await.New(t).Eventually(func() bool {
		if env.Client.Get(ctx, key, dcd) != nil {
			return false
		}
		c := meta.FindStatusCondition(dcd.Status.Conditions, v1alpha1.ConditionAvailable)
		return c != nil && c.Reason == controllers.ReasonNotAdoptable
	}).Should(gomega.BeTrue(), "the component is refused as another operator's")
	c := meta.FindStatusCondition(dcd.Status.Conditions, v1alpha1.ConditionAvailable)
	if want := "its LeaderWorkerSet " + theirs.Name + " was created by another operator"; !strings.Contains(c.Message, want) {
		t.Errorf("message %q lacks %q", c.Message, want)
	}
	if err := env.Client.Get(ctx, key, &lwsv1.LeaderWorkerSet{}); !apierrors.IsNotFound(err) {
		t.Errorf("a LeaderWorkerSet was rendered beside another operator's (get: %v)", err)
	}
}

// podGroup reads a gang PodGroup (scheduling.k8s.io/v1alpha2, which the
// API server serves with the gates internal/testenv turns on).
func podGroup(ctx context.Context, ns, name string) (*unstructured.Unstructured, error) {
	pg := &unstructured.Unstructured{}
	pg.SetGroupVersionKind(render.PodGroupGVK)
	return pg, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pg)
}

// Each group of a multinode component gets a gang PodGroup of nodeCount,
// the component's, and so does the group a rollout surges (index replicas);
// scale-down removes those past them, and a nodeCount change replaces them
// (minCount is immutable).
func TestMultinodeGroupsGetGangPodGroups(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	installLWSCRD(ctx, t)
	ns := env.Namespace(t, "multinode-gang")
	env.StartControllers(ctx, t)

	graph := builders.MakeGraph("llm", ns).
		Service("decode", builders.MakeService().Replicas(2).VLLMGroups(3, 4)).Obj()
	if err := env.Client.Create(ctx, graph); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKey{Namespace: ns, Name: "llm-decode"}
	dcd := &v1alpha1.DynamoComponentDeployment{}
	minCount := func(pg *unstructured.Unstructured) int64 {
		n, _, _ := unstructured.NestedInt64(pg.Object, "spec", "schedulingPolicy", "gang", "minCount")
		return n
	}
	var first *unstructured.Unstructured
	await.New(t).Eventually(func() bool {
		pg0, err0 := podGroup(ctx, ns, "llm-decode-0")
		_, err1 := podGroup(ctx, ns, "llm-decode-1")
		_, err2 := podGroup(ctx, ns, "llm-decode-2")
		first = pg0
		return err0 == nil && err1 == nil && err2 == nil
	}).Should(gomega.BeTrue(), "both groups and the rollout's surge group have their PodGroup")
	if _, err := podGroup(ctx, ns, "llm-decode-3"); !apierrors.IsNotFound(err) {
		t.Errorf("PodGroup llm-decode-3, past the surge group: %v", err)
	}
	if err := env.Client.Get(ctx, key, dcd); err != nil {
		t.Fatal(err)
	}
	if minCount(first) != 3 || !metav1.IsControlledBy(first, dcd) || first.GetLabels()[render.LabelComponent] != "llm-decode" {
		t.Errorf("PodGroup llm-decode-0: minCount %d, owners %v, labels %v; want 3, the component's",
			minCount(first), first.GetOwnerReferences(), first.GetLabels())
	}
	await.New(t).Eventually(func() bool {
		c := meta.FindStatusCondition(dcd.Status.Conditions, controllers.ConditionGangScheduling)
		return env.Client.Get(ctx, key, dcd) == nil && c != nil && c.Status == metav1.ConditionTrue && c.Reason == controllers.ReasonPodGroups
	}).Should(gomega.BeTrue(), "the component says its groups are gang scheduled")

	// Scale-down: the PodGroup past the new surge group goes, the first
	// stays as is.
	if err := env.Client.Patch(ctx, graph, client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"services":{"decode":{"replicas":1}}}}`))); err != nil {
		t.Fatal(err)
	}
	await.New(t).Eventually(func() bool {
		_, err := podGroup(ctx, ns, "llm-decode-2")
		return apierrors.IsNotFound(err)
	}).Should(gomega.BeTrue(), "the PodGroup past the replicas and the surge group is deleted")
	if _, err := podGroup(ctx, ns, "llm-decode-1"); err != nil {
		t.Errorf("PodGroup llm-decode-1, now the surge group's: %v", err)
	}
	if pg0, err := podGroup(ctx, ns, "llm-decode-0"); err != nil || pg0.GetUID() != first.GetUID() {
		t.Errorf("PodGroup llm-decode-0 after scale-down: %v, uid changed %t", err, err == nil && pg0.GetUID() != first.GetUID())
	}

	// nodeCount changes: minCount cannot, so the PodGroup is replaced.
	if err := env.Client.Patch(ctx, graph, client.RawPatch("application/merge-patch+json",
		[]byte(`{"spec":{"services":{"decode":{"multinode":{"nodeCount":2},"extraPodSpec":{"mainContainer":{"args":["--tensor-parallel-size","8"]}}}}}}`))); err != nil {
		t.Fatal(err)
	}
	await.New(t).Eventually(func() bool {
		pg0, err := podGroup(ctx, ns, "llm-decode-0")
		return err == nil && pg0.GetUID() != first.GetUID() && minCount(pg0) == 2
	}).Should(gomega.BeTrue(), "the PodGroup is replaced with minCount 2")
}
