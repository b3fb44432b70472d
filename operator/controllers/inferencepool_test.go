package controllers

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dynamoctl/dynamo-operator/internal/builders"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

// A picker is kept, and its pool waits for the service's next spec change,
// only while its own component says WorkloadPending; a component whose
// status is an earlier version's (conditions, none of them WorkloadPending)
// has not reported, and the pool waits for it too.
func TestPickerKept(t *testing.T) {
	picker := builders.MakeGraphComponent("qwen", "Epp", "ns", builders.MakeService().Type(v1alpha1.ComponentTypeEPP)).Obj()
	stored := func(service string, pending metav1.ConditionStatus) *v1alpha1.DynamoComponentDeployment {
		c := builders.MakeGraphComponent("qwen", service, "ns", builders.MakeService())
		if pending != "" {
			c = c.Condition(metav1.Condition{Type: v1alpha1.ConditionWorkloadPending, Status: pending, Reason: "R"})
		}
		return c.Obj()
	}
	earlier := builders.MakeGraphComponent("qwen", "Epp", "ns", builders.MakeService()).
		Condition(metav1.Condition{Type: "Available", Status: metav1.ConditionTrue, Reason: "R"}).Obj()
	type want struct{ kept, reported bool }
	for name, tc := range map[string]struct {
		components []*v1alpha1.DynamoComponentDeployment
		want       want
	}{
		"not stored yet":              {want: want{reported: true}},
		"no status yet":               {components: []*v1alpha1.DynamoComponentDeployment{stored("Epp", "")}, want: want{reported: true}},
		"kept":                        {components: []*v1alpha1.DynamoComponentDeployment{stored("Epp", metav1.ConditionTrue)}, want: want{kept: true, reported: true}},
		"pending no more":             {components: []*v1alpha1.DynamoComponentDeployment{stored("Epp", metav1.ConditionFalse)}, want: want{reported: true}},
		"an earlier version's status": {components: []*v1alpha1.DynamoComponentDeployment{earlier}},
		"another component kept":      {components: []*v1alpha1.DynamoComponentDeployment{stored("Worker", metav1.ConditionTrue), stored("Epp", "")}, want: want{reported: true}},
	} {
		t.Run(name, func(t *testing.T) {
			kept, reported := pickerKept(picker, tc.components)
			if got := (want{kept, reported}); got != tc.want {
				t.Errorf("pickerKept = %+v, want %+v", got, tc.want)
			}
		})
	}
}
