package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DynamoGraphDeploymentSpec is a whole inference graph.
//
// spec.restart must be absent when the graph is created: a restart is a
// request against running components, made by setting spec.restart.id later.
//
// +kubebuilder:validation:XValidation:rule="oldSelf.hasValue() || !has(self.restart)",message="spec.restart must be unset on create; set spec.restart.id after creation to request a restart",optionalOldSelf=true
type DynamoGraphDeploymentSpec struct {
	// ProviderOverride configures the graph's root workload (a Grove
	// PodCliqueSet); it cannot choose or change the provider.
	// +optional
	ProviderOverride *ProviderOverride `json:"providerOverride,omitempty"`

	// Annotations are propagated to every child object; a component's
	// podTemplate wins on conflict.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`

	// Labels are propagated to every child object, as annotations are.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`

	// PriorityClassName of the graph's Grove PodCliqueSet.
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`

	// Components of the graph, keyed by name. Names are unique regardless of
	// case (they name child objects, which are lowercase), and at most one
	// component has type epp.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=25
	// +kubebuilder:validation:XValidation:rule="self.filter(c, has(c.type) && c.type == 'epp').size() <= 1",message="at most one component may have type epp"
	// +kubebuilder:validation:XValidation:rule="self.all(c1, !has(c1.name) || self.filter(c2, has(c2.name) && c2.name.lowerAscii() == c1.name.lowerAscii()).size() == 1)",message="component names must be unique case-insensitively"
	Components []DynamoComponentDeploymentSharedSpec `json:"components,omitempty"`

	// Env is put before every component's own environment; a component's
	// entry of the same name wins and may refer to these.
	// +optional
	Env []corev1.EnvVar `json:"env,omitempty"`

	// BackendFramework the graph runs.
	// +kubebuilder:validation:Enum=sglang;vllm;trtllm
	BackendFramework string `json:"backendFramework,omitempty"`

	// Restart requests a restart of the graph's components each time its id
	// changes.
	// +optional
	Restart *Restart `json:"restart,omitempty"`

	// TopologyConstraint names the graph's ClusterTopology and the level its
	// pods are packed within; components without their own inherit it.
	// +optional
	TopologyConstraint *SpecTopologyConstraint `json:"topologyConstraint,omitempty"`

	// Experimental holds graph-wide preview features whose shape may change
	// between v1beta1 releases.
	// +optional
	Experimental *DynamoGraphDeploymentExperimentalSpec `json:"experimental,omitempty"`
}

// DynamoGraphDeploymentExperimentalSpec holds a graph's preview features.
type DynamoGraphDeploymentExperimentalSpec struct {
	// KvTransferPolicy routes KV-cache transfers by topology.
	// +optional
	KvTransferPolicy *KvTransferPolicy `json:"kvTransferPolicy,omitempty"`

	// ComponentGroups scale several components as one unit (a Grove
	// PodCliqueScalingGroup).
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	ComponentGroups []ComponentGroupSpec `json:"componentGroups,omitempty"`
}

// ComponentGroupSpec is a set of components that scale together.
type ComponentGroupSpec struct {
	// Name of the group, unique among the graph's groups.
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?$`
	Name string `json:"name"`

	// Replicas of the group; owned by the scaling adapter when
	// scalingAdapter is set.
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:Minimum=1
	Replicas int32 `json:"replicas"`

	// ScalingAdapter, when present, hands the group's replicas to a
	// DynamoGraphDeploymentScalingAdapter.
	// +optional
	ScalingAdapter *ScalingAdapter `json:"scalingAdapter,omitempty"`

	// Components of the group, by name.
	// +kubebuilder:validation:Required
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	Components []ComponentGroupComponentSpec `json:"components"`
}

// ComponentGroupComponentSpec names a component of a group.
type ComponentGroupComponentSpec struct {
	// Name of a component of the graph.
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// DynamoGraphDeploymentStatus is the observed state of a graph.
type DynamoGraphDeploymentStatus struct {
	// ObservedGeneration is the generation the status was computed for.
	// Written even when 0 (no report yet), which kstatus-based tools read
	// as in progress (see the v1alpha1 package).
	// +optional
	ObservedGeneration int64 `json:"observedGeneration"`

	// State summarises the graph; "initializing" until the operator's first
	// report.
	// +kubebuilder:default=initializing
	State DGDState `json:"state"`

	// Conditions, with type Ready.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Components describes each component's workload, keyed by component
	// name.
	// +optional
	Components map[string]ComponentReplicaStatus `json:"components,omitempty"`

	// Restart is the progress of the latest restart.
	// +optional
	Restart *RestartStatus `json:"restart,omitempty"`

	// Checkpoints describes each component's checkpoint, keyed by component
	// name.
	// +optional
	Checkpoints map[string]ComponentCheckpointStatus `json:"checkpoints,omitempty"`

	// RollingUpdate is the progress of a rolling update the operator runs.
	// +optional
	RollingUpdate *RollingUpdateStatus `json:"rollingUpdate,omitempty"`

	// Placement is the scheduler's view of the graph's placement.
	// +optional
	Placement *PlacementStatus `json:"placement,omitempty"`
}

// DynamoGraphDeployment deploys a complete inference graph: frontend,
// routers, prefill and decode workers.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=dgd,categories=dynamo
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.state`
// +kubebuilder:printcolumn:name="Backend",type=string,JSONPath=`.spec.backendFramework`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type DynamoGraphDeployment struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   DynamoGraphDeploymentSpec   `json:"spec,omitempty"`
	Status DynamoGraphDeploymentStatus `json:"status,omitempty"`
}

// DynamoGraphDeploymentList is a list of DynamoGraphDeployments.
//
// +kubebuilder:object:root=true
type DynamoGraphDeploymentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []DynamoGraphDeployment `json:"items"`
}

func init() {
	SchemeBuilder.Register(&DynamoGraphDeployment{}, &DynamoGraphDeploymentList{})
}
