package render

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/dynamoctl/dynamo-operator/internal/builders"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

func TestWorkerHash(t *testing.T) {
	graph := func() *builders.GraphWrapper {
		return builders.MakeGraph("g", "ns").
			Service("Frontend", builders.MakeService().Type(v1alpha1.ComponentTypeFrontend)).
			Service("Prefill", builders.MakeService().Type(v1alpha1.ComponentTypePrefill).GPUs(1)).
			Service("Decode", builders.MakeService().Type(v1alpha1.ComponentTypeDecode).GPUs(1))
	}
	base := WorkerHash(graph().Obj())
	if len(base) != 8 {
		t.Fatalf("hash %q, want 8 hex characters", base)
	}
	cases := map[string]struct {
		graph   *v1alpha1.DynamoGraphDeployment
		changes bool
	}{
		"same spec":                   {graph().Obj(), false},
		"scaling a worker":            {graph().Service("Decode", builders.MakeService().Type(v1alpha1.ComponentTypeDecode).GPUs(1).Replicas(4)).Obj(), false},
		"changing the frontend":       {graph().Service("Frontend", builders.MakeService().Type(v1alpha1.ComponentTypeFrontend).Image("other")).Obj(), false},
		"changing one worker's image": {graph().Service("Prefill", builders.MakeService().Type(v1alpha1.ComponentTypePrefill).GPUs(1).Image("other")).Obj(), true},
		"changing the graph's env":    {graph().Env("K", "v").Obj(), true},
	}
	for name, tc := range cases {
		if got := WorkerHash(tc.graph); (got != base) != tc.changes {
			t.Errorf("%s: hash %s, base %s, want changed=%v", name, got, base, tc.changes)
		}
	}
	noWorkers := builders.MakeGraph("g", "ns").Service("Frontend", builders.MakeService().Type(v1alpha1.ComponentTypeFrontend)).Obj()
	if h := WorkerHash(noWorkers); h != "" {
		t.Errorf("hash %q for a graph without workers", h)
	}

	// Only the workers carry it, and their pods register under it.
	dcds, err := Components(graph().Obj())
	if err != nil {
		t.Fatal(err)
	}
	for _, dcd := range dcds {
		worker := dcd.Spec.ComponentType != v1alpha1.ComponentTypeFrontend
		if got := dcd.Labels[LabelWorkerHash]; (got == base) != worker {
			t.Errorf("%s: worker hash label %q", dcd.Name, got)
		}
		d, err := Deployment(dcd, nil, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got := d.Spec.Template.Labels[LabelWorkerHash]; (got == base) != worker {
			t.Errorf("%s: pod worker hash label %q", dcd.Name, got)
		}
	}
}

func TestRolloutNeverLowersServingCapacity(t *testing.T) {
	zero, one, quarter := intstr.FromInt32(0), intstr.FromInt32(1), intstr.FromString("25%")
	cases := map[string]struct {
		service *builders.ServiceWrapper
		surge   intstr.IntOrString
	}{
		"GPU worker surges one at a time": {builders.MakeService().Type(v1alpha1.ComponentTypeWorker).GPUs(8).Replicas(4), one},
		"frontend surges a quarter":       {builders.MakeService().Type(v1alpha1.ComponentTypeFrontend).Replicas(4), quarter},
		"worker without GPUs":             {builders.MakeService().Type(v1alpha1.ComponentTypeWorker), quarter},
	}
	for name, tc := range cases {
		dcds, err := Components(builders.MakeGraph("g", "ns").Service("S", tc.service).Obj())
		if err != nil {
			t.Fatal(err)
		}
		d, err := Deployment(dcds[0], nil, Options{})
		if err != nil {
			t.Fatal(err)
		}
		want := appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
			RollingUpdate: &appsv1.RollingUpdateDeployment{MaxUnavailable: &zero, MaxSurge: &tc.surge}}
		if diff := cmp.Diff(want, d.Spec.Strategy); diff != "" {
			t.Errorf("%s: strategy (-want +got):\n%s", name, diff)
		}
	}
}

