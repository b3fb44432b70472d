package controllers

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"

	"github.com/dynamoctl/dynamo-operator/internal/builders"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

func TestKeepContent(t *testing.T) {
	const ours, input = "dynamo-operator/v2", "in-1"
	cases := map[string]struct {
		live *appsv1.Deployment
		keep bool
	}{
		"nothing exists: render":                           {nil, false},
		"ours: render (the applier writes only on change)": {builders.MakeDeployment("d", "").Annotations(map[string]string{AnnotationRenderer: ours, AnnotationRenderedFor: "old"}).Obj(), false},
		"Dynamo's, never seen: adopt and keep":             {builders.MakeDeployment("d", "").Annotations(map[string]string{"nvidia.com/last-applied-hash": "x"}).Obj(), true},
		"adopted, spec unchanged: keep":                    {builders.MakeDeployment("d", "").Annotations(map[string]string{AnnotationRenderedFor: input}).Obj(), true},
		"adopted, spec changed: render":                    {builders.MakeDeployment("d", "").Annotations(map[string]string{AnnotationRenderedFor: "in-0"}).Obj(), false},
		"older version, spec unchanged: keep":              {builders.MakeDeployment("d", "").Annotations(map[string]string{AnnotationRenderer: "dynamo-operator/v1", AnnotationRenderedFor: input}).Obj(), true},
		"older version, spec changed: render":              {builders.MakeDeployment("d", "").Annotations(map[string]string{AnnotationRenderer: "dynamo-operator/v1", AnnotationRenderedFor: "in-0"}).Obj(), false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := keepContent(asObject(tc.live), ours, input); got != tc.keep {
				t.Errorf("keepContent = %v, want %v", got, tc.keep)
			}
		})
	}
}

func TestStampKeepsTheRendererOfKeptContent(t *testing.T) {
	desired := builders.MakeDeployment("d", "").Annotations(map[string]string{AnnotationRenderer: "inherited-from-the-component"}).Obj()
	stamp(desired, builders.MakeDeployment("d", "").Annotations(nil).Obj(), "dynamo-operator/v2", "in-1", true)
	if _, ok := desired.Annotations[AnnotationRenderer]; ok || desired.Annotations[AnnotationRenderedFor] != "in-1" {
		t.Errorf("adopted content: %v", desired.Annotations)
	}
	stamp(desired, nil, "dynamo-operator/v2", "in-2", false)
	if desired.Annotations[AnnotationRenderer] != "dynamo-operator/v2" || desired.Annotations[AnnotationRenderedFor] != "in-2" {
		t.Errorf("rendered content: %v", desired.Annotations)
	}
}

func TestServiceInputIgnoresReplicasAndOtherServices(t *testing.T) {
	base := builders.MakeGraph("g", "ns").Service("Frontend", builders.MakeService().Replicas(1)).
		Service("Worker", builders.MakeService().GPUs(1)).Obj()
	scaled := builders.MakeGraph("g", "ns").Service("Frontend", builders.MakeService().Replicas(4)).
		Service("Worker", builders.MakeService().GPUs(1).Env("X", "1")).Obj()
	if serviceInput(base, "Frontend") != serviceInput(scaled, "Frontend") {
		t.Error("scaling a service or editing another must not change its input")
	}
	if serviceInput(base, "Worker") == serviceInput(scaled, "Worker") {
		t.Error("editing a service must change its input")
	}
}

// A scaling adapter only says who owns the replicas: a service of a graph
// an earlier version rendered that opts in keeps its content and pods.
func TestInputsIgnoreTheScalingAdapter(t *testing.T) {
	plain := builders.MakeGraph("g", "ns").Service("Worker", builders.MakeService().GPUs(1)).Obj()
	adapted := builders.MakeGraph("g", "ns").Service("Worker", builders.MakeService().GPUs(1).ScalingAdapter(true)).Obj()
	if serviceInput(plain, "Worker") != serviceInput(adapted, "Worker") {
		t.Error("opting in to a scaling adapter must not change the service's input")
	}
	dcd := builders.MakeGraphComponent("g", "Worker", "ns", builders.MakeService().GPUs(1)).Obj()
	adaptedDCD := builders.MakeGraphComponent("g", "Worker", "ns", builders.MakeService().GPUs(1).ScalingAdapter(true)).Obj()
	if workloadInput(dcd, nil) != workloadInput(adaptedDCD, nil) {
		t.Error("opting in to a scaling adapter must not change the component's workload input")
	}
	kept := adaptedDCD.DeepCopy()
	keepComponent(kept, dcd)
	if diff := cmp.Diff(adaptedDCD.Spec, kept.Spec); diff != "" {
		t.Errorf("the kept component (-want +got):\n%s", diff)
	}
}

func TestForeignWorkloadKind(t *testing.T) {
	dcd := builders.MakeComponent("g-w-1a2b3c4d", "ns", builders.MakeService()).Obj()
	dcd.Status.Service = &v1alpha1.ServiceReplicaStatus{ComponentKind: "LeaderWorkerSet", ComponentName: "g-w-1a2b3c4d"}
	if got := foreignWorkloadKind(dcd); got != "LeaderWorkerSet" {
		t.Errorf("Dynamo's LeaderWorkerSet: got %q", got)
	}
	dcd.Status.Service.ComponentKind = v1alpha1.ComponentKindDeployment
	if got := foreignWorkloadKind(dcd); got != "" {
		t.Errorf("a Deployment is adopted: got %q", got)
	}
	dcd.Status.Service.ComponentKind = "LeaderWorkerSet"
	dcd.Annotations = map[string]string{AnnotationRenderer: "dynamo-operator/v2"}
	if got := foreignWorkloadKind(dcd); got != "" {
		t.Errorf("content we rendered is never foreign: got %q", got)
	}
}
