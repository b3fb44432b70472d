package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DynamoGraphDeploymentServiceRef names a graph and one of its services.
type DynamoGraphDeploymentServiceRef struct {
	// Name of the DynamoGraphDeployment.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// ServiceName is the service's key in the graph's spec.services (its
	// component's name in v1beta1).
	// +kubebuilder:validation:MinLength=1
	ServiceName string `json:"serviceName"`
}

// DynamoGraphDeploymentScalingAdapterSpec is the number of replicas a
// service should run.
type DynamoGraphDeploymentScalingAdapterSpec struct {
	// Replicas is the number of replicas the service runs. It is set from
	// the graph once, when the adapter is created; after that HPA, KEDA,
	// Dynamo's planner or a user (kubectl scale dgdsa) change it, and the
	// operator carries it to the service's component.
	// +kubebuilder:validation:Minimum=0
	Replicas int32 `json:"replicas"`
	// DGDRef names the graph and the service this adapter scales.
	DGDRef DynamoGraphDeploymentServiceRef `json:"dgdRef"`
}

// DynamoGraphDeploymentScalingAdapterStatus is what the service runs.
type DynamoGraphDeploymentScalingAdapterStatus struct {
	// Replicas is the number of replicas the service's workload has now:
	// the scale subresource's current count, which an HPA scales from.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`
	// Selector selects the service's pods (one per multinode group), in
	// string form: the scale subresource's selector, whose pods an HPA reads
	// metrics of.
	// +optional
	Selector string `json:"selector,omitempty"`
	// LastScaleTime is when the operator last carried a changed
	// spec.replicas to the service.
	// +optional
	LastScaleTime *metav1.Time `json:"lastScaleTime,omitempty"`
}

// DynamoGraphDeploymentScalingAdapter is the scaling interface of one
// service of a graph that opts in (scalingAdapter): its scale subresource is
// what HPA, KEDA and Dynamo's planner scale, and it owns the service's
// replicas from then on. The operator creates one per opted-in service,
// owned by the graph, and deletes it when the service opts out or leaves
// the graph.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=dgdsa,categories=dynamo
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:printcolumn:name="DGD",type=string,JSONPath=`.spec.dgdRef.name`,description="DynamoGraphDeployment name"
// +kubebuilder:printcolumn:name="SERVICE",type=string,JSONPath=`.spec.dgdRef.serviceName`,description="Service name"
// +kubebuilder:printcolumn:name="REPLICAS",type=integer,JSONPath=`.status.replicas`,description="Current replicas"
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=`.metadata.creationTimestamp`
type DynamoGraphDeploymentScalingAdapter struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   DynamoGraphDeploymentScalingAdapterSpec   `json:"spec,omitempty"`
	Status DynamoGraphDeploymentScalingAdapterStatus `json:"status,omitempty"`
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
