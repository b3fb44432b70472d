package controllers

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dynamoctl/dynamo-operator/internal/builders"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

func status(state v1alpha1.GraphState, gen int64, ready metav1.ConditionStatus, ready2 int32) *v1alpha1.DynamoGraphDeploymentStatus {
	return &v1alpha1.DynamoGraphDeploymentStatus{
		State: state, ObservedGeneration: gen,
		Conditions: []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: ready, Reason: "R"}},
		Services:   map[string]v1alpha1.ServiceReplicaStatus{"W": {ReadyReplicas: &ready2}},
	}
}

func TestProgressThrottle(t *testing.T) {
	var p progressThrottle
	key := types.NamespacedName{Namespace: "ns", Name: "g"}
	t0 := time.Unix(1000, 0)
	pending := status(v1alpha1.GraphStatePending, 1, metav1.ConditionFalse, 0)
	news := func(blockers string) progressNews {
		return progressNews{blockers: blockers, awaited: "g-frontend,g-worker"}
	}

	if w := p.wait(key, pending, status(v1alpha1.GraphStatePending, 1, metav1.ConditionFalse, 1), news(""), t0); w != 0 {
		t.Fatalf("the first progress write must not wait, got %s", w)
	}
	p.wrote(key, news(""), t0)
	if w := p.wait(key, pending, status(v1alpha1.GraphStatePending, 1, metav1.ConditionFalse, 1), news(""), t0.Add(3*time.Second)); w != 7*time.Second {
		t.Fatalf("progress within the interval waits for its rest, got %s", w)
	}
	if w := p.wait(key, pending, status(v1alpha1.GraphStatePending, 1, metav1.ConditionFalse, 1), news(""), t0.Add(progressInterval)); w != 0 {
		t.Fatalf("progress after the interval is written, got %s", w)
	}
	withPool := func(st metav1.ConditionStatus, reason string) *v1alpha1.DynamoGraphDeploymentStatus {
		next := status(v1alpha1.GraphStatePending, 1, metav1.ConditionFalse, 1)
		next.Conditions = append(next.Conditions, metav1.Condition{Type: ConditionInferencePool, Status: st, Reason: reason})
		return next
	}
	for name, next := range map[string]*v1alpha1.DynamoGraphDeploymentStatus{
		"becoming ready":   status(v1alpha1.GraphStateSuccessful, 1, metav1.ConditionTrue, 1),
		"a new generation": status(v1alpha1.GraphStatePending, 2, metav1.ConditionFalse, 0),
		"failing":          status(v1alpha1.GraphStateFailed, 1, metav1.ConditionFalse, 0),
		// Without a spec change: the pool's API was installed.
		"an InferencePool condition appearing": withPool(metav1.ConditionFalse, ReasonAPINotServed),
	} {
		if w := p.wait(key, pending, next, news(""), t0.Add(time.Millisecond)); w != 0 {
			t.Errorf("%s must never wait, got %s", name, w)
		}
	}
	// A blocker appearing, changing or going is written at once.
	for _, blockers := range []string{"llm-worker:Unschedulable:false", "llm-worker:CrashLoopBackOff:true"} {
		if w := p.wait(key, pending, status(v1alpha1.GraphStatePending, 1, metav1.ConditionFalse, 1), news(blockers), t0.Add(time.Millisecond)); w != 0 {
			t.Errorf("new blockers %q must not wait, got %s", blockers, w)
		}
	}
	p.wrote(key, news("llm-worker:Unschedulable:false"), t0)
	if w := p.wait(key, pending, status(v1alpha1.GraphStatePending, 1, metav1.ConditionFalse, 1), news(""), t0.Add(time.Millisecond)); w != 0 {
		t.Errorf("blockers gone must not wait, got %s", w)
	}
	// A component done is written at once: the graph waits for fewer.
	p.wrote(key, news(""), t0)
	fewer := progressNews{awaited: "g-worker"}
	if w := p.wait(key, pending, status(v1alpha1.GraphStatePending, 1, metav1.ConditionFalse, 1), fewer, t0.Add(time.Millisecond)); w != 0 {
		t.Errorf("a component no longer awaited must not wait, got %s", w)
	}
	// The pool created once its API is served is written at once.
	if w := p.wait(key, withPool(metav1.ConditionFalse, ReasonAPINotServed), withPool(metav1.ConditionTrue, ReasonInferencePool),
		news(""), t0.Add(time.Millisecond)); w != 0 {
		t.Errorf("the InferencePool created must not wait, got %s", w)
	}
	p.forget(key)
	if w := p.wait(key, pending, status(v1alpha1.GraphStatePending, 1, metav1.ConditionFalse, 1), news(""), t0.Add(time.Millisecond)); w != 0 {
		t.Errorf("a forgotten graph starts afresh, got %s", w)
	}
}

func TestComponentBlockers(t *testing.T) {
	component := func(name, reason string, stalled bool) *v1alpha1.DynamoComponentDeployment {
		c := builders.MakeComponent(name, "ns", builders.MakeService()).
			Condition(metav1.Condition{Type: v1alpha1.ConditionAvailable, Status: metav1.ConditionFalse, Reason: reason})
		if stalled {
			c.Condition(metav1.Condition{Type: v1alpha1.ConditionStalled, Status: metav1.ConditionTrue})
		}
		return c.Obj()
	}
	fresh := builders.MakeComponent("new", "ns", builders.MakeService()).Obj()
	ordinary := []*v1alpha1.DynamoComponentDeployment{fresh, component("a", ReasonAvailable, false), component("b", ReasonRolloutInProgress, false)}
	if got := componentBlockers(ordinary); got != "" {
		t.Errorf("an ordinary rollout has no blockers, got %q", got)
	}
	stuck := append(ordinary, component("d", "CrashLoopBackOff", true), component("c", "Unschedulable", false),
		component("e", ReasonRolloutInProgress, true))
	if got, want := componentBlockers(stuck), "c:Unschedulable:false,d:CrashLoopBackOff:true,e:RolloutInProgress:true"; got != want {
		t.Errorf("blockers: got %q, want %q", got, want)
	}
}
