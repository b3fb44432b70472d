package controllers

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dynamoctl/dynamo-operator/internal/builders"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1beta1"
)

func TestIgnoredFieldsAreReported(t *testing.T) {
	now := metav1.NewTime(time.Unix(1, 0))
	dgd := builders.MakeGraph("", "").
		Service("Worker", builders.MakeEmptyService().Failover(&v1alpha1.EnabledSpec{Enabled: true}).Multinode(2)).
		Service("Epp", builders.MakeEmptyService().EPPConfig(&v1alpha1.EPPConfig{})).
		Obj()
	st := &v1alpha1.DynamoGraphDeploymentStatus{}
	setIgnoredFieldsCondition(st, dgd, nil, now)
	c := meta.FindStatusCondition(st.Conditions, ConditionFieldsNotActedOn)
	if c == nil || c.Status != metav1.ConditionTrue {
		t.Fatalf("condition %+v", c)
	}
	for _, want := range []string{"spec.services.Epp.eppConfig", "spec.services.Worker.failover"} {
		if !strings.Contains(c.Message, want) {
			t.Errorf("message %q lacks %s", c.Message, want)
		}
	}
	// Multinode is acted on: a LeaderWorkerSet of leader and workers.
	if strings.Contains(c.Message, "multinode") {
		t.Errorf("message %q reports multinode as not acted on", c.Message)
	}

	dgd = builders.MakeGraph("", "").Service("Worker", builders.MakeEmptyService()).Obj()
	setIgnoredFieldsCondition(st, dgd, nil, now)
	if meta.FindStatusCondition(st.Conditions, ConditionFieldsNotActedOn) != nil {
		t.Errorf("the condition must go when nothing is ignored")
	}
}

// A multinode service still running as the Deployment v0.2.0 rendered
// (WorkloadPending) is reported as v0.2.0 reported it, word for word: the
// graph's status reads the same to both versions, so neither rewrites it
// after an upgrade or a rollback.
func TestIgnoredFieldsKeptMultinodeDeploymentAsV020(t *testing.T) {
	now := metav1.NewTime(time.Unix(1, 0))
	dgd := builders.MakeGraph("", "").
		Service("Decode", builders.MakeEmptyService().Multinode(2)).
		Service("Prefill", builders.MakeEmptyService().Multinode(2)).
		Obj()
	pending := builders.MakeComponent("", "", builders.MakeEmptyService().ServiceName("Decode")).
		Condition(metav1.Condition{Type: v1alpha1.ConditionWorkloadPending, Status: metav1.ConditionTrue}).Obj()
	lws := builders.MakeComponent("", "", builders.MakeEmptyService().ServiceName("Prefill")).
		Condition(metav1.Condition{Type: v1alpha1.ConditionWorkloadPending, Status: metav1.ConditionFalse}).Obj()
	st := &v1alpha1.DynamoGraphDeploymentStatus{}
	setIgnoredFieldsCondition(st, dgd, []*v1alpha1.DynamoComponentDeployment{pending, lws}, now)
	c := meta.FindStatusCondition(st.Conditions, ConditionFieldsNotActedOn)
	// v0.2.0's ignored_fields.go, for the same graph.
	want := "accepted but not acted on: spec.services.Decode.multinode (run as replicas x nodeCount pods of one Deployment, without leader/worker grouping)"
	if c == nil || c.Message != want || c.Reason != "AcceptedNotActedOn" {
		t.Errorf("condition %+v, want message %q", c, want)
	}
}

// A graph written in v1beta1 with fields its v1alpha1 form keeps only in the
// conversion's annotation has each named at its v1beta1 path; scalingAdapter,
// acted on, is not among them.
func TestIgnoredFieldsOfAGraphWrittenInV1beta1(t *testing.T) {
	beta := builders.MakeBetaGraph("", "").
		PriorityClassName("high").
		Component(builders.MakeBetaComponent("Frontend").Type(v1beta1.ComponentTypeFrontend)).
		Component(builders.MakeBetaComponent("Worker").Type(v1beta1.ComponentTypeWorker).
			ScalingAdapter(&v1beta1.ScalingAdapter{}).Failover(&v1beta1.FailoverSpec{})).
		Obj()
	dgd := &v1alpha1.DynamoGraphDeployment{}
	if err := beta.ConvertTo(dgd); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"spec.priorityClassName (not acted on yet)",
		"spec.services.Worker.failover (not rendered: the standby engine shares the active one's GPUs through the GPU memory service: enable gpuMemoryService too)",
	}
	if diff := cmp.Diff(want, ignoredFields(dgd, nil, nil)); diff != "" {
		t.Errorf("fields not acted on (-want +got):\n%s", diff)
	}
}

