package controllers

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dynamoctl/dynamo-operator/internal/builders"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1beta1"
)

func TestPlanRestart(t *testing.T) {
	const (
		seq = v1alpha1.RestartStrategyTypeSequential
		par = v1alpha1.RestartStrategyTypeParallel
	)
	graph := func() *builders.GraphWrapper {
		return builders.MakeGraph("g", "ns").Generation(3).
			Service("Frontend", builders.MakeService()).
			Service("decode", builders.MakeService()).
			Service("prefill", builders.MakeService())
	}
	// component is service's component carrying restartAt (none for ""),
	// Available for its current spec or still rolling.
	component := func(service, restartAt string, available bool) *v1alpha1.DynamoComponentDeployment {
		s := builders.MakeService()
		if restartAt != "" {
			s.PodAnnotation(AnnotationRestartAt, restartAt)
		}
		status := metav1.ConditionFalse
		if available {
			status = metav1.ConditionTrue
		}
		return builders.MakeGraphComponent("g", service, "ns", s).Generation(2).ObservedGeneration(2).
			Condition(metav1.Condition{Type: v1alpha1.ConditionAvailable, Status: status, ObservedGeneration: 2}).Obj()
	}
	components := func(dcds ...*v1alpha1.DynamoComponentDeployment) map[string]*v1alpha1.DynamoComponentDeployment {
		out := map[string]*v1alpha1.DynamoComponentDeployment{}
		for _, d := range dcds {
			out[d.Spec.ServiceName] = d
		}
		return out
	}
	restarting := func(id string, services ...string) *v1alpha1.RestartStatus {
		return &v1alpha1.RestartStatus{ObservedID: id, Phase: v1alpha1.RestartPhaseRestarting, InProgress: services}
	}
	done := func(id string) *v1alpha1.RestartStatus {
		return &v1alpha1.RestartStatus{ObservedID: id, Phase: v1alpha1.RestartPhaseCompleted}
	}
	order := []string{"prefill", "decode", "Frontend"}
	cases := map[string]struct {
		dgd  *builders.GraphWrapper
		live map[string]*v1alpha1.DynamoComponentDeployment
		want restartPlan
	}{
		"no restart asked": {dgd: graph()},
		"an ended restart stays reported after spec.restart is removed": {
			dgd:  graph().RestartStatus("a", v1alpha1.RestartPhaseCompleted),
			want: restartPlan{status: done("a")},
		},
		"a restart cut short by the removal of spec.restart is no longer reported": {
			dgd: graph().RestartStatus("a", v1alpha1.RestartPhaseRestarting, "decode"),
		},
		"a new id starts with the first service of the order": {
			dgd:  graph().Restart("a", seq, order...),
			live: components(component("prefill", "", true), component("decode", "", true), component("Frontend", "", true)),
			want: restartPlan{status: restarting("a", "prefill"), annotate: map[string]string{"prefill": "a"}},
		},
		"without an order, services go by name": {
			dgd:  graph().Restart("a", ""),
			want: restartPlan{status: restarting("a", "Frontend"), annotate: map[string]string{"Frontend": "a"}},
		},
		"the service in progress still rolls": {
			dgd:  graph().Restart("a", seq, order...).RestartStatus("a", v1alpha1.RestartPhaseRestarting, "prefill"),
			live: components(component("prefill", "a", false), component("decode", "", true)),
			want: restartPlan{status: restarting("a", "prefill"), annotate: map[string]string{"prefill": "a"}},
		},
		"the service in progress is not annotated yet where the cache shows it": {
			dgd:  graph().Restart("a", seq, order...).RestartStatus("a", v1alpha1.RestartPhaseRestarting, "prefill"),
			live: components(component("prefill", "", true)),
			want: restartPlan{status: restarting("a", "prefill"), annotate: map[string]string{"prefill": "a"}},
		},
		"the next service starts once the one in progress rolled": {
			dgd:  graph().Restart("a", seq, order...).RestartStatus("a", v1alpha1.RestartPhaseRestarting, "prefill"),
			live: components(component("prefill", "a", true), component("decode", "", true)),
			want: restartPlan{status: restarting("a", "decode"), annotate: map[string]string{"prefill": "a", "decode": "a"}},
		},
		"completed once the last service rolled": {
			dgd: graph().Restart("a", seq, order...).RestartStatus("a", v1alpha1.RestartPhaseRestarting, "Frontend"),
			live: components(component("prefill", "a", true), component("decode", "a", true),
				component("Frontend", "a", true)),
			want: restartPlan{status: done("a"), annotate: map[string]string{"prefill": "a", "decode": "a", "Frontend": "a"}},
		},
		"the same id again does nothing": {
			dgd:  graph().Restart("a", seq, order...).RestartStatus("a", v1alpha1.RestartPhaseCompleted),
			live: components(component("prefill", "a", true)),
			want: restartPlan{status: done("a")},
		},
		"a new id after a completed restart starts again": {
			dgd:  graph().Restart("b", seq, order...).RestartStatus("a", v1alpha1.RestartPhaseCompleted),
			live: components(component("prefill", "a", true)),
			want: restartPlan{status: restarting("b", "prefill"), annotate: map[string]string{"prefill": "b"}},
		},
		"a new id mid-way starts again from the first service": {
			dgd:  graph().Restart("b", seq, order...).RestartStatus("a", v1alpha1.RestartPhaseRestarting, "decode"),
			live: components(component("prefill", "a", true), component("decode", "a", false)),
			want: restartPlan{status: restarting("b", "prefill"), annotate: map[string]string{"prefill": "b"}},
		},
		"an order naming no service of the graph skips it": {
			dgd:  graph().Restart("a", seq, "gone", "decode"),
			want: restartPlan{status: restarting("a", "decode"), annotate: map[string]string{"decode": "a"}},
		},
		"an order naming no service at all completes at once": {
			dgd:  graph().Restart("a", seq, "gone"),
			want: restartPlan{status: done("a")},
		},
		"parallel: every service at once": {
			dgd: graph().Restart("a", par),
			want: restartPlan{status: restarting("a", "Frontend", "decode", "prefill"),
				annotate: map[string]string{"prefill": "a", "decode": "a", "Frontend": "a"}},
		},
		"parallel: services that rolled leave inProgress": {
			dgd:  graph().Restart("a", par).RestartStatus("a", v1alpha1.RestartPhaseRestarting, "Frontend", "decode", "prefill"),
			live: components(component("prefill", "a", true), component("decode", "a", false), component("Frontend", "a", true)),
			want: restartPlan{status: restarting("a", "decode"),
				annotate: map[string]string{"prefill": "a", "decode": "a", "Frontend": "a"}},
		},
		"parallel: completed once all rolled": {
			dgd:  graph().Restart("a", par).RestartStatus("a", v1alpha1.RestartPhaseRestarting, "decode"),
			live: components(component("prefill", "a", true), component("decode", "a", true), component("Frontend", "a", true)),
			want: restartPlan{status: done("a"), annotate: map[string]string{"prefill": "a", "decode": "a", "Frontend": "a"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := planRestart(tc.dgd.Obj(), tc.live)
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(restartPlan{})); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
		})
	}
}

