package controllers

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/dynamoctl/dynamo-operator/internal/builders"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

func TestComponentAvailability(t *testing.T) {
	now := metav1.NewTime(time.Unix(1000, 0))
	cases := map[string]struct {
		deploy *appsv1.Deployment
		status metav1.ConditionStatus
		reason string
	}{
		"all replicas updated and available":   {builders.MakeDeployment("g-worker", "").Generation(2).Replicas(3).Status(2, 3, 3, 3).Obj(), metav1.ConditionTrue, ReasonAvailable},
		"scaled to zero":                       {builders.MakeDeployment("g-worker", "").Generation(1).Replicas(0).Status(1, 0, 0, 0).Obj(), metav1.ConditionTrue, ReasonAvailable},
		"new generation not yet observed":      {builders.MakeDeployment("g-worker", "").Generation(3).Replicas(3).Status(2, 3, 3, 3).Obj(), metav1.ConditionFalse, ReasonRolloutInProgress},
		"rollout: old pods still serve":        {builders.MakeDeployment("g-worker", "").Generation(2).Replicas(2).Status(2, 3, 1, 2).Obj(), metav1.ConditionFalse, ReasonRolloutInProgress},
		"rollout: all updated, surge pod left": {builders.MakeDeployment("g-worker", "").Generation(2).Replicas(2).Status(2, 3, 2, 2).Obj(), metav1.ConditionFalse, ReasonRolloutInProgress},
		"pods not yet available":               {builders.MakeDeployment("g-worker", "").Generation(1).Replicas(2).Status(1, 2, 2, 1).Obj(), metav1.ConditionFalse, ReasonRolloutInProgress},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dcd := builders.MakeComponent("g-worker", "", builders.MakeEmptyService()).Generation(4).Obj()
			st := componentStatus(dcd, tc.deploy, nil, now)
			c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionAvailable)
			if c == nil || c.Status != tc.status || c.Reason != tc.reason {
				t.Fatalf("Available = %+v, want %s/%s", c, tc.status, tc.reason)
			}
			if st.ObservedGeneration != 4 || c.ObservedGeneration != 4 {
				t.Errorf("observedGeneration must be the DCD's generation, got %d/%d", st.ObservedGeneration, c.ObservedGeneration)
			}
			if st.Selector != "nvidia.com/dynamo-component=g-worker" {
				t.Errorf("selector %q", st.Selector)
			}
			want := &v1alpha1.ServiceReplicaStatus{ComponentKind: v1alpha1.ComponentKindDeployment,
				ComponentName: "g-worker", ComponentNames: []string{"g-worker"},
				Replicas: tc.deploy.Status.Replicas, UpdatedReplicas: tc.deploy.Status.UpdatedReplicas,
				ReadyReplicas: ptr.To(tc.deploy.Status.ReadyReplicas), AvailableReplicas: ptr.To(tc.deploy.Status.AvailableReplicas)}
			if diff := cmp.Diff(want, st.Service); diff != "" {
				t.Errorf("status.service (-want +got):\n%s", diff)
			}
		})
	}
}

func TestConditionTransitionTimeChangesOnlyWithStatus(t *testing.T) {
	t1, t2, t3 := metav1.NewTime(time.Unix(1000, 0)), metav1.NewTime(time.Unix(2000, 0)), metav1.NewTime(time.Unix(3000, 0))
	dcd := builders.MakeComponent("c", "", builders.MakeEmptyService()).Generation(1).Obj()
	dcd.Status = componentStatus(dcd, builders.MakeDeployment("g-worker", "").Generation(1).Replicas(2).Status(1, 2, 2, 1).Obj(), nil, t1)
	dcd.Status = componentStatus(dcd, builders.MakeDeployment("g-worker", "").Generation(1).Replicas(2).Status(1, 2, 2, 0).Obj(), nil, t2) // still False, other message
	if got := meta.FindStatusCondition(dcd.Status.Conditions, v1alpha1.ConditionAvailable).LastTransitionTime; !got.Equal(&t1) {
		t.Errorf("transition time moved without a status change: %v", got)
	}
	dcd.Status = componentStatus(dcd, builders.MakeDeployment("g-worker", "").Generation(1).Replicas(2).Status(1, 2, 2, 2).Obj(), nil, t3)
	if got := meta.FindStatusCondition(dcd.Status.Conditions, v1alpha1.ConditionAvailable).LastTransitionTime; !got.Equal(&t3) {
		t.Errorf("transition time must move when the status changes: %v", got)
	}
}
