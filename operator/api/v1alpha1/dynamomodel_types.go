package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ModelType is the kind of model a DynamoModel describes.
// +kubebuilder:validation:Enum=base;lora;adapter
type ModelType string

const (
	ModelTypeBase    ModelType = "base"
	ModelTypeLoRA    ModelType = "lora"
	ModelTypeAdapter ModelType = "adapter"
)

// ModelSource says where a model's weights come from.
type ModelSource struct {
	// URI of the weights: s3://bucket/path or hf://org/model.
	// +kubebuilder:validation:MinLength=1
	URI string `json:"uri"`
}

// DynamoModelSpec describes a model served by the graph's workers.
//
// +kubebuilder:validation:XValidation:rule="self.modelType != 'lora' || (has(self.source) && (self.source.uri.startsWith('s3://') || self.source.uri.startsWith('hf://')))",message="a lora model needs source.uri starting with s3:// or hf://",fieldPath=".source.uri"
type DynamoModelSpec struct {
	// ModelName is the name clients request, for example a LoRA adapter name.
	// +kubebuilder:validation:MinLength=1
	ModelName string `json:"modelName"`
	// BaseModelName is the model the workers serve; workers whose modelRef
	// names it get this model.
	// +kubebuilder:validation:MinLength=1
	BaseModelName string `json:"baseModelName"`
	// ModelType is base, lora or adapter.
	// +kubebuilder:default=base
	// +optional
	ModelType ModelType `json:"modelType,omitempty"`
	// Source of the weights; required for lora.
	// +optional
	Source *ModelSource `json:"source,omitempty"`
}

// ModelEndpoint is one worker endpoint serving a model.
type ModelEndpoint struct {
	// Address is the worker's base URL, for example http://10.0.0.5:9090.
	Address string `json:"address"`
	// +optional
	PodName string `json:"podName,omitempty"`
	// Ready is true when the model is loaded on the endpoint.
	Ready bool `json:"ready"`
}

// DynamoModelStatus is the observed state of a model.
type DynamoModelStatus struct {
	// +optional
	// +kubebuilder:default=0
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// +optional
	Endpoints []ModelEndpoint `json:"endpoints,omitempty"`
	// +optional
	ReadyEndpoints int32 `json:"readyEndpoints,omitempty"`
	// +optional
	TotalEndpoints int32 `json:"totalEndpoints,omitempty"`
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// DynamoModel manages a model's lifecycle on the graph's workers, such as
// loading a LoRA adapter on every ready endpoint.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=dm,categories=dynamo
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Model",type=string,JSONPath=`.spec.modelName`
// +kubebuilder:printcolumn:name="Base",type=string,JSONPath=`.spec.baseModelName`
// +kubebuilder:printcolumn:name="Type",type=string,JSONPath=`.spec.modelType`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyEndpoints`
// +kubebuilder:printcolumn:name="Total",type=integer,JSONPath=`.status.totalEndpoints`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type DynamoModel struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec DynamoModelSpec `json:"spec,omitempty"`
	// Status is written by the operator. Until its first report it reads
	// {observedGeneration: 0}, which kstatus-based tools take as in progress.
	// +kubebuilder:default={}
	Status DynamoModelStatus `json:"status,omitempty"`
}

// DynamoModelList is a list of DynamoModels.
//
// +kubebuilder:object:root=true
type DynamoModelList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []DynamoModel `json:"items"`
}

func init() {
	SchemeBuilder.Register(&DynamoModel{}, &DynamoModelList{})
}
