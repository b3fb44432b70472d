package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DynamoComponentDeploymentSharedSpec is one service of a graph. A
// DynamoGraphDeployment holds one per service; a DynamoComponentDeployment
// holds exactly one.
type DynamoComponentDeploymentSharedSpec struct {
	// Annotations are added to the service's workload and its pods.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
	// Labels are added to the service's workload and its pods.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`

	// ServiceName is the logical name of the service in the graph.
	// +optional
	ServiceName string `json:"serviceName,omitempty"`
	// ComponentType is the role of the service: frontend, worker, prefill,
	// decode, planner, epp or default, or any other string for a generic
	// component.
	// +optional
	ComponentType ComponentType `json:"componentType,omitempty"`
	// SubComponentType refines the role, for example prefill or decode.
	// +optional
	SubComponentType string `json:"subComponentType,omitempty"`
	// DynamoNamespace is the Dynamo runtime namespace the service registers in.
	// +optional
	DynamoNamespace *string `json:"dynamoNamespace,omitempty"`

	// Replicas is the number of instances; defaults to 1.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Replicas *int32 `json:"replicas,omitempty"`
	// Resources of the main container in Dynamo's short form.
	// +optional
	Resources *Resources `json:"resources,omitempty"`
	// Autoscaling is deprecated and has no effect.
	// +optional
	Autoscaling *Autoscaling `json:"autoscaling,omitempty"`

	// Envs are added to the main container after the graph's global envs,
	// so a service env wins over a global one of the same name.
	// +optional
	Envs []corev1.EnvVar `json:"envs,omitempty"`
	// EnvFromSecret names a Secret whose keys become environment variables.
	// +optional
	EnvFromSecret *string `json:"envFromSecret,omitempty"`

	// PVC is the per-service claim of the older documented form.
	// +optional
	PVC *ServicePVC `json:"pvc,omitempty"`
	// VolumeMounts mount entries of the graph's spec.pvcs.
	// +optional
	VolumeMounts []VolumeMount `json:"volumeMounts,omitempty"`
	// SharedMemory sizes /dev/shm (8Gi unless disabled or sized).
	// +optional
	SharedMemory *SharedMemorySpec `json:"sharedMemory,omitempty"`

	// Ingress exposes the service outside the cluster.
	// +optional
	Ingress *IngressSpec `json:"ingress,omitempty"`
	// ExternalServices the service depends on.
	// +optional
	ExternalServices map[string]ExternalService `json:"externalServices,omitempty"`

	// ExtraPodMetadata is added to the pods' metadata.
	// +optional
	ExtraPodMetadata *ExtraPodMetadata `json:"extraPodMetadata,omitempty"`
	// ExtraPodSpec is merged into the generated pod.
	// +optional
	ExtraPodSpec *ExtraPodSpec `json:"extraPodSpec,omitempty"`
	// LivenessProbe of the main container.
	// +optional
	LivenessProbe *corev1.Probe `json:"livenessProbe,omitempty"`
	// ReadinessProbe of the main container.
	// +optional
	ReadinessProbe *corev1.Probe `json:"readinessProbe,omitempty"`

	// Multinode spreads one instance over several nodes.
	// +optional
	Multinode *MultinodeSpec `json:"multinode,omitempty"`
	// ModelRef names the model the service serves; it gets a headless Service
	// that DynamoModels find it by.
	// +optional
	ModelRef *ModelReference `json:"modelRef,omitempty"`
	// FrontendSidecar runs a frontend in the worker's pod.
	// +optional
	FrontendSidecar *FrontendSidecar `json:"frontendSidecar,omitempty"`
	// EPPConfig configures an endpoint picker (componentType epp).
	// +optional
	EPPConfig *EPPConfig `json:"eppConfig,omitempty"`
	// Failover runs a standby engine beside the active one in each pod
	// (vLLM, with gpuMemoryService): containers engine-0 and engine-1.
	// +optional
	Failover *EnabledSpec `json:"failover,omitempty"`
	// GPUMemoryService shares the service's GPUs among the pod's containers
	// through a DRA claim and the GPU memory service sidecar gms-weights.
	// +optional
	GPUMemoryService *EnabledSpec `json:"gpuMemoryService,omitempty"`
	// TopologyConstraint places the service's pods within one domain of a
	// topology level (a multinode service: each group's pods).
	// +optional
	TopologyConstraint *TopologyConstraint `json:"topologyConstraint,omitempty"`
	// ScalingAdapter, enabled, gives the service a
	// DynamoGraphDeploymentScalingAdapter that owns its replicas, for HPA,
	// KEDA or Dynamo's planner to scale through (v1beta1: scalingAdapter
	// present).
	// +optional
	ScalingAdapter *EnabledSpec `json:"scalingAdapter,omitempty"`
}

