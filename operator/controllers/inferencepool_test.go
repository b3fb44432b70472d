package controllers

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dynamoctl/dynamo-operator/internal/builders"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

// A picker is kept, and its pool waits for the service's next spec change,
// only while its own component says WorkloadPending.
func TestPickerKept(t *testing.T) {
	picker := builders.MakeGraphComponent("qwen", "Epp", "ns", builders.MakeService().Type(v1alpha1.ComponentTypeEPP)).Obj()
	stored := func(service string, pending metav1.ConditionStatus) *v1alpha1.DynamoComponentDeployment {
		c := builders.MakeGraphComponent("qwen", service, "ns", builders.MakeService())
		if pending != "" {
			c = c.Condition(metav1.Condition{Type: v1alpha1.ConditionWorkloadPending, Status: pending, Reason: "R"})
		}
		return c.Obj()
	}
	for name, tc := range map[string]struct {
		components []*v1alpha1.DynamoComponentDeployment
		want       bool
	}{
		"not stored yet":         {},
		"running as rendered":    {components: []*v1alpha1.DynamoComponentDeployment{stored("Epp", "")}},
		"kept":                   {components: []*v1alpha1.DynamoComponentDeployment{stored("Epp", metav1.ConditionTrue)}, want: true},
		"pending no more":        {components: []*v1alpha1.DynamoComponentDeployment{stored("Epp", metav1.ConditionFalse)}},
		"another component kept": {components: []*v1alpha1.DynamoComponentDeployment{stored("Worker", metav1.ConditionTrue), stored("Epp", "")}},
	} {
		t.Run(name, func(t *testing.T) {
			if got := pickerKept(picker, tc.components); got != tc.want {
				t.Errorf("pickerKept = %t, want %t", got, tc.want)
			}
		})
	}
}
