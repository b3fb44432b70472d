package controllers

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

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

	if w := p.wait(key, pending, status(v1alpha1.GraphStatePending, 1, metav1.ConditionFalse, 1), t0); w != 0 {
		t.Fatalf("the first progress write must not wait, got %s", w)
	}
	p.wrote(key, t0)
	if w := p.wait(key, pending, status(v1alpha1.GraphStatePending, 1, metav1.ConditionFalse, 1), t0.Add(300*time.Millisecond)); w != 700*time.Millisecond {
		t.Fatalf("progress within the interval waits for its rest, got %s", w)
	}
	if w := p.wait(key, pending, status(v1alpha1.GraphStatePending, 1, metav1.ConditionFalse, 1), t0.Add(time.Second)); w != 0 {
		t.Fatalf("progress after the interval is written, got %s", w)
	}
	for name, next := range map[string]*v1alpha1.DynamoGraphDeploymentStatus{
		"becoming ready":   status(v1alpha1.GraphStateSuccessful, 1, metav1.ConditionTrue, 1),
		"a new generation": status(v1alpha1.GraphStatePending, 2, metav1.ConditionFalse, 0),
		"failing":          status(v1alpha1.GraphStateFailed, 1, metav1.ConditionFalse, 0),
	} {
		if w := p.wait(key, pending, next, t0.Add(time.Millisecond)); w != 0 {
			t.Errorf("%s must never wait, got %s", name, w)
		}
	}
	p.forget(key)
	if w := p.wait(key, pending, status(v1alpha1.GraphStatePending, 1, metav1.ConditionFalse, 1), t0.Add(time.Millisecond)); w != 0 {
		t.Errorf("a forgotten graph starts afresh, got %s", w)
	}
}
