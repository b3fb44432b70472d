package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DynamoComponentDeploymentSharedSpec is one component: an entry of a
// graph's spec.components, or the whole spec of a DynamoComponentDeployment.
// Its podTemplate replaces v1alpha1's resources, envs, envFromSecret,
// probes, volumeMounts, annotations, labels, extraPodMetadata and
// extraPodSpec: the operator merges its defaults into the container named
// main, and every other container, init container or pod field is the user's.
//
// +kubebuilder:validation:XValidation:rule="!has(self.eppConfig) || (has(self.type) && self.type == 'epp')",message="eppConfig may only be set when type is epp"
// +kubebuilder:validation:XValidation:rule="!has(self.minAvailable) || (has(self.replicas) && self.replicas == 0) || self.minAvailable <= (has(self.replicas) ? self.replicas : 1)",message="minAvailable must be less than or equal to replicas unless replicas is 0"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.minAvailable) || (has(self.minAvailable) && self.minAvailable == oldSelf.minAvailable)",message="minAvailable is immutable after creation"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.type) || (has(self.type) && self.type == oldSelf.type)",message="type is immutable after it is set"
type DynamoComponentDeploymentSharedSpec struct {
	// ProviderOverride configures the provider workload unit of the
	// component (a Grove PodClique or PodCliqueScalingGroup).
	// +optional
	ProviderOverride *ProviderOverride `json:"providerOverride,omitempty"`

	// Name identifies the component in its graph, unique there; status,
	// labels and scaling adapters refer to it. A standalone
	// DynamoComponentDeployment takes its metadata.name.
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?$`
	ComponentName string `json:"name"`

	// Type is the component's role; immutable once set.
	// +optional
	ComponentType ComponentType `json:"type,omitempty"`

	// RuntimeVersionOverride is the Dynamo runtime version of the image
	// (MAJOR.MINOR.PATCH), for images whose tag is not that version.
	// +optional
	// +kubebuilder:validation:Pattern=`^(0|[1-9][0-9]{0,3})\.(0|[1-9][0-9]{0,3})\.(0|[1-9][0-9]{0,3})$`
	RuntimeVersionOverride string `json:"runtimeVersionOverride,omitempty"`

	// GlobalDynamoNamespace registers the component in the global Dynamo
	// namespace instead of the graph's own.
	// +optional
	GlobalDynamoNamespace bool `json:"globalDynamoNamespace,omitempty"`

	// PodTemplate of the component's pods. It has a container named main
	// with an image; the operator merges its defaults into that container.
	// +optional
	PodTemplate *corev1.PodTemplateSpec `json:"podTemplate,omitempty"`

	// Replicas is the number of instances; owned by the scaling adapter when
	// scalingAdapter is set.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Replicas *int32 `json:"replicas,omitempty"`

	// MinAvailable is the number of instances gang-scheduled together (Grove
	// only); immutable, at most replicas unless replicas is 0.
	// +optional
	// +kubebuilder:validation:Minimum=1
	MinAvailable *int32 `json:"minAvailable,omitempty"`

	// Multinode spreads one instance over several nodes.
	// +optional
	Multinode *MultinodeSpec `json:"multinode,omitempty"`

	// Roles are the named pod-producing parts of a compound component; for a
	// multinode one, a leader and a worker role.
	// +optional
	// +listType=map
	// +listMapKey=name
	Roles []ComponentRoleSpec `json:"roles,omitempty"`

	// SharedMemorySize sizes the tmpfs at /dev/shm: unset for the default
	// (8Gi), "0" for none.
	// +optional
	SharedMemorySize *resource.Quantity `json:"sharedMemorySize,omitempty"`

	// ModelRef names the model the component serves.
	// +optional
	ModelRef *ModelReference `json:"modelRef,omitempty"`

	// ScalingAdapter, when present, hands the component's replicas to a
	// DynamoGraphDeploymentScalingAdapter.
	// +optional
	ScalingAdapter *ScalingAdapter `json:"scalingAdapter,omitempty"`

	// EPPConfig selects and configures the older Go endpoint picker (type
	// epp only). Deprecated.
	// +optional
	EPPConfig *EPPConfig `json:"eppConfig,omitempty"`

	// FrontendSidecar names the container of podTemplate that runs a
	// frontend beside the worker; it gets the frontend's defaults.
	// +optional
	FrontendSidecar *string `json:"frontendSidecar,omitempty"`

	// DynamoSidecar names a restartable init container of podTemplate that
	// runs Dynamo's runtime, while main runs the engine as the user wrote it.
	// +optional
	DynamoSidecar *string `json:"dynamoSidecar,omitempty"`

	// CompilationCache mounts a claim as the backend's compilation cache.
	// +optional
	CompilationCache *CompilationCacheConfig `json:"compilationCache,omitempty"`

	// TopologyConstraint packs the component's pods within a topology level.
	// +optional
	TopologyConstraint *TopologyConstraint `json:"topologyConstraint,omitempty"`

	// Experimental holds preview features whose shape may change between
	// v1beta1 releases.
	// +optional
	Experimental *ExperimentalSpec `json:"experimental,omitempty"`
}

// DynamoComponentDeploymentSpec is one deployed component.
type DynamoComponentDeploymentSpec struct {
	// BackendFramework the component runs.
	// +kubebuilder:validation:Enum=sglang;vllm;trtllm
	BackendFramework string `json:"backendFramework,omitempty"`

	DynamoComponentDeploymentSharedSpec `json:",inline"`
}

// DynamoComponentDeploymentStatus is the observed state of a component.
type DynamoComponentDeploymentStatus struct {
	// ObservedGeneration is the generation the status was computed for.
	// Written even when 0 (no report yet), which kstatus-based tools read
	// as in progress (see the v1alpha1 package).
	// +optional
	ObservedGeneration int64 `json:"observedGeneration"`
	// Conditions, with type Available.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Component describes the component's workload and its replicas.
	// +optional
	Component *ComponentReplicaStatus `json:"component,omitempty"`
}

// DynamoComponentDeployment deploys one component of a graph.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=dcd,categories=dynamo
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.component.replicas
// +kubebuilder:printcolumn:name="Type",type=string,JSONPath=`.spec.type`
// +kubebuilder:printcolumn:name="Available",type=string,JSONPath=`.status.conditions[?(@.type=="Available")].status`
// +kubebuilder:printcolumn:name="Desired",type=integer,JSONPath=`.spec.replicas`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.component.readyReplicas`
// +kubebuilder:printcolumn:name="Backend",type=string,JSONPath=`.spec.backendFramework`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type DynamoComponentDeployment struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   DynamoComponentDeploymentSpec   `json:"spec,omitempty"`
	Status DynamoComponentDeploymentStatus `json:"status,omitempty"`
}

// DynamoComponentDeploymentList is a list of DynamoComponentDeployments.
//
// +kubebuilder:object:root=true
type DynamoComponentDeploymentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []DynamoComponentDeployment `json:"items"`
}

func init() {
	SchemeBuilder.Register(&DynamoComponentDeployment{}, &DynamoComponentDeploymentList{})
}
