package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// DynamoWorkerMetadataSpec holds what a worker publishes about itself.
type DynamoWorkerMetadataSpec struct {
	// Data is the runtime's discovery metadata, a JSON object whose shape
	// is the runtime's own concern (kept as written).
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	Data runtime.RawExtension `json:"data"`
}

// DynamoWorkerMetadata is the discovery record a Dynamo worker pod writes
// about itself when it runs with DYN_DISCOVERY_BACKEND=kubernetes (the
// runtime creates, updates and deletes it under the graph's
// `<graph>-k8s-service-discovery` ServiceAccount; the operator only grants
// those rights). Dynamo's operator ships this CRD, in the same shape, so
// the rights name a real resource and the runtime's writes succeed.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=dynamoworkermetadatas,singular=dynamoworkermetadata,shortName=dwm,categories=dynamo
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type DynamoWorkerMetadata struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec DynamoWorkerMetadataSpec `json:"spec,omitempty"`
}

// DynamoWorkerMetadataList is a list of DynamoWorkerMetadata.
//
// +kubebuilder:object:root=true
type DynamoWorkerMetadataList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []DynamoWorkerMetadata `json:"items"`
}

func init() {
	SchemeBuilder.Register(&DynamoWorkerMetadata{}, &DynamoWorkerMetadataList{})
}
