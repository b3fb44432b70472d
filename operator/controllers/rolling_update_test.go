package controllers

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dynamoctl/dynamo-operator/internal/builders"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

// rollingGraph is a frontend, a decode and a prefill worker, at image v.
func rollingGraph(v string) *builders.GraphWrapper {
	return builders.MakeGraph("g", "ns").Generation(2).
		Service("Frontend", builders.MakeService().Type(v1alpha1.ComponentTypeFrontend).Image(v)).
		Service("decode", builders.MakeService().Type(v1alpha1.ComponentTypeDecode).Image(v)).
		Service("prefill", builders.MakeService().Type(v1alpha1.ComponentTypePrefill).Image(v))
}

// rollingComponent is service's component rendered for graph, Available
// for its current spec or not.
func rollingComponent(graph *v1alpha1.DynamoGraphDeployment, service string, available bool) *v1alpha1.DynamoComponentDeployment {
	status := metav1.ConditionFalse
	if available {
		status = metav1.ConditionTrue
	}
	return builders.MakeGraphComponent("g", service, "ns", builders.MakeService()).
		Annotation(AnnotationRenderedFor, serviceInput(graph, service)).Generation(2).ObservedGeneration(2).
		Condition(metav1.Condition{Type: v1alpha1.ConditionAvailable, Status: status, ObservedGeneration: 2}).Obj()
}

// stalled marks a component Stalled for its current spec.
func stalled(dcd *v1alpha1.DynamoComponentDeployment) *v1alpha1.DynamoComponentDeployment {
	dcd.Status.Conditions = append(dcd.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionStalled,
		Status: metav1.ConditionTrue, ObservedGeneration: dcd.Generation})
	return dcd
}

func byService(dcds ...*v1alpha1.DynamoComponentDeployment) map[string]*v1alpha1.DynamoComponentDeployment {
	out := map[string]*v1alpha1.DynamoComponentDeployment{}
	for _, d := range dcds {
		out[d.Spec.ServiceName] = d
	}
	return out
}

func TestRollingHold(t *testing.T) {
	old, next := rollingGraph("img:1").Obj(), rollingGraph("img:2").Obj()
	cases := map[string]struct {
		live map[string]*v1alpha1.DynamoComponentDeployment
		want map[string]bool
	}{
		"every service changed: the frontend waits for the workers": {
			live: byService(rollingComponent(old, "Frontend", true), rollingComponent(old, "decode", true), rollingComponent(old, "prefill", true)),
			want: map[string]bool{"Frontend": true},
		},
		"the workers roll: the frontend still waits": {
			live: byService(rollingComponent(old, "Frontend", true), rollingComponent(next, "decode", false), rollingComponent(next, "prefill", true)),
			want: map[string]bool{"Frontend": true},
		},
		"the workers are done: the frontend goes": {
			live: byService(rollingComponent(old, "Frontend", true), rollingComponent(next, "decode", true), rollingComponent(next, "prefill", true)),
			want: map[string]bool{},
		},
		"a stalled worker holds nothing back": {
			live: byService(rollingComponent(old, "Frontend", true), rollingComponent(next, "decode", true),
				stalled(rollingComponent(next, "prefill", false))),
			want: map[string]bool{},
		},
		"nothing changed": {
			live: byService(rollingComponent(next, "Frontend", true), rollingComponent(next, "decode", true), rollingComponent(next, "prefill", true)),
			want: map[string]bool{},
		},
		"a new graph": {want: map[string]bool{}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, rollingHold(next, tc.live)); diff != "" {
				t.Errorf("held (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRollingUpdateStatus(t *testing.T) {
	old := rollingGraph("img:1").Obj()
	start := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	now := metav1.NewTime(start.Add(time.Minute))
	inProgress := &v1alpha1.RollingUpdateStatus{Phase: v1alpha1.RollingUpdatePhaseInProgress, StartTime: &start}
	next := func() *builders.GraphWrapper { return rollingGraph("img:2") }
	cases := map[string]struct {
		dgd           *builders.GraphWrapper
		prev          *v1alpha1.RollingUpdateStatus
		before, after func(g *v1alpha1.DynamoGraphDeployment) []*v1alpha1.DynamoComponentDeployment
		want          *v1alpha1.RollingUpdateStatus
	}{
		"nothing changed: no rolling update": {
			dgd: next(),
			before: func(g *v1alpha1.DynamoGraphDeployment) []*v1alpha1.DynamoComponentDeployment {
				return []*v1alpha1.DynamoComponentDeployment{rollingComponent(g, "decode", true)}
			},
			after: func(g *v1alpha1.DynamoGraphDeployment) []*v1alpha1.DynamoComponentDeployment {
				return []*v1alpha1.DynamoComponentDeployment{rollingComponent(g, "decode", true)}
			},
		},
		"a spec change starts one": {
			dgd: next(),
			before: func(*v1alpha1.DynamoGraphDeployment) []*v1alpha1.DynamoComponentDeployment {
				return []*v1alpha1.DynamoComponentDeployment{rollingComponent(old, "Frontend", true), rollingComponent(old, "decode", true)}
			},
			after: func(g *v1alpha1.DynamoGraphDeployment) []*v1alpha1.DynamoComponentDeployment {
				return []*v1alpha1.DynamoComponentDeployment{rollingComponent(old, "Frontend", true), rollingComponent(g, "decode", false)}
			},
			want: &v1alpha1.RollingUpdateStatus{Phase: v1alpha1.RollingUpdatePhaseInProgress, StartTime: &now},
		},
		"the workers done, the frontend held": {
			dgd:  next(),
			prev: inProgress,
			after: func(g *v1alpha1.DynamoGraphDeployment) []*v1alpha1.DynamoComponentDeployment {
				return []*v1alpha1.DynamoComponentDeployment{rollingComponent(old, "Frontend", true),
					rollingComponent(g, "decode", true), rollingComponent(g, "prefill", true)}
			},
			want: &v1alpha1.RollingUpdateStatus{Phase: v1alpha1.RollingUpdatePhaseInProgress, StartTime: &start,
				UpdatedServices: []string{"decode", "prefill"}},
		},
		"every service done": {
			dgd:  next(),
			prev: inProgress,
			after: func(g *v1alpha1.DynamoGraphDeployment) []*v1alpha1.DynamoComponentDeployment {
				return []*v1alpha1.DynamoComponentDeployment{rollingComponent(g, "Frontend", true),
					rollingComponent(g, "decode", true), rollingComponent(g, "prefill", true)}
			},
			want: &v1alpha1.RollingUpdateStatus{Phase: v1alpha1.RollingUpdatePhaseCompleted, StartTime: &start, EndTime: &now,
				UpdatedServices: []string{"Frontend", "decode", "prefill"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := tc.dgd.Obj()
			g.Status.RollingUpdate = tc.prev
			var before []*v1alpha1.DynamoComponentDeployment
			if tc.before != nil {
				before = tc.before(g)
			}
			got := rollingUpdateStatus(g, byService(before...), tc.after(g), now)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("status.rollingUpdate (-want +got):\n%s", diff)
			}
		})
	}
}
