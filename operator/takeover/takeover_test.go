// Package takeover_test proves that a cluster Dynamo's own operator ran
// (../shared/migration) is read and taken over without restarting or
// doubling a workload, and that a new operator version that renders
// differently restarts nothing until a spec changes. It has an API server
// of its own: the tests swap the cluster-wide CRDs between Dynamo's and
// ours, so they run one at a time.
package takeover_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/onsi/gomega"
	"go.uber.org/zap/zapcore"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/dynamoctl/dynamo-operator/internal/await"
	"github.com/dynamoctl/dynamo-operator/internal/builders"
	"github.com/dynamoctl/dynamo-operator/internal/migration"
	"github.com/dynamoctl/dynamo-operator/internal/testenv"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/app"
	"github.com/dynamoctl/dynamo-operator/operator/render"
)

var (
	env      *testenv.Env
	fixtures *migration.Fixtures
	ourCRDs  []*apiextensionsv1.CustomResourceDefinition
)

func TestMain(m *testing.M) {
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	os.Exit(testenv.Run(m, func(e *testenv.Env) {
		env = e
		if err := apiextensionsv1.AddToScheme(e.Scheme); err != nil {
			panic(err)
		}
		root, err := testenv.RepoRoot()
		if err != nil {
			panic(err)
		}
		if fixtures, err = migration.Load(migration.Dir(root)); err != nil {
			panic(err)
		}
		files, _ := filepath.Glob(filepath.Join(root, "crds", "*.yaml"))
		for _, f := range files {
			crds, err := migration.ReadCRDs(f)
			if err != nil {
				panic(err)
			}
			ourCRDs = append(ourCRDs, crds...)
		}
	}))
}

// installCRDs installs crds and waits until the API server serves them:
// ours have the component's scale subresource, Dynamo's do not.
func installCRDs(t *testing.T, crds []*apiextensionsv1.CustomResourceDefinition, ours bool) {
	t.Helper()
	ctx := context.Background()
	if err := migration.InstallCRDs(ctx, env.Client, crds); err != nil {
		t.Fatal(err)
	}
	// Ours convert by webhook: at the test environment's, as installed.
	if ours {
		if err := env.ApplyCRDs(ctx, env.Conversion()); err != nil {
			t.Fatal(err)
		}
	}
	dc := discovery.NewDiscoveryClientForConfigOrDie(env.Config)
	await.New(t).Eventually(func() bool {
		list, err := dc.ServerResourcesForGroupVersion(v1alpha1.GroupVersion.String())
		if err != nil {
			return false
		}
		hasScale := slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool {
			return r.Name == "dynamocomponentdeployments/scale"
		})
		return hasScale == ours
	}).Should(gomega.BeTrue(), "the API server serves the new CRDs")
}

// dynamoCluster makes a namespace as Dynamo's operator leaves it: its CRDs,
// its graphs and components with their statuses and its children; then
// our CRDs are applied over Dynamo's, as `helm install` of ours does.
func dynamoCluster(t *testing.T) (string, []*unstructured.Unstructured) {
	t.Helper()
	ns := env.Namespace(t, "takeover")
	installCRDs(t, fixtures.DynamoCRDs, false)
	created, err := migration.Create(context.Background(), env.Client, ns, fixtures.Objects)
	installCRDs(t, ourCRDs, true)
	if err != nil {
		t.Fatal(err)
	}
	return ns, created
}

func count(objs []*unstructured.Unstructured, kind string) int {
	n := 0
	for _, o := range objs {
		if o.GetKind() == kind {
			n++
		}
	}
	return n
}

