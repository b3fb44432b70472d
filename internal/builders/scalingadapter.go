package builders

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

// ScalingAdapterWrapper builds a DynamoGraphDeploymentScalingAdapter.
type ScalingAdapterWrapper struct {
	v1alpha1.DynamoGraphDeploymentScalingAdapter
}

// MakeScalingAdapter starts the adapter of graph's service service as the
// operator names and labels it, with 1 replica.
func MakeScalingAdapter(graph, service, namespace string) *ScalingAdapterWrapper {
	return &ScalingAdapterWrapper{v1alpha1.DynamoGraphDeploymentScalingAdapter{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "DynamoGraphDeploymentScalingAdapter"},
		ObjectMeta: metav1.ObjectMeta{
			Name: graph + "-" + strings.ToLower(service), Namespace: namespace,
			Labels: map[string]string{labelGraphName: graph, labelManagedBy: managedBy},
		},
		Spec: v1alpha1.DynamoGraphDeploymentScalingAdapterSpec{
			Replicas: 1,
			DGDRef:   v1alpha1.DynamoGraphDeploymentServiceRef{Name: graph, ServiceName: service},
		},
	}}
}

// Obj returns the adapter.
func (a *ScalingAdapterWrapper) Obj() *v1alpha1.DynamoGraphDeploymentScalingAdapter {
	return &a.DynamoGraphDeploymentScalingAdapter
}

// Replicas sets spec.replicas.
func (a *ScalingAdapterWrapper) Replicas(n int32) *ScalingAdapterWrapper {
	a.Spec.Replicas = n
	return a
}

// ControlledBy sets graph as the adapter's controlling owner.
func (a *ScalingAdapterWrapper) ControlledBy(graph *v1alpha1.DynamoGraphDeployment) *ScalingAdapterWrapper {
	a.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: v1alpha1.GroupVersion.String(), Kind: "DynamoGraphDeployment", Name: graph.Name, UID: graph.UID,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}}
	return a
}