// A service not restarting keeps the annotation its component carries:
// removing it would roll the service's pods.
func TestRestartValue(t *testing.T) {
	live := builders.MakeGraphComponent("g", "worker", "ns",
		builders.MakeService().PodAnnotation(AnnotationRestartAt, "2026-01-01T00:00:00Z")).Obj()
	cases := map[string]struct {
		plan restartPlan
		live *v1alpha1.DynamoComponentDeployment
		want string
	}{
		"restarting now":                   {plan: restartPlan{annotate: map[string]string{"worker": "b"}}, live: live, want: "b"},
		"not restarting: the live value":   {live: live, want: "2026-01-01T00:00:00Z"},
		"not restarting, no component yet": {},
		"another service restarting":       {plan: restartPlan{annotate: map[string]string{"frontend": "b"}}, live: live, want: "2026-01-01T00:00:00Z"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := tc.plan.restartValue("worker", tc.live); got != tc.want {
				t.Errorf("restartValue = %q, want %q", got, tc.want)
			}
		})
	}
}

// A restart id written through v1beta1 before v1alpha1 had spec.restart is
// taken as seen: it restarts nothing when it reaches v1alpha1 later.
func TestLegacyRestart(t *testing.T) {
	legacy := `{"parts":{"restart":{"value":{"id":"old"}}}}`
	cases := map[string]struct {
		dgd  *builders.GraphWrapper
		want *v1alpha1.RestartStatus
	}{
		"no annotation": {dgd: builders.MakeGraph("g", "ns").Service("w", builders.MakeService())},
		"a saved restart": {
			dgd:  builders.MakeGraph("g", "ns").Service("w", builders.MakeService()).Annotation(v1beta1.AnnotationBetaSpec, legacy),
			want: &v1alpha1.RestartStatus{ObservedID: "old", Phase: v1alpha1.RestartPhaseSuperseded},
		},
		"a status already": {
			dgd: builders.MakeGraph("g", "ns").Service("w", builders.MakeService()).Annotation(v1beta1.AnnotationBetaSpec, legacy).
				RestartStatus("x", v1alpha1.RestartPhaseCompleted),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, legacyRestart(tc.dgd.Obj())); diff != "" {
				t.Errorf("legacyRestart (-want +got):\n%s", diff)
			}
		})
	}
}