// DynamoComponentDeploymentSpec is one deployed component.
type DynamoComponentDeploymentSpec struct {
	// DynamoComponent references the image-build artifact (name:version).
	// +optional
	DynamoComponent string `json:"dynamoComponent,omitempty"`
	// DynamoTag is the graph entry point of the component, for example
	// graphs.disagg:Frontend.
	// +optional
	DynamoTag string `json:"dynamoTag,omitempty"`
	// BackendFramework the component runs.
	// +optional
	BackendFramework BackendFramework `json:"backendFramework,omitempty"`

	DynamoComponentDeploymentSharedSpec `json:",inline"`
}

// Condition types of a DynamoComponentDeployment.
const (
	// ConditionAvailable is True when the component's workload runs the
	// current spec with every desired replica available.
	ConditionAvailable = "Available"
	// ConditionStalled is True, beside Available and Ready False, while the
	// component cannot progress without a change: an invalid spec, or a
	// rollout past its progress deadline. kstatus reads it as Failed.
	ConditionStalled = "Stalled"
	// ConditionWorkloadPending is True while the component runs as a
	// workload an earlier version rendered that this version would render
	// as another kind (a multinode service's Deployment, a LeaderWorkerSet
	// now) or without the engine features its spec sets (gpuMemoryService,
	// failover, eppConfig): it is kept until the service's spec changes,
	// and its message says what happens then.
	ConditionWorkloadPending = "WorkloadPending"
)

// DynamoComponentDeploymentStatus is the observed state of a component.
type DynamoComponentDeploymentStatus struct {
	// ObservedGeneration is the generation the status was computed for.
	// +optional
	// +kubebuilder:default=0
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions, with type Available.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// PodSelector selects the component's pods.
	// +optional
	PodSelector map[string]string `json:"podSelector,omitempty"`
	// Selector is PodSelector in string form, for the scale subresource.
	// +optional
	Selector string `json:"selector,omitempty"`
	// Service describes the component's workload in Dynamo's shape, so that
	// Dynamo's tools and operator read it: its kind, name and replica counts.
	// +optional
	Service *ServiceReplicaStatus `json:"service,omitempty"`
	// Replicas is the number of pods of the workload.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`
	// UpdatedReplicas run the current pod template.
	// +optional
	UpdatedReplicas int32 `json:"updatedReplicas,omitempty"`
	// ReadyReplicas are ready pods.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	// AvailableReplicas are pods ready for the minimum ready time.
	// +optional
	AvailableReplicas int32 `json:"availableReplicas,omitempty"`
}

// DynamoComponentDeployment deploys one component of a graph: a workload, a
// Service and, when enabled, an Ingress.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=dcd,categories=dynamo
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:printcolumn:name="Type",type=string,JSONPath=`.spec.componentType`
// +kubebuilder:printcolumn:name="Available",type=string,JSONPath=`.status.conditions[?(@.type=="Available")].status`
// +kubebuilder:printcolumn:name="Desired",type=integer,JSONPath=`.spec.replicas`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="Backend",type=string,JSONPath=`.spec.backendFramework`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type DynamoComponentDeployment struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec DynamoComponentDeploymentSpec `json:"spec,omitempty"`
	// Status is written by the operator. Until its first report it reads
	// {observedGeneration: 0}, which kstatus-based tools take as in progress.
	// +kubebuilder:default={}
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
