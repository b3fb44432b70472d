package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

// DynamoGraphDeploymentScalingAdapter is v1alpha1's, served in v1beta1 as
// Dynamo serves it: the two versions have one schema (the spec and status
// are v1alpha1's types), so the API server converts between them by
// changing apiVersion alone, without the conversion webhook.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=dgdsa,categories=dynamo
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:printcolumn:name="DGD",type=string,JSONPath=`.spec.dgdRef.name`,description="DynamoGraphDeployment name"
// +kubebuilder:printcolumn:name="SERVICE",type=string,JSONPath=`.spec.dgdRef.serviceName`,description="Service name"
// +kubebuilder:printcolumn:name="REPLICAS",type=integer,JSONPath=`.status.replicas`,description="Current replicas"
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=`.metadata.creationTimestamp`
type DynamoGraphDeploymentScalingAdapter struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   v1alpha1.DynamoGraphDeploymentScalingAdapterSpec   `json:"spec,omitempty"`
	Status v1alpha1.DynamoGraphDeploymentScalingAdapterStatus `json:"status,omitempty"`
}

// DynamoGraphDeploymentScalingAdapterList is a list of
// DynamoGraphDeploymentScalingAdapters.
//
// +kubebuilder:object:root=true
type DynamoGraphDeploymentScalingAdapterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []DynamoGraphDeploymentScalingAdapter `json:"items"`
}

func init() {
	SchemeBuilder.Register(&DynamoGraphDeploymentScalingAdapter{}, &DynamoGraphDeploymentScalingAdapterList{})
}
