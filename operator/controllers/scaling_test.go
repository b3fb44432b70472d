package controllers

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/dynamoctl/dynamo-operator/internal/builders"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

func TestYieldReplicas(t *testing.T) {
	replicasBy := func(manager string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "scale",
			FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:replicas":{}}}`)}}
	}
	otherFields := metav1.ManagedFieldsEntry{Manager: "kubectl-edit", Operation: metav1.ManagedFieldsOperationUpdate,
		FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:labels":{"f:team":{}}}}`)}}
	component := func(replicas int32, annotation string, managed ...metav1.ManagedFieldsEntry) *v1alpha1.DynamoComponentDeployment {
		dcd := builders.MakeComponent("llm-worker", "ns", builders.MakeService().Replicas(replicas)).Obj()
		if annotation != "" {
			dcd.Annotations = map[string]string{AnnotationGraphReplicas: annotation}
		}
		dcd.ManagedFields = managed
		return dcd
	}
	cases := map[string]struct {
		live        *v1alpha1.DynamoComponentDeployment
		wantYield   bool
		wantReplica *int32
	}{
		"new component: the graph's replicas":                        {nil, false, ptr.To[int32](2)},
		"only the graph manages replicas":                            {component(2, "2", replicasBy(FieldOwner)), false, ptr.To[int32](2)},
		"scaled by kubectl: yield":                                   {component(5, "2", replicasBy(FieldOwner), replicasBy("kubectl")), true, nil},
		"scaled by an HPA: yield":                                    {component(7, "2", replicasBy("horizontal-pod-autoscaler")), true, nil},
		"another manager owns other fields only":                     {component(2, "2", otherFields), false, ptr.To[int32](2)},
		"the graph's replicas changed since: the graph wins":         {component(5, "3", replicasBy("kubectl")), false, ptr.To[int32](2)},
		"adopted from another operator, never applied by this graph": {component(5, "", replicasBy("manager")), false, ptr.To[int32](2)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			desired := component(2, "")
			got := yieldReplicas(desired, tc.live, FieldOwner)
			if got != tc.wantYield {
				t.Errorf("yield = %v, want %v", got, tc.wantYield)
			}
			if !ptr.Equal(desired.Spec.Replicas, tc.wantReplica) {
				t.Errorf("desired replicas = %v, want %v", ptr.Deref(desired.Spec.Replicas, -1), ptr.Deref(tc.wantReplica, -1))
			}
			if desired.Annotations[AnnotationGraphReplicas] != "2" {
				t.Errorf("annotation %s = %q, want the graph's 2", AnnotationGraphReplicas, desired.Annotations[AnnotationGraphReplicas])
			}
		})
	}
}