// Topology constraints are acted on (pod affinity), in either version.
func TestTopologyConstraintIsActedOn(t *testing.T) {
	beta := builders.MakeBetaGraph("", "").Topology("cluster", "rack").
		Component(builders.MakeBetaComponent("Worker").Type(v1beta1.ComponentTypeWorker).PackDomain("host")).Obj()
	fromBeta := &v1alpha1.DynamoGraphDeployment{}
	if err := beta.ConvertTo(fromBeta); err != nil {
		t.Fatal(err)
	}
	graphs := map[string]*v1alpha1.DynamoGraphDeployment{
		"v1alpha1": builders.MakeGraph("", "").Topology("cluster", "rack").
			Service("Worker", builders.MakeEmptyService().PackDomain("host")).Obj(),
		"v1beta1": fromBeta,
	}
	for name, dgd := range graphs {
		st := &v1alpha1.DynamoGraphDeploymentStatus{}
		setIgnoredFieldsCondition(st, dgd, nil, metav1.NewTime(time.Unix(1, 0)))
		if c := meta.FindStatusCondition(st.Conditions, ConditionFieldsNotActedOn); c != nil {
			t.Errorf("%s: %+v", name, c)
		}
	}
}

// A failover or GPU memory service the operator renders is not reported as
// not acted on, except for the GPU sharing a rendered GPU memory service
// leaves to the cluster's DRA driver; one it cannot render says why.
func TestIgnoredFieldsOfEngineFeatures(t *testing.T) {
	on := &v1alpha1.EnabledSpec{Enabled: true}
	vllm := []string{"python3", "-m", "dynamo.vllm"}
	gms := "spec.services.Worker.gpuMemoryService (rendered: ResourceClaimTemplate g-worker-gpu of DeviceClass gpu.nvidia.com, " +
		"sidecar gms-weights; sharing the GPUs needs a DRA driver serving that DeviceClass, which the operator does not check)"
	for name, tc := range map[string]struct {
		service *builders.ServiceWrapper
		want    []string
	}{
		"failover with the GPU memory service, vLLM": {
			service: builders.MakeEmptyService().GPUs(2).Command(vllm).GPUMemoryService(on).Failover(on),
			want:    []string{gms},
		},
		"the GPU memory service alone": {
			service: builders.MakeEmptyService().GPUs(1).GPUMemoryService(on),
			want:    []string{gms},
		},
		"the GPU memory service without GPUs": {
			service: builders.MakeEmptyService().GPUMemoryService(on),
			want: []string{"spec.services.Worker.gpuMemoryService (not rendered: the service asks for no GPUs to share: " +
				"set resources.limits.gpu)"},
		},
		"failover alone": {
			service: builders.MakeEmptyService().GPUs(1).Command(vllm).Failover(on),
			want: []string{"spec.services.Worker.failover (not rendered: the standby engine shares the active one's GPUs " +
				"through the GPU memory service: enable gpuMemoryService too)"},
		},
		"failover of another backend": {
			service: builders.MakeEmptyService().GPUs(1).Command([]string{"python3", "-m", "dynamo.sglang"}).GPUMemoryService(on).Failover(on),
			want: []string{"spec.services.Worker.failover (not rendered: supported for vLLM only, as in Dynamo: " +
				"set backendFramework vllm or run python3 -m dynamo.vllm)", gms},
		},
	} {
		t.Run(name, func(t *testing.T) {
			dgd := builders.MakeGraph("g", "").Service("Worker", tc.service).Obj()
			if diff := cmp.Diff(tc.want, ignoredFields(dgd, nil, nil)); diff != "" {
				t.Errorf("fields not acted on (-want +got):\n%s", diff)
			}
		})
	}
}

