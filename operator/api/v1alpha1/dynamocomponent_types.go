package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DynamoComponentSpec is an image-build artifact of the older build flow.
type DynamoComponentSpec struct {
	// DynamoComponent identifies the artifact as name:version.
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9_.]*[a-z0-9])?:[A-Za-z0-9_][-A-Za-z0-9_.]*$`
	DynamoComponent string `json:"dynamoComponent"`
	// Image is a ready image; when set nothing is built.
	// +optional
	Image string `json:"image,omitempty"`
	// ImageBuildTimeout bounds the build job, for example 1h.
	// +optional
	ImageBuildTimeout *metav1.Duration `json:"imageBuildTimeout,omitempty"`
	// BuildArgs are passed to the image build.
	// +optional
	BuildArgs []string `json:"buildArgs,omitempty"`
	// ImageBuilderExtraPodMetadata is added to the builder pod.
	// +optional
	ImageBuilderExtraPodMetadata *ExtraPodMetadata `json:"imageBuilderExtraPodMetadata,omitempty"`
	// ImageBuilderExtraPodSpec is merged into the builder pod.
	// +optional
	ImageBuilderExtraPodSpec *ExtraPodSpec `json:"imageBuilderExtraPodSpec,omitempty"`
	// ImageBuilderExtraContainerEnv is added to the builder container.
	// +optional
	ImageBuilderExtraContainerEnv []corev1.EnvVar `json:"imageBuilderExtraContainerEnv,omitempty"`
	// ImageBuilderContainerResources of the builder container.
	// +optional
	ImageBuilderContainerResources *corev1.ResourceRequirements `json:"imageBuilderContainerResources,omitempty"`
	// ImagePullSecrets for pulling private images.
	// +optional
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`
	// DockerConfigJSONSecretName holds registry credentials for pushing.
	// +optional
	DockerConfigJSONSecretName string `json:"dockerConfigJsonSecretName,omitempty"`
	// DownloaderContainerEnvFrom is sourced by the artifact downloader.
	// +optional
	DownloaderContainerEnvFrom []corev1.EnvFromSource `json:"downloaderContainerEnvFrom,omitempty"`
}

// Condition types of a DynamoComponent.
const (
	// ConditionImageReady is True when status.image can be deployed.
	ConditionImageReady = "ImageReady"
)

// DynamoComponentStatus is the observed state of an artifact.
type DynamoComponentStatus struct {
	// +optional
	// +kubebuilder:default=0
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Image is the built or given image.
	// +optional
	Image string `json:"image,omitempty"`
}

// DynamoComponent builds (or names) the image of a graph's components.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=dc,categories=dynamo
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Component",type=string,JSONPath=`.spec.dynamoComponent`
// +kubebuilder:printcolumn:name="Image-Ready",type=string,JSONPath=`.status.conditions[?(@.type=="ImageReady")].status`
// +kubebuilder:printcolumn:name="Image",type=string,JSONPath=`.status.image`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type DynamoComponent struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec DynamoComponentSpec `json:"spec,omitempty"`
	// Status is written by the operator. Until its first report it reads
	// {observedGeneration: 0}, which kstatus-based tools take as in progress.
	// +kubebuilder:default={}
	Status DynamoComponentStatus `json:"status,omitempty"`
}

// DynamoComponentList is a list of DynamoComponents.
//
// +kubebuilder:object:root=true
type DynamoComponentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []DynamoComponent `json:"items"`
}

func init() {
	SchemeBuilder.Register(&DynamoComponent{}, &DynamoComponentList{})
}