// Every object Dynamo's operator left decodes through our typed client and
// through a controller-runtime cache, listing and watching: the informer
// that once failed on status.service now syncs.
func TestDynamoObjectsDecode(t *testing.T) {
	testenv.Long(t)
	ns, created := dynamoCluster(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var graphs v1alpha1.DynamoGraphDeploymentList
	var components v1alpha1.DynamoComponentDeploymentList
	if err := env.Client.List(ctx, &graphs, client.InNamespace(ns)); err != nil {
		t.Fatalf("listing graphs through the typed client: %v", err)
	}
	if err := env.Client.List(ctx, &components, client.InNamespace(ns)); err != nil {
		t.Fatalf("listing components through the typed client: %v", err)
	}
	if len(graphs.Items) != count(created, "DynamoGraphDeployment") || len(components.Items) != count(created, "DynamoComponentDeployment") {
		t.Fatalf("listed %d graphs and %d components, want %d and %d", len(graphs.Items), len(components.Items),
			count(created, "DynamoGraphDeployment"), count(created, "DynamoComponentDeployment"))
	}
	// Dynamo's status.service reads as our ServiceReplicaStatus, field by field.
	for _, dcd := range components.Items {
		want := &v1alpha1.ServiceReplicaStatus{ComponentKind: v1alpha1.ComponentKindDeployment, ComponentName: dcd.Name,
			ComponentNames: []string{dcd.Name}, Replicas: 1, UpdatedReplicas: 1,
			ReadyReplicas: dcd.Status.Service.ReadyReplicas, AvailableReplicas: dcd.Status.Service.ReadyReplicas}
		if diff := cmp.Diff(want, dcd.Status.Service); diff != "" {
			t.Errorf("%s status.service (-want +got):\n%s", dcd.Name, diff)
		}
	}
	for _, g := range graphs.Items {
		for name, s := range g.Status.Services {
			if s.ComponentKind != v1alpha1.ComponentKindDeployment || len(s.ComponentNames) != 1 || s.ComponentNames[0] != s.ComponentName {
				t.Errorf("%s status.services[%s] = %+v", g.Name, name, s)
			}
		}
	}

	watchErrs := make(chan error, 16)
	c, err := cache.New(env.Config, cache.Options{
		Scheme:            env.Scheme,
		DefaultNamespaces: map[string]cache.Config{ns: {}},
		DefaultWatchErrorHandler: func(_ context.Context, _ *toolscache.Reflector, err error) {
			select {
			case watchErrs <- err:
			default:
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, obj := range []client.Object{&v1alpha1.DynamoGraphDeployment{}, &v1alpha1.DynamoComponentDeployment{}} {
		if _, err := c.GetInformer(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	go func() { _ = c.Start(ctx) }()
	syncCtx, syncCancel := context.WithTimeout(ctx, 30*time.Second)
	defer syncCancel()
	if !c.WaitForCacheSync(syncCtx) {
		select {
		case err := <-watchErrs:
			t.Fatalf("the cache did not sync: %v", err)
		default:
			t.Fatal("the cache did not sync")
		}
	}
	var cachedGraphs v1alpha1.DynamoGraphDeploymentList
	var cachedComponents v1alpha1.DynamoComponentDeploymentList
	if err := c.List(ctx, &cachedGraphs); err != nil {
		t.Fatal(err)
	}
	if err := c.List(ctx, &cachedComponents); err != nil {
		t.Fatal(err)
	}
	if len(cachedGraphs.Items) != len(graphs.Items) || len(cachedComponents.Items) != len(components.Items) {
		t.Fatalf("the cache holds %d graphs and %d components, want %d and %d",
			len(cachedGraphs.Items), len(cachedComponents.Items), len(graphs.Items), len(components.Items))
	}

	// A status written in Dynamo's shape arrives through the watch.
	target := components.Items[0].Name
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("DynamoComponentDeployment"))
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: target}, u); err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(u.Object, int64(7), "status", "service", "readyReplicas"); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Status().Update(ctx, u); err != nil {
		t.Fatal(err)
	}
	await.New(t).Eventually(func() bool {
		got := &v1alpha1.DynamoComponentDeployment{}
		return c.Get(ctx, client.ObjectKey{Namespace: ns, Name: target}, got) == nil &&
			got.Status.Service != nil && ptr.Deref(got.Status.Service.ReadyReplicas, 0) == 7
	}).WithTimeout(10*time.Second).Should(gomega.BeTrue(), "the cache shows the status Dynamo's operator wrote")
	select {
	case err := <-watchErrs:
		t.Fatalf("a list or watch failed: %v", err)
	default:
	}
}

// decodeAs decodes obj's status into a struct of Dynamo's shape; a field
// of another type fails.
func decodeAs(t *testing.T, obj *unstructured.Unstructured, into any) {
	t.Helper()
	raw, err := json.Marshal(obj.Object["status"])
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, into); err != nil {
		t.Errorf("%s %s: our status does not decode as Dynamo's: %v", obj.GetKind(), obj.GetName(), err)
	}
}

type workload struct {
	uid        string
	generation int64
	template   corev1.PodTemplateSpec
	spec       appsv1.DeploymentSpec
}

func workloads(t *testing.T, ns string) map[string]workload {
	t.Helper()
	var list appsv1.DeploymentList
	if err := env.Client.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	out := map[string]workload{}
	for _, d := range list.Items {
		out[d.Name] = workload{uid: string(d.UID), generation: d.Generation, template: d.Spec.Template, spec: d.Spec}
	}
	return out
}

func graphsReady(t *testing.T, ns string) (ready bool, waiting string) {
	t.Helper()
	var graphs v1alpha1.DynamoGraphDeploymentList
	if err := env.Client.List(context.Background(), &graphs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, g := range graphs.Items {
		if g.Status.State != v1alpha1.GraphStateSuccessful || g.Status.ObservedGeneration != g.Generation {
			msg := ""
			for _, c := range g.Status.Conditions {
				msg += c.Message
			}
			return false, fmt.Sprintf("%s: %s %s", g.Name, g.Status.State, msg)
		}
	}
	return len(graphs.Items) > 0, ""
}

func waitReady(t *testing.T, ns string, timeout time.Duration, when string) {
	t.Helper()
	err := await.Until(context.Background(), "every graph Ready "+when, func() error {
		if ok, waiting := graphsReady(t, ns); !ok {
			return fmt.Errorf("not Ready: %s", waiting)
		}
		return nil
	}, await.Within(timeout), await.Every(50*time.Millisecond))
	if err != nil {
		var list appsv1.DeploymentList
		_ = env.Client.List(context.Background(), &list, client.InNamespace(ns))
		for _, d := range list.Items {
			t.Logf("Deployment %s generation %d observed %d replicas %d/%d hash %s", d.Name, d.Generation,
				d.Status.ObservedGeneration, d.Status.AvailableReplicas, ptr.Deref(d.Spec.Replicas, 0), d.Annotations["nvidia.com/last-applied-hash"])
		}
		var dcds v1alpha1.DynamoComponentDeploymentList
		_ = env.Client.List(context.Background(), &dcds, client.InNamespace(ns))
		for _, c := range dcds.Items {
			t.Logf("component %s generation %d observed %d conditions %+v", c.Name, c.Generation, c.Status.ObservedGeneration, c.Status.Conditions)
		}
		t.Fatal(err)
	}
}

// assertKept fails unless after holds the Deployments of before, each the
// same object with the same spec, and no other.
func assertKept(t *testing.T, before, after map[string]workload) {
	t.Helper()
	for name, w := range after {
		b, existed := before[name]
		if !existed {
			t.Errorf("Deployment %s was created beside Dynamo's", name)
			continue
		}
		// The generation may move: the API server counts a Deployment's
		// annotation changes too (adoption records ours). A restart needs
		// a new pod template, and any spec change would show here.
		if b.uid != w.uid {
			t.Errorf("Deployment %s replaced: uid %s -> %s", name, b.uid, w.uid)
		}
		if diff := cmp.Diff(b.spec, w.spec); diff != "" {
			t.Errorf("Deployment %s spec changed (-before +after):\n%s", name, diff)
		}
	}
	if len(after) != len(before) {
		t.Errorf("%d Deployments after the take-over, %d before", len(after), len(before))
	}
}

func startOperator(t *testing.T, args ...string) *testenv.Operator {
	t.Helper()
	op, err := env.NewOperator(args, app.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	if err := op.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(op.Stop)
	return op
}

// Our operator takes over what Dynamo's left: every graph Ready, no pod
// template changed, no workload or component created beside one that runs,
// our status readable in Dynamo's shape and valid under Dynamo's schema,
// and a claim Dynamo owned by its graph outlives the graph.
func TestTakeOverRestartsNothing(t *testing.T) {
	testenv.Long(t)
	ns, created := dynamoCluster(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// Dynamo's operator owns the claims it creates for spec.pvcs by the graph.
	graph := &v1alpha1.DynamoGraphDeployment{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "vllm-agg"}, graph); err != nil {
		t.Fatal(err)
	}
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "model-cache", Namespace: ns, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: v1alpha1.GroupVersion.String(), Kind: "DynamoGraphDeployment", Name: graph.Name, UID: graph.UID,
			Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")}},
		},
	}
	if err := env.Client.Create(ctx, claim); err != nil {
		t.Fatal(err)
	}

	before := workloads(t, ns)
	if len(before) != count(created, "Deployment") || len(before) == 0 {
		t.Fatalf("%d Deployments before the take-over, want %d", len(before), count(created, "Deployment"))
	}
	if err := env.StartDeploymentDriver(ctx, 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	op := startOperator(t)
	waitReady(t, ns, 60*time.Second, "under our operator")
	if op.Writes() == 0 {
		t.Fatal("the operator wrote nothing: the take-over was not exercised")
	}

	after := workloads(t, ns)
	assertKept(t, before, after)
	t.Logf("took over %d graphs and %d Deployments with %d writes; Deployments before %d, after %d",
		count(created, "DynamoGraphDeployment"), len(before), op.Writes(), len(before), len(after))
	var components v1alpha1.DynamoComponentDeploymentList
	if err := env.Client.List(ctx, &components, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if len(components.Items) != count(created, "DynamoComponentDeployment") {
		t.Errorf("%d components after the take-over, %d before", len(components.Items), count(created, "DynamoComponentDeployment"))
	}
	// Each Service still selects its workload's pods, and each workload is ours now.
	var deployments appsv1.DeploymentList
	if err := env.Client.List(ctx, &deployments, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, d := range deployments.Items {
		if d.Labels[render.LabelManagedBy] != render.ManagedByValue {
			t.Errorf("Deployment %s was not adopted: labels %v", d.Name, d.Labels)
		}
		svc := &corev1.Service{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: d.Name}, svc); err != nil {
			t.Errorf("Service of %s: %v", d.Name, err)
			continue
		}
		for k, v := range svc.Spec.Selector {
			if d.Spec.Template.Labels[k] != v {
				t.Errorf("Service %s selects %s=%s, which %s's pods do not carry", svc.Name, k, v, d.Name)
			}
		}
	}

	// Our status, read as Dynamo's operator and tools read it.
	for _, kind := range []string{"DynamoGraphDeployment", "DynamoComponentDeployment"} {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind(kind + "List"))
		if err := env.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		for i := range list.Items {
			if kind == "DynamoGraphDeployment" {
				var st migration.DynamoGraphStatus
				decodeAs(t, &list.Items[i], &st)
				for name, s := range st.Services {
					if s.ComponentKind != "Deployment" || after[s.ComponentName].uid == "" {
						t.Errorf("%s status.services[%s] = %+v names no Deployment", list.Items[i].GetName(), name, s)
					}
				}
			} else {
				var st migration.DynamoComponentStatus
				decodeAs(t, &list.Items[i], &st)
				if st.Service == nil || st.Service.ComponentName != list.Items[i].GetName() {
					t.Errorf("%s status.service = %+v", list.Items[i].GetName(), st.Service)
				}
			}
		}
	}

	// Deleting a graph keeps the claim Dynamo's operator had tied to it.
	if err := env.Client.Delete(ctx, graph, client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil {
		t.Fatal(err)
	}
	await.New(t).Eventually(func() bool {
		var left v1alpha1.DynamoComponentDeploymentList
		_ = env.Client.List(ctx, &left, client.InNamespace(ns), client.MatchingLabels{render.LabelGraphName: graph.Name})
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(graph), &v1alpha1.DynamoGraphDeployment{})
		return len(left.Items) == 0 && client.IgnoreNotFound(err) == nil && err != nil
	}).WithTimeout(60*time.Second).Should(gomega.BeTrue(), "the graph and its components are gone")
	kept := &corev1.PersistentVolumeClaim{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(claim), kept); err != nil {
		t.Fatalf("the claim did not survive its graph: %v", err)
	}
	if !kept.DeletionTimestamp.IsZero() || len(kept.OwnerReferences) != 0 || kept.Labels[render.LabelPVCRetained] != "true" {
		t.Errorf("claim after the graph's deletion: deleting=%v owners=%v labels=%v", kept.DeletionTimestamp, kept.OwnerReferences, kept.Labels)
	}

	// What we wrote is valid under Dynamo's schema too (its required
	// fields, enums and types): write every status back with its CRDs.
	op.Stop()
	installCRDs(t, fixtures.DynamoCRDs, false)
	defer installCRDs(t, ourCRDs, true)
	for _, kind := range []string{"DynamoGraphDeployment", "DynamoComponentDeployment"} {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(schema.GroupVersionKind{Group: v1alpha1.GroupVersion.Group, Version: "v1alpha1", Kind: kind + "List"})
		if err := env.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		for i := range list.Items {
			if err := env.Client.Status().Update(ctx, &list.Items[i]); err != nil {
				t.Errorf("our status of %s %s is invalid under Dynamo's schema: %v", kind, list.Items[i].GetName(), err)
			}
		}
	}
}

func frontendAndWorker(ns string) *v1alpha1.DynamoGraphDeployment {
	return builders.MakeGraph("llm", ns).
		Service("Frontend", builders.MakeService().Type(v1alpha1.ComponentTypeFrontend)).
		Service("Worker", builders.MakeService().Type(v1alpha1.ComponentTypeWorker).GPUs(1)).Obj()
}

func natsOf(t corev1.PodTemplateSpec) string {
	for _, c := range t.Spec.Containers {
		for _, e := range c.Env {
			if e.Name == "NATS_SERVER" {
				return e.Value
			}
		}
	}
	return ""
}

// A new operator version that renders differently (here: another NATS
// address) restarts nothing when it starts; a scale still applies; the new
// rendering reaches a workload when its service's spec changes, and only
// that one.
func TestNewRendererKeepsTemplatesUntilSpecChanges(t *testing.T) {
	ns := env.Namespace(t, "upgrade")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := env.StartDeploymentDriver(ctx, 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, frontendAndWorker(ns)); err != nil {
		t.Fatal(err)
	}
	old := startOperator(t, "--operator-version=v1.0.0", "--natsAddr=nats://old:4222")
	waitReady(t, ns, 30*time.Second, "under v1.0.0")
	old.Stop()
	before := workloads(t, ns)

	startOperator(t, "--operator-version=v1.1.0", "--natsAddr=nats://new:4222")
	patchService(t, ns, "Frontend", `{"replicas":3}`)
	await.New(t).Eventually(func() bool {
		d := &appsv1.Deployment{}
		return env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "llm-frontend"}, d) == nil && ptr.Deref(d.Spec.Replicas, 0) == 3
	}).Should(gomega.BeTrue(), "v1.1.0 scales the frontend")
	waitReady(t, ns, 30*time.Second, "under v1.1.0")
	for name, w := range workloads(t, ns) {
		if diff := cmp.Diff(before[name].template, w.template); diff != "" {
			t.Errorf("%s: the new version changed the pod template without a spec change (-before +after):\n%s", name, diff)
		}
	}

	patchService(t, ns, "Worker", `{"envs":[{"name":"LOG_LEVEL","value":"debug"}]}`)
	await.New(t).Eventually(func() bool {
		return natsOf(workloads(t, ns)["llm-worker"].template) == "nats://new:4222"
	}).Should(gomega.BeTrue(), "the worker is rendered anew after its spec changed")
	waitReady(t, ns, 30*time.Second, "after the worker's rollout")
	if diff := cmp.Diff(before["llm-frontend"].template, workloads(t, ns)["llm-frontend"].template); diff != "" {
		t.Errorf("the frontend's template changed with the worker's spec (-before +after):\n%s", diff)
	}
	if got := natsOf(before["llm-frontend"].template); !strings.Contains(got, "old") {
		t.Fatalf("the premise fails: v1.0.0 rendered NATS_SERVER=%q", got)
	}
}

func patchService(t *testing.T, ns, service, patch string) {
	t.Helper()
	g := &v1alpha1.DynamoGraphDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "llm"}}
	body := fmt.Sprintf(`{"spec":{"services":{%q:%s}}}`, service, patch)
	if err := env.Client.Patch(context.Background(), g, client.RawPatch("application/merge-patch+json", []byte(body))); err != nil {
		t.Fatal(err)
	}
}