// An endpoint picker's eppConfig is rendered and its InferencePool created
// (where the API is served, which the InferencePool condition says); what
// stays with the cluster, the Gateway, is named. On another component type
// it is not rendered.
func TestIgnoredFieldsOfEPPConfig(t *testing.T) {
	dgd := builders.MakeGraph("qwen", "").
		Service("Epp", builders.MakeEmptyService().Type(v1alpha1.ComponentTypeEPP).EPPConfig(&v1alpha1.EPPConfig{})).
		Service("Worker", builders.MakeEmptyService().Type(v1alpha1.ComponentTypeWorker).EPPConfig(&v1alpha1.EPPConfig{})).
		Obj()
	want := []string{
		"spec.services.Epp.eppConfig (rendered: the endpoint picker reads it from /etc/epp/epp-config-dynamo.yaml and picks for " +
			"the InferencePool qwen-pool, which the graph's InferencePool condition reports; the Gateway routing to the pool is " +
			"not created by the operator)",
		"spec.services.Worker.eppConfig (not rendered: only a component of type epp runs an endpoint picker)",
	}
	if diff := cmp.Diff(want, ignoredFields(dgd, nil, nil)); diff != "" {
		t.Errorf("fields not acted on (-want +got):\n%s", diff)
	}
}

// useVirtualService with a gateway is acted on (the component's
// VirtualService condition says how); without one an Ingress serves.
func TestIgnoredFieldsOfUseVirtualService(t *testing.T) {
	ingress := func(gateway *string) *builders.ServiceWrapper {
		return builders.MakeEmptyService().Type(v1alpha1.ComponentTypeFrontend).
			Ingress(&v1alpha1.IngressSpec{Enabled: true, UseVirtualService: true, VirtualServiceGateway: gateway})
	}
	gw := "istio-system/gw"
	dgd := builders.MakeGraph("g", "").Service("Routed", ingress(&gw)).Service("Plain", ingress(nil)).Obj()
	want := []string{"spec.services.Plain.ingress.useVirtualService (no virtualServiceGateway: an Ingress is created instead)"}
	if diff := cmp.Diff(want, ignoredFields(dgd, nil, nil)); diff != "" {
		t.Errorf("fields not acted on (-want +got):\n%s", diff)
	}
}

// A service still running as the Deployment v0.2 rendered, without the
// engine features or the endpoint picker's configuration its spec sets
// (WorkloadPending), is reported as v0.2.1 reported it, word for word: after
// a downgrade v0.2.1 finds the graph's status as it would write it.
func TestIgnoredFieldsKeptDeploymentEngineFeaturesAsV021(t *testing.T) {
	on := &v1alpha1.EnabledSpec{Enabled: true}
	gw := "istio-system/gw"
	dgd := builders.MakeGraph("g", "").
		Service("Worker", builders.MakeEmptyService().GPUs(2).Command([]string{"python3", "-m", "dynamo.vllm"}).
			GPUMemoryService(on).Failover(on)).
		Service("Epp", builders.MakeEmptyService().Type(v1alpha1.ComponentTypeEPP).EPPConfig(&v1alpha1.EPPConfig{})).
		Service("Frontend", builders.MakeEmptyService().Type(v1alpha1.ComponentTypeFrontend).
			Ingress(&v1alpha1.IngressSpec{Enabled: true, UseVirtualService: true, VirtualServiceGateway: &gw})).
		Obj()
	pending := metav1.Condition{Type: v1alpha1.ConditionWorkloadPending, Status: metav1.ConditionTrue, Reason: ReasonEngineFeaturesAtNextChange}
	var components []*v1alpha1.DynamoComponentDeployment
	for _, svc := range []string{"Worker", "Epp", "Frontend"} {
		components = append(components, builders.MakeComponent("", "", builders.MakeEmptyService().ServiceName(svc)).Condition(pending).Obj())
	}
	st := &v1alpha1.DynamoGraphDeploymentStatus{}
	setIgnoredFieldsCondition(st, dgd, components, metav1.NewTime(time.Unix(1, 0)))
	// v0.2.1's ignored_fields.go, for the same graph.
	want := "accepted but not acted on: spec.services.Epp.eppConfig (not passed to the endpoint picker yet); " +
		"spec.services.Frontend.ingress.useVirtualService (an Ingress is created instead); " +
		"spec.services.Worker.failover (not acted on yet); spec.services.Worker.gpuMemoryService (not acted on yet)"
	if c := meta.FindStatusCondition(st.Conditions, ConditionFieldsNotActedOn); c == nil || c.Message != want || c.Reason != "AcceptedNotActedOn" {
		t.Errorf("condition %+v, want message %q", c, want)
	}
}