func TestPodContractSettings(t *testing.T) {
	for name, tc := range map[string]struct {
		annotations map[string]string
		wantSA      string
		wantLabels  map[string]string
	}{
		"kubernetes discovery": {nil, "g-k8s-service-discovery", map[string]string{
			LabelDiscoveryBackend: "kubernetes", LabelDiscoveryEnabled: "true", LabelMetricsEnabled: "true", LabelDynamoNamespace: "ns-g",
		}},
		"etcd discovery": {map[string]string{AnnotationDiscoveryBackend: "etcd"}, "", map[string]string{
			LabelMetricsEnabled: "true", LabelDynamoNamespace: "ns-g",
		}},
	} {
		t.Run(name, func(t *testing.T) {
			pod, _ := mustDeploy(t, builders.MakeGraphComponent("g", "Worker", "ns", builders.MakeService().Image(testImage).
				Type("main")).
				Annotations(tc.annotations).Obj(), nil, Options{})
			if pod.ServiceAccountName != tc.wantSA {
				t.Errorf("serviceAccountName %q, want %q", pod.ServiceAccountName, tc.wantSA)
			}
			if diff := cmp.Diff(ptr.To[int64](60), pod.TerminationGracePeriodSeconds); diff != "" {
				t.Errorf("terminationGracePeriodSeconds: %s", diff)
			}
			if diff := cmp.Diff(&corev1.PodSecurityContext{FSGroup: ptr.To[int64](1000)}, pod.SecurityContext); diff != "" {
				t.Errorf("securityContext: %s", diff)
			}
			d, _ := Deployment(builders.MakeGraphComponent("g", "Worker", "ns", builders.MakeService().Type(v1alpha1.ComponentTypeWorker).Image(testImage)).
				Annotations(tc.annotations).Obj(), nil, Options{})
			for k, v := range tc.wantLabels {
				if d.Spec.Template.Labels[k] != v {
					t.Errorf("pod label %s = %q, want %q", k, d.Spec.Template.Labels[k], v)
				}
			}
			if _, set := d.Spec.Template.Labels[LabelDiscoveryBackend]; set != (tc.wantLabels[LabelDiscoveryBackend] != "") {
				t.Errorf("discovery label set = %v", set)
			}
		})
	}

	// The user's pod settings win.
	pod, _ := mustDeploy(t, builders.MakeGraphComponent("g", "Worker", "ns", builders.MakeService().Type(v1alpha1.ComponentTypeWorker).Image(testImage).
		PodSpec(&corev1.PodSpec{
			ServiceAccountName: "mine",
			SecurityContext:    &corev1.PodSecurityContext{FSGroup: ptr.To[int64](2000), RunAsNonRoot: ptr.To(true)},
		})).Obj(), nil, Options{})
	if pod.ServiceAccountName != "mine" || *pod.SecurityContext.FSGroup != 2000 || !*pod.SecurityContext.RunAsNonRoot {
		t.Errorf("user's pod settings lost: sa %q, securityContext %+v", pod.ServiceAccountName, pod.SecurityContext)
	}

	// A long namespace and graph name make an invalid label value: the
	// label is left out, the env keeps the name.
	long := builders.MakeGraphComponent("a-graph-with-a-long-name-too", "Worker", "a-namespace-with-a-rather-long-name-for-a-team", builders.MakeService().Type(v1alpha1.ComponentTypeWorker).Image(testImage)).Obj()
	d, err := Deployment(long, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if v, set := d.Spec.Template.Labels[LabelDynamoNamespace]; set {
		t.Errorf("invalid label value %q rendered", v)
	}
}

func TestDiscoveryRBAC(t *testing.T) {
	dgd := builders.MakeGraph("vllm-agg", "team-a").Label("team", "a").
		Service("Frontend", builders.MakeService().Type(v1alpha1.ComponentTypeFrontend)).Obj()
	got := GraphDiscoveryRBAC(dgd)
	if got == nil {
		t.Fatal("no discovery objects for a graph with kubernetes discovery")
	}
	labels := map[string]string{
		"team": "a", LabelGraphName: "vllm-agg", LabelManagedBy: ManagedByValue,
		"app.kubernetes.io/component": "rbac", "app.kubernetes.io/name": "vllm-agg-k8s-service-discovery",
	}
	if got.ServiceAccount.Name != "vllm-agg-k8s-service-discovery" || got.ServiceAccount.Namespace != "team-a" {
		t.Errorf("service account %s/%s", got.ServiceAccount.Namespace, got.ServiceAccount.Name)
	}
	for _, l := range []map[string]string{got.ServiceAccount.Labels, got.Role.Labels, got.RoleBinding.Labels} {
		if diff := cmp.Diff(labels, l); diff != "" {
			t.Errorf("labels (-want +got):\n%s", diff)
		}
	}
	wantBinding := rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "vllm-agg-k8s-service-discovery-role"}
	if got.Role.Name != wantBinding.Name || got.RoleBinding.RoleRef != wantBinding {
		t.Errorf("role %q, roleRef %+v", got.Role.Name, got.RoleBinding.RoleRef)
	}
	wantSubjects := []rbacv1.Subject{{Kind: "ServiceAccount", Name: "vllm-agg-k8s-service-discovery", Namespace: "team-a"}}
	if diff := cmp.Diff(wantSubjects, got.RoleBinding.Subjects); diff != "" {
		t.Errorf("subjects (-want +got):\n%s", diff)
	}

	if GraphDiscoveryRBAC(builders.MakeGraph("g", "ns").Annotation(AnnotationDiscoveryBackend, "etcd").Obj()) != nil {
		t.Error("discovery objects for a graph with etcd discovery")
	}
	// A component of a graph gets its graph's; a standalone one its own.
	if ComponentDiscoveryRBAC(builders.MakeGraphComponent("g", "Worker", "ns", builders.MakeService().Type(v1alpha1.ComponentTypeWorker).Image(testImage)).Obj()) != nil {
		t.Error("a graph's component renders its own discovery objects")
	}
	solo := ComponentDiscoveryRBAC(builders.MakeComponent("solo", "ns", builders.MakeService().ServiceName("Worker").Type(v1alpha1.ComponentTypeWorker).Image(testImage)).Obj())
	if solo == nil || solo.ServiceAccount.Name != "solo-k8s-service-discovery" {
		t.Errorf("standalone component's discovery objects: %+v", solo)
	}
}
