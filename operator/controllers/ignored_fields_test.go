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
	setIgnoredFieldsCondition(st, dgd, now)
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
	setIgnoredFieldsCondition(st, dgd, now)
	if meta.FindStatusCondition(st.Conditions, ConditionFieldsNotActedOn) != nil {
		t.Errorf("the condition must go when nothing is ignored")
	}
}
