package controllers

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

func TestIgnoredFieldsAreReported(t *testing.T) {
	now := metav1.NewTime(time.Unix(1, 0))
	dgd := &v1alpha1.DynamoGraphDeployment{Spec: v1alpha1.DynamoGraphDeploymentSpec{Services: map[string]*v1alpha1.DynamoComponentDeploymentSharedSpec{
		"Worker": {Failover: &v1alpha1.EnabledSpec{Enabled: true}, Multinode: &v1alpha1.MultinodeSpec{NodeCount: 2}},
		"Epp":    {EPPConfig: &v1alpha1.EPPConfig{}},
	}}}
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

	dgd.Spec.Services = map[string]*v1alpha1.DynamoComponentDeploymentSharedSpec{"Worker": {}}
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
	dgd := &v1alpha1.DynamoGraphDeployment{Spec: v1alpha1.DynamoGraphDeploymentSpec{Services: map[string]*v1alpha1.DynamoComponentDeploymentSharedSpec{
		"Decode":  {Multinode: &v1alpha1.MultinodeSpec{NodeCount: 2}},
		"Prefill": {Multinode: &v1alpha1.MultinodeSpec{NodeCount: 2}},
	}}}
	pending := &v1alpha1.DynamoComponentDeployment{}
	pending.Spec.ServiceName = "Decode"
	pending.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionWorkloadPending, Status: metav1.ConditionTrue}}
	lws := &v1alpha1.DynamoComponentDeployment{}
	lws.Spec.ServiceName = "Prefill"
	st := &v1alpha1.DynamoGraphDeploymentStatus{}
	setIgnoredFieldsCondition(st, dgd, []*v1alpha1.DynamoComponentDeployment{pending, lws}, now)
	c := meta.FindStatusCondition(st.Conditions, ConditionFieldsNotActedOn)
	// v0.2.0's ignored_fields.go, for the same graph.
	want := "accepted but not acted on: spec.services.Decode.multinode (run as replicas x nodeCount pods of one Deployment, without leader/worker grouping)"
	if c == nil || c.Message != want || c.Reason != "AcceptedNotActedOn" {
		t.Errorf("condition %+v, want message %q", c, want)
	}
}
