package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GraphPVC is an entry of spec.pvcs: a claim the graph's services mount
// through volumeMounts. With create: true the operator creates it.
//
// +kubebuilder:validation:XValidation:rule="!has(self.create) || !self.create || (has(self.storageClass) && size(self.storageClass) > 0 && has(self.size) && has(self.volumeAccessMode))",message="create: true needs storageClass, size and volumeAccessMode"
type GraphPVC struct {
	// Create makes the operator create the claim. It is kept when the graph is
	// deleted, because model caches are expensive to fill again.
	// +optional
	Create *bool `json:"create,omitempty"`
	// Name of the claim.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// StorageClass of a created claim.
	// +optional
	StorageClass string `json:"storageClass,omitempty"`
	// Size of a created claim.
	// +optional
	Size *resource.Quantity `json:"size,omitempty"`
	// VolumeAccessMode of a created claim.
	// +optional
	// +kubebuilder:validation:Enum=ReadWriteOnce;ReadOnlyMany;ReadWriteMany;ReadWriteOncePod
	VolumeAccessMode corev1.PersistentVolumeAccessMode `json:"volumeAccessMode,omitempty"`
}

// DynamoGraphDeploymentSpec is a whole inference graph.
//
// spec.restart must be absent when the graph is created: a restart is a
// request against running services, made by setting spec.restart.id later.
//
// +kubebuilder:validation:XValidation:rule="oldSelf.hasValue() || !has(self.restart)",message="spec.restart must be unset on create; set spec.restart.id after creation to request a restart",optionalOldSelf=true
type DynamoGraphDeploymentSpec struct {
	// DynamoComponent references an image-build artifact (name:version) of
	// the older build flow; services without an image wait for its build.
	// +optional
	DynamoComponent string `json:"dynamoComponent,omitempty"`
	// Services maps each service name to its spec. Each becomes a
	// DynamoComponentDeployment named <graph>-<lowercased service>.
	// +kubebuilder:validation:MinProperties=1
	// +kubebuilder:validation:MaxProperties=25
	Services map[string]*DynamoComponentDeploymentSharedSpec `json:"services"`
	// Envs are applied to every service; a service's own envs win.
	// +optional
	Envs []corev1.EnvVar `json:"envs,omitempty"`
	// PVCs the services mount through volumeMounts.
	// +optional
	// +listType=map
	// +listMapKey=name
	PVCs []GraphPVC `json:"pvcs,omitempty"`
	// BackendFramework the graph runs.
	// +optional
	BackendFramework BackendFramework `json:"backendFramework,omitempty"`
	// Annotations are propagated to every child object.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
	// Labels are propagated to every child object.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// Restart requests a restart of the graph's services each time its id
	// changes.
	// +optional
	Restart *Restart `json:"restart,omitempty"`
	// TopologyConstraint places the graph's pods within one domain of a
	// topology level; services without their own inherit its packDomain.
	// +optional
	TopologyConstraint *SpecTopologyConstraint `json:"topologyConstraint,omitempty"`
}

// GraphState summarises a graph's status in one word.
// +kubebuilder:validation:Enum=initializing;pending;successful;failed
type GraphState string

const (
	// GraphStateInitializing: no status has been written yet. The operator
	// never writes it: the CRD defaults status.state to it, so that a graph
	// the operator has not reported on yet reads "initializing" in kubectl's
	// State column rather than nothing (its first report waits while the
	// graph merely rolls out; package doc).
	GraphStateInitializing GraphState = "initializing"
	// GraphStatePending: children exist but not all are available for the
	// current spec.
	GraphStatePending GraphState = "pending"
	// GraphStateSuccessful: every component is available for the current spec.
	GraphStateSuccessful GraphState = "successful"
	// GraphStateFailed: the user must fix something; the Ready condition says what.
	GraphStateFailed GraphState = "failed"
)

// Condition types of a DynamoGraphDeployment.
const (
	// ConditionReady is True when every component is available for the
	// current generation of the graph.
	ConditionReady = "Ready"
)

// DynamoGraphDeploymentStatus is the observed state of a graph.
type DynamoGraphDeploymentStatus struct {
	// ObservedGeneration is the generation the status was computed for.
	// +optional
	// +kubebuilder:default=0
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// State summarises the graph; "initializing" until the operator's first
	// report.
	// +optional
	// +kubebuilder:default=initializing
	State GraphState `json:"state,omitempty"`
	// Conditions, with type Ready.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Services describes each service's workload, keyed by service name,
	// in Dynamo's shape.
	// +optional
	Services map[string]ServiceReplicaStatus `json:"services,omitempty"`
	// Restart is the progress of the latest restart.
	// +optional
	Restart *RestartStatus `json:"restart,omitempty"`
	// RollingUpdate is the progress of the latest rolling update of the
	// services after a change of their spec.
	// +optional
	RollingUpdate *RollingUpdateStatus `json:"rollingUpdate,omitempty"`
}

// DynamoGraphDeployment deploys a complete inference graph: frontend,
// routers, prefill and decode workers.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=dgd,categories=dynamo
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.state`
// +kubebuilder:printcolumn:name="Backend",type=string,JSONPath=`.spec.backendFramework`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type DynamoGraphDeployment struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec DynamoGraphDeploymentSpec `json:"spec,omitempty"`
	// Status is written by the operator. Until its first report it reads
	// {observedGeneration: 0}, which kstatus-based tools take as in progress.
	// +kubebuilder:default={}
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