// Just after an upgrade a component's status is the earlier version's: it
// does not say whether the workload is kept (conditions, but no
// WorkloadPending). The graph names each field that depends on it as not
// known yet, with the component, rather than as rendered. A component with
// no status yet is new, its workload this version's rendering; one whose
// report said so is named as rendered too.
func TestIgnoredFieldsOfAComponentNotReportedYet(t *testing.T) {
	on := &v1alpha1.EnabledSpec{Enabled: true}
	dgd := builders.MakeGraph("g", "").
		Service("Worker", builders.MakeEmptyService().GPUs(2).Command([]string{"python3", "-m", "dynamo.vllm"}).
			GPUMemoryService(on).Failover(on)).
		Service("Decode", builders.MakeEmptyService().Multinode(2)).
		Obj()
	earlier := metav1.Condition{Type: v1alpha1.ConditionAvailable, Status: metav1.ConditionTrue, Reason: "Available"}
	current := metav1.Condition{Type: v1alpha1.ConditionWorkloadPending, Status: metav1.ConditionFalse, Reason: ReasonWorkloadCurrent}
	rendered := "spec.services.Worker.gpuMemoryService (rendered: ResourceClaimTemplate g-worker-gpu of DeviceClass gpu.nvidia.com, " +
		"sidecar gms-weights; sharing the GPUs needs a DRA driver serving that DeviceClass, which the operator does not check)"
	cases := map[string]struct {
		worker, decode *builders.ComponentWrapper
		want           string
	}{
		"the earlier version's status": {
			worker: builders.MakeComponent("g-worker", "", builders.MakeEmptyService().ServiceName("Worker")).Condition(earlier),
			decode: builders.MakeComponent("g-decode", "", builders.MakeEmptyService().ServiceName("Decode")).Condition(earlier),
			want: "accepted but not acted on: " +
				"spec.services.Decode.multinode (not known yet: the component g-decode has not reported its workload); " +
				"spec.services.Worker.failover (not known yet: the component g-worker has not reported its workload); " +
				"spec.services.Worker.gpuMemoryService (not known yet: the component g-worker has not reported its workload)",
		},
		"new components, no status yet": {
			worker: builders.MakeComponent("g-worker", "", builders.MakeEmptyService().ServiceName("Worker")),
			decode: builders.MakeComponent("g-decode", "", builders.MakeEmptyService().ServiceName("Decode")),
			want:   "accepted but not acted on: " + rendered,
		},
		"reported as this version's rendering": {
			worker: builders.MakeComponent("g-worker", "", builders.MakeEmptyService().ServiceName("Worker")).Condition(earlier).Condition(current),
			decode: builders.MakeComponent("g-decode", "", builders.MakeEmptyService().ServiceName("Decode")).Condition(earlier).Condition(current),
			want:   "accepted but not acted on: " + rendered,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			st := &v1alpha1.DynamoGraphDeploymentStatus{}
			setIgnoredFieldsCondition(st, dgd, []*v1alpha1.DynamoComponentDeployment{tc.worker.Obj(), tc.decode.Obj()}, metav1.NewTime(time.Unix(1, 0)))
			c := meta.FindStatusCondition(st.Conditions, ConditionFieldsNotActedOn)
			if c == nil {
				t.Fatal("no FieldsNotActedOn condition")
			}
			if diff := cmp.Diff(tc.want, c.Message); diff != "" {
				t.Errorf("message (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWorkloadKept(t *testing.T) {
	available := metav1.Condition{Type: v1alpha1.ConditionAvailable, Status: metav1.ConditionTrue}
	pending := func(s metav1.ConditionStatus) metav1.Condition {
		return metav1.Condition{Type: v1alpha1.ConditionWorkloadPending, Status: s}
	}
	type result struct{ Kept, Reported bool }
	cases := map[string]struct {
		conditions []metav1.Condition
		want       result
	}{
		"no status yet: new, this version renders it": {nil, result{Kept: false, Reported: true}},
		"an earlier version's status":                 {[]metav1.Condition{available}, result{Kept: false, Reported: false}},
		"kept":                                        {[]metav1.Condition{available, pending(metav1.ConditionTrue)}, result{Kept: true, Reported: true}},
		"runs what the spec sets":                     {[]metav1.Condition{available, pending(metav1.ConditionFalse)}, result{Kept: false, Reported: true}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := builders.MakeComponent("c", "", builders.MakeEmptyService())
			for _, cond := range tc.conditions {
				c.Condition(cond)
			}
			var got result
			got.Kept, got.Reported = workloadKept(c.Obj())
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("workloadKept (-want +got):\n%s", diff)
			}
		})
	}
}
