package controllers

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/dynamoctl/dynamo-operator/internal/builders"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

func component(service string, gen, observed int64, cond *metav1.Condition) *v1alpha1.DynamoComponentDeployment {
	c := builders.MakeComponent("g-"+strings.ToLower(service), "", builders.MakeEmptyService().ServiceName(service)).
		Generation(gen).ObservedGeneration(observed).DeploymentReplicas(2, 1)
	if cond != nil {
		cond.Type = v1alpha1.ConditionAvailable
		c.Condition(*cond)
	}
	return c.Obj()
}

func TestGraphState(t *testing.T) {
	now := metav1.NewTime(time.Unix(1000, 0))
	available := func(gen int64) *metav1.Condition {
		return &metav1.Condition{Status: metav1.ConditionTrue, Reason: ReasonAvailable, ObservedGeneration: gen}
	}
	cases := map[string]struct {
		components []*v1alpha1.DynamoComponentDeployment
		state      v1alpha1.GraphState
		ready      metav1.ConditionStatus
		message    string
	}{
		"every component available for its current spec": {
			components: []*v1alpha1.DynamoComponentDeployment{component("Frontend", 1, 1, available(1)), component("Worker", 3, 3, available(3))},
			state:      v1alpha1.GraphStateSuccessful, ready: metav1.ConditionTrue, message: "all 2 components",
		},
		"a component's status is for an older spec": {
			components: []*v1alpha1.DynamoComponentDeployment{component("Frontend", 1, 1, available(1)), component("Worker", 4, 3, available(3))},
			state:      v1alpha1.GraphStatePending, ready: metav1.ConditionFalse, message: "Worker (no status yet)",
		},
		"a component mid-rollout": {
			components: []*v1alpha1.DynamoComponentDeployment{component("Worker", 2, 2, &metav1.Condition{
				Status: metav1.ConditionFalse, Reason: ReasonRolloutInProgress, Message: "1 of 2 replicas updated", ObservedGeneration: 2})},
			state: v1alpha1.GraphStatePending, ready: metav1.ConditionFalse, message: "waiting for Worker (1 of 2 replicas updated)",
		},
		"a component the user must fix": {
			components: []*v1alpha1.DynamoComponentDeployment{component("Worker", 2, 2, &metav1.Condition{
				Status: metav1.ConditionFalse, Reason: ReasonInvalidSpec, Message: "spec.x: bad", ObservedGeneration: 2})},
			state: v1alpha1.GraphStateFailed, ready: metav1.ConditionFalse, message: "fix the spec of Worker: spec.x: bad",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dgd := builders.MakeGraph("", "").Generation(7).Obj()
			st := graphStatus(dgd, tc.components, now)
			c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady)
			if st.State != tc.state || c == nil || c.Status != tc.ready || !strings.Contains(c.Message, tc.message) {
				t.Fatalf("state %s, Ready %+v; want %s, %s containing %q", st.State, c, tc.state, tc.ready, tc.message)
			}
			if st.ObservedGeneration != 7 || c.ObservedGeneration != 7 {
				t.Errorf("observedGeneration must be the graph's generation")
			}
			want := v1alpha1.ServiceReplicaStatus{ComponentKind: v1alpha1.ComponentKindDeployment,
				ComponentName: tc.components[0].Name, ComponentNames: []string{tc.components[0].Name},
				Replicas: 2, ReadyReplicas: ptr.To[int32](1)}
			if diff := cmp.Diff(want, st.Services[tc.components[0].Spec.ServiceName]); diff != "" {
				t.Errorf("status.services entry (-want +got):\n%s", diff)
			}
		})
	}
}

func TestInvalidGraphStatus(t *testing.T) {
	dgd := builders.MakeGraph("", "").Generation(2).Obj()
	st := invalidGraphStatus(dgd, errors.New("spec.services.X: Invalid value"), metav1.NewTime(time.Unix(1, 0)))
	c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady)
	if st.State != v1alpha1.GraphStateFailed || c.Reason != ReasonInvalidSpec || c.Message != "spec.services.X: Invalid value" {
		t.Fatalf("got %s %+v", st.State, c)
	}
}

// TestGraphStalled: the graph is Stalled (kstatus: Failed) while a
// component is stalled for its current spec, naming the service and the
// cause; the condition keeps its transition time while it stays and goes
// when no component is stalled. A stale Stalled of a component (an older
// generation) does not count.
func TestGraphStalled(t *testing.T) {
	deadline := "0 of 2 replicas available; the rollout made no progress within its progressDeadlineSeconds"
	stalledWorker := func(gen, condGen int64) *v1alpha1.DynamoComponentDeployment {
		dcd := component("Worker", gen, gen, &metav1.Condition{Status: metav1.ConditionFalse, Reason: ReasonProgressDeadline,
			Message: deadline, ObservedGeneration: gen})
		dcd.Status.Conditions = append(dcd.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionStalled,
			Status: metav1.ConditionTrue, Reason: ReasonProgressDeadline, Message: deadline, ObservedGeneration: condGen})
		return dcd
	}
	frontend := component("Frontend", 1, 1, &metav1.Condition{Status: metav1.ConditionTrue, Reason: ReasonAvailable, ObservedGeneration: 1})
	dgd := builders.MakeGraph("", "").Generation(3).Obj()

	t0, t1 := metav1.NewTime(time.Unix(1000, 0)), metav1.NewTime(time.Unix(2000, 0))
	dgd.Status = graphStatus(dgd, []*v1alpha1.DynamoComponentDeployment{frontend, stalledWorker(2, 2)}, t0)
	want := metav1.Condition{Type: v1alpha1.ConditionStalled, Status: metav1.ConditionTrue, Reason: ReasonComponentStalled,
		Message: "Worker: " + deadline, ObservedGeneration: 3, LastTransitionTime: t0}
	if diff := cmp.Diff(&want, meta.FindStatusCondition(dgd.Status.Conditions, v1alpha1.ConditionStalled)); diff != "" {
		t.Fatalf("Stalled (-want +got):\n%s", diff)
	}
	dgd.Status = graphStatus(dgd, []*v1alpha1.DynamoComponentDeployment{frontend, stalledWorker(2, 2)}, t1)
	if c := meta.FindStatusCondition(dgd.Status.Conditions, v1alpha1.ConditionStalled); c == nil || !c.LastTransitionTime.Equal(&t0) {
		t.Errorf("Stalled again must keep its transition time %s: %+v", t0, c)
	}
	// The component's Stalled is for an older spec: it says nothing now.
	dgd.Status = graphStatus(dgd, []*v1alpha1.DynamoComponentDeployment{frontend, stalledWorker(3, 2)}, t1)
	if c := meta.FindStatusCondition(dgd.Status.Conditions, v1alpha1.ConditionStalled); c != nil {
		t.Errorf("a stale component Stalled made the graph Stalled: %+v", c)
	}
	if c := meta.FindStatusCondition(dgd.Status.Conditions, v1alpha1.ConditionReady); c == nil || c.Status != metav1.ConditionFalse {
		t.Errorf("Ready: %+v", c)
	}

	st := invalidGraphStatus(dgd, errors.New("spec.services.X: Invalid value"), t1)
	if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionStalled); c == nil || c.Status != metav1.ConditionTrue ||
		c.Reason != ReasonInvalidSpec || c.Message != "spec.services.X: Invalid value" {
		t.Errorf("an invalid graph must be Stalled: %+v", c)
	}
}
