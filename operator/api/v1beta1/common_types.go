package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// MainContainerName is the container of a component's podTemplate that runs
// Dynamo's runtime: the operator lays its defaults (command, env, ports,
// probes, resources, mounts) over it. Every other container is the user's.
const MainContainerName = "main"

// ComponentType is the role of a component in a graph. Unlike v1alpha1's
// free-form componentType, it is an enum, and prefill and decode are roles of
// their own rather than a subComponentType of a worker.
// +kubebuilder:validation:Enum=frontend;worker;prefill;decode;planner;epp
type ComponentType string

const (
	ComponentTypeFrontend ComponentType = "frontend"
	ComponentTypeWorker   ComponentType = "worker"
	ComponentTypePrefill  ComponentType = "prefill"
	ComponentTypeDecode   ComponentType = "decode"
	ComponentTypePlanner  ComponentType = "planner"
	ComponentTypeEPP      ComponentType = "epp"
)

// ProviderOverride is a sparse fragment of the workload a provider renders
// for a graph, a component or a role. Dynamo supports one provider, Grove
// (apiVersion grove.io/v1alpha1), and only its topologyConstraint subtree.
type ProviderOverride struct {
	// APIVersion of the provider's schema, such as grove.io/v1alpha1.
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MinLength=1
	APIVersion string `json:"apiVersion"`
	// Target is the provider kind or embedded schema the fragment applies to
	// (PodCliqueSet, PodCliqueTemplateSpec, PodCliqueScalingGroupConfig); it
	// may be left out where the location allows only one.
	// +optional
	Target string `json:"target,omitempty"`
	// Value is the fragment itself.
	// +kubebuilder:validation:Required
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	Value apiextensionsv1.JSON `json:"value"`
}

// Role names of a multinode component.
const (
	ComponentRoleLeader = "leader"
	ComponentRoleWorker = "worker"
)

// ComponentRoleSpec is one named pod-producing part of a compound component,
// such as the leader or the workers of a multinode one.
type ComponentRoleSpec struct {
	// Name of the role within its component.
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`
	// Replicas of the role in one instance of the component: 1 for a
	// multinode leader, nodeCount-1 for its workers.
	// +optional
	// +kubebuilder:validation:Minimum=1
	Replicas *int32 `json:"replicas,omitempty"`
	// ProviderOverride of the workload unit rendered for the role; only for
	// components of a graph.
	// +optional
	ProviderOverride *ProviderOverride `json:"providerOverride,omitempty"`
	// PodTemplate of the role's pods, where the component type allows one.
	// +optional
	PodTemplate *corev1.PodTemplateSpec `json:"podTemplate,omitempty"`
}

// CompilationCacheConfig mounts a claim as the backend's compilation cache;
// the operator picks the backend's mount path and environment.
type CompilationCacheConfig struct {
	// PVCName names an existing claim in the graph's namespace.
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MinLength=1
	PVCName string `json:"pvcName"`
	// MountPath overrides the backend's default cache path.
	// +optional
	MountPath string `json:"mountPath,omitempty"`
}

// MultinodeSpec spreads one instance of a component over several nodes.
type MultinodeSpec struct {
	// NodeCount is the number of nodes, and pods, one instance spans.
	// +optional
	// +kubebuilder:default=2
	// +kubebuilder:validation:Minimum=2
	NodeCount int32 `json:"nodeCount"`
}

// ModelReference names the model a component serves; the component gets a
// headless Service its endpoints are found by.
type ModelReference struct {
	// Name of the base model.
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// Revision of the model.
	// +optional
	Revision string `json:"revision,omitempty"`
}

// Restart asks for a restart of a graph's components.
type Restart struct {
	// ID is any string; each new value requests one restart.
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MinLength=1
	ID string `json:"id"`
	// Strategy says in which order components restart.
	// +optional
	Strategy *RestartStrategy `json:"strategy,omitempty"`
}

// RestartStrategyType is how a graph's components restart.
type RestartStrategyType string

const (
	RestartStrategyTypeSequential RestartStrategyType = "Sequential"
	RestartStrategyTypeParallel   RestartStrategyType = "Parallel"
)

// RestartStrategy orders a restart.
type RestartStrategy struct {
	// Type is Sequential (one component after the other) or Parallel.
	// +optional
	// +kubebuilder:validation:Enum=Sequential;Parallel
	// +kubebuilder:default=Sequential
	Type RestartStrategyType `json:"type,omitempty"`
	// Order lists every component name in the order of a sequential
	// restart; empty for the default order, unset for a parallel one.
	// +optional
	Order []string `json:"order,omitempty"`
}

// ScalingAdapter, when present (even empty), gives the component a
// DynamoGraphDeploymentScalingAdapter that owns its replicas, for HPA, KEDA
// or Dynamo's planner to scale through. It has no fields yet.
type ScalingAdapter struct{}

// EPPConfig configures the older Go endpoint picker of an epp component;
// without it an epp component runs the native one.
// +kubebuilder:validation:XValidation:rule="has(self.configMapRef) != has(self.config)",message="exactly one of configMapRef or config must be specified"
type EPPConfig struct {
	// ConfigMapRef names a key of a ConfigMap holding the configuration.
	// +optional
	ConfigMapRef *corev1.ConfigMapKeySelector `json:"configMapRef,omitempty"`
	// Config is the EndpointPickerConfig inline; the operator writes it to a
	// ConfigMap.
	// +optional
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	Config *runtime.RawExtension `json:"config,omitempty"`
}

// GPUMemoryServiceMode is where the GPU memory service runs.
type GPUMemoryServiceMode string

const (
	// GMSModeIntraPod runs it beside the engine, in the same pod.
	GMSModeIntraPod GPUMemoryServiceMode = "IntraPod"
	// GMSModeInterPod runs it in pods of its own sharing GPUs through DRA.
	GMSModeInterPod GPUMemoryServiceMode = "InterPod"
)

// GroveSpec holds Grove-specific rendering options.
type GroveSpec struct {
	// ForceScalingGroup renders a single-node component as a
	// PodCliqueScalingGroup of one-pod cliques; unset and false both mean
	// the automatic choice. Immutable after creation.
	// +optional
	ForceScalingGroup *bool `json:"forceScalingGroup,omitempty"`
}

// ExperimentalSpec holds a component's preview features, whose shape may
// change between v1beta1 releases.
type ExperimentalSpec struct {
	// GPUMemoryService shares the component's GPUs through the GPU memory
	// service and DRA.
	// +optional
	GPUMemoryService *GPUMemoryServiceSpec `json:"gpuMemoryService,omitempty"`
	// Failover runs a standby engine beside the active one; needs
	// gpuMemoryService with the same mode.
	// +optional
	Failover *FailoverSpec `json:"failover,omitempty"`
	// Grove holds Grove-specific rendering options.
	// +optional
	Grove *GroveSpec `json:"grove,omitempty"`
	// Checkpoint snapshots a started engine and restores later pods from it.
	// +optional
	Checkpoint *ComponentCheckpointConfig `json:"checkpoint,omitempty"`
}

// GPUMemoryServiceSpec configures the GPU memory service of a component.
// +kubebuilder:validation:XValidation:rule="!has(self.extraClientContainers) || size(self.extraClientContainers) == 0 || self.mode == 'IntraPod'",message="extraClientContainers is only supported with mode=IntraPod"
// +kubebuilder:validation:XValidation:rule="!has(self.extraClientPods) || size(self.extraClientPods) == 0 || self.mode == 'InterPod'",message="extraClientPods is only supported with mode=InterPod"
// +kubebuilder:validation:XValidation:rule="!has(self.extraClientPods) || size(self.extraClientPods) == 0",message="extraClientPods is reserved for inter-pod GMS and is not implemented yet"
type GPUMemoryServiceSpec struct {
	// Mode is IntraPod or InterPod.
	// +optional
	// +kubebuilder:default=IntraPod
	// +kubebuilder:validation:Enum=IntraPod;InterPod
	Mode GPUMemoryServiceMode `json:"mode,omitempty"`
	// DeviceClassName is the DRA DeviceClass GPUs are requested from.
	// +optional
	// +kubebuilder:default="gpu.nvidia.com"
	DeviceClassName string `json:"deviceClassName,omitempty"`
	// ExtraClientContainers names further containers of the podTemplate
	// wired as clients of the service.
	// +optional
	// +listType=set
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	ExtraClientContainers []string `json:"extraClientContainers,omitempty"`
	// ExtraClientPods are client pods of inter-pod mode; reserved, and
	// rejected while empty is the only supported value.
	// +optional
	// +listType=map
	// +listMapKey=name
	ExtraClientPods []GMSClientPodSpec `json:"extraClientPods,omitempty"`
}

// GMSClientPodSpec is a client pod of an inter-pod GPU memory service.
type GMSClientPodSpec struct {
	// Name of the client pod.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`
	// PodTemplate of the client pod, kept as written.
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	PodTemplate corev1.PodTemplateSpec `json:"podTemplate"`
}

// FailoverSpec configures an active-passive engine pair.
type FailoverSpec struct {
	// Mode must equal gpuMemoryService.mode.
	// +optional
	// +kubebuilder:default=IntraPod
	// +kubebuilder:validation:Enum=IntraPod;InterPod
	Mode GPUMemoryServiceMode `json:"mode,omitempty"`
	// NumShadows is the number of standby engines per rank; only 1 for now.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1
	NumShadows int32 `json:"numShadows,omitempty"`
}

// CheckpointMode is deprecated: enabled without checkpointRef is the
// automatic mode, checkpointRef the manual one.
// +kubebuilder:validation:Enum=Auto;Manual
type CheckpointMode string

const (
	CheckpointModeAuto   CheckpointMode = "Auto"
	CheckpointModeManual CheckpointMode = "Manual"
)

// CheckpointStartupPolicy is when a component's pods start relative to its
// checkpoint.
// +kubebuilder:validation:Enum=Immediate;WaitForCheckpoint
type CheckpointStartupPolicy string

const (
	// CheckpointStartupPolicyImmediate starts pods cold at once; pods
	// created after the checkpoint is ready restore from it.
	CheckpointStartupPolicyImmediate CheckpointStartupPolicy = "Immediate"
	// CheckpointStartupPolicyWaitForCheckpoint keeps the component at zero
	// replicas until its checkpoint is ready.
	CheckpointStartupPolicyWaitForCheckpoint CheckpointStartupPolicy = "WaitForCheckpoint"
)

// CheckpointDeletionPolicy is what becomes of an automatic checkpoint when
// its graph is deleted.
// +kubebuilder:validation:Enum=Delete;Retain
type CheckpointDeletionPolicy string

const (
	CheckpointDeletionPolicyDelete CheckpointDeletionPolicy = "Delete"
	CheckpointDeletionPolicyRetain CheckpointDeletionPolicy = "Retain"
)

// ComponentCheckpointConfig configures checkpoint and restore of a component.
// +kubebuilder:validation:XValidation:rule="!has(self.job) || !has(self.checkpointRef) || size(self.checkpointRef) == 0",message="checkpoint.job cannot be set when checkpointRef is specified"
type ComponentCheckpointConfig struct {
	// Enabled turns checkpointing on: an automatic checkpoint, or a restore
	// from checkpointRef when that is set.
	// +kubebuilder:validation:Required
	Enabled bool `json:"enabled"`
	// Mode is deprecated; see CheckpointMode.
	// +optional
	Mode CheckpointMode `json:"mode,omitempty"`
	// StartupPolicy is when pods start relative to the checkpoint.
	// +optional
	// +kubebuilder:default=Immediate
	StartupPolicy CheckpointStartupPolicy `json:"startupPolicy,omitempty"`
	// DeletionPolicy is what becomes of an automatic checkpoint when the
	// graph is deleted; a referenced one is never deleted.
	// +optional
	// +kubebuilder:default=Delete
	DeletionPolicy CheckpointDeletionPolicy `json:"deletionPolicy,omitempty"`
	// CheckpointRef names an existing snapshot in the namespace to restore.
	// +optional
	CheckpointRef *string `json:"checkpointRef,omitempty"`
	// Identity is deprecated and ignored.
	// +optional
	Identity *DynamoCheckpointIdentity `json:"identity,omitempty"`
	// TargetContainerName is the container snapshotted and restored.
	// +optional
	// +kubebuilder:default=main
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	TargetContainerName string `json:"targetContainerName,omitempty"`
	// Job customizes the pod that captures an automatic checkpoint.
	// +optional
	Job *ComponentCheckpointJobConfig `json:"job,omitempty"`
}

// ComponentCheckpointJobConfig customizes the pod that captures a checkpoint.
type ComponentCheckpointJobConfig struct {
	// GMSClientContainers names containers of the capture pod wired as GPU
	// memory service clients.
	// +optional
	// +listType=set
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	GMSClientContainers []string `json:"gmsClientContainers,omitempty"`
	// PodTemplate is merged into the capture pod, kept as written.
	// +optional
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	PodTemplate *corev1.PodTemplateSpec `json:"podTemplate,omitempty"`
}

// DynamoCheckpointIdentity is the deprecated identity of a checkpoint, kept
// so that manifests carrying it stay valid.
type DynamoCheckpointIdentity struct {
	// Model identifier.
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MinLength=1
	Model string `json:"model"`
	// BackendFramework of the engine.
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:Enum=vllm;sglang;trtllm
	BackendFramework string `json:"backendFramework"`
	// DynamoVersion of the platform.
	// +optional
	DynamoVersion string `json:"dynamoVersion,omitempty"`
	// TensorParallelSize of the engine.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:default=1
	TensorParallelSize int32 `json:"tensorParallelSize,omitempty"`
	// PipelineParallelSize of the engine.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:default=1
	PipelineParallelSize int32 `json:"pipelineParallelSize,omitempty"`
	// Dtype of the weights, such as bf16.
	// +optional
	Dtype string `json:"dtype,omitempty"`
	// MaxModelLen is the longest sequence.
	// +optional
	// +kubebuilder:validation:Minimum=1
	MaxModelLen int32 `json:"maxModelLen,omitempty"`
	// ExtraParameters of the identity.
	// +optional
	ExtraParameters map[string]string `json:"extraParameters,omitempty"`
}

// SpecTopologyConstraint is a graph's placement constraint.
type SpecTopologyConstraint struct {
	// ClusterTopologyName names the ClusterTopology defining the levels.
	// +kubebuilder:validation:MinLength=1
	ClusterTopologyName string `json:"clusterTopologyName"`
	// PackDomain is the level pods are packed within by default; may be
	// left out when only components set one.
	// +optional
	PackDomain TopologyDomain `json:"packDomain,omitempty"`
}

// TopologyConstraint is a component's placement constraint; its topology is
// the graph's.
type TopologyConstraint struct {
	// PackDomain is the level the component's pods are packed within; no
	// wider than the graph's.
	PackDomain TopologyDomain `json:"packDomain"`
}

// TopologyDomain names a topology level, such as zone, rack or host.
// +kubebuilder:validation:Pattern=`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`
type TopologyDomain string

// KvTransferEnforcement is how strictly decode workers are chosen in the
// prefill worker's topology domain.
// +kubebuilder:validation:Enum=required;preferred
type KvTransferEnforcement string

const (
	KvTransferEnforcementRequired  KvTransferEnforcement = "required"
	KvTransferEnforcementPreferred KvTransferEnforcement = "preferred"
)

// KvTransferPolicy routes KV-cache transfers between prefill and decode
// workers by topology.
// +kubebuilder:validation:XValidation:rule="(has(self.labelKey) && !has(self.clusterTopologyName)) || (!has(self.labelKey) && has(self.clusterTopologyName))",message="exactly one of labelKey or clusterTopologyName is required"
// +kubebuilder:validation:XValidation:rule="!has(self.enforcement) || self.enforcement != 'preferred' || has(self.preferredWeight)",message="preferredWeight is required when enforcement is preferred"
// +kubebuilder:validation:XValidation:rule="!has(self.preferredWeight) || (has(self.enforcement) && self.enforcement == 'preferred')",message="preferredWeight may only be set when enforcement is preferred"
type KvTransferPolicy struct {
	// ClusterTopologyName names a ClusterTopology whose levels label the
	// workers.
	// +optional
	// +kubebuilder:validation:MinLength=1
	ClusterTopologyName string `json:"clusterTopologyName,omitempty"`
	// LabelKey is a node label whose value is a worker's domain.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:Pattern=`^(([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*/)?([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)$`
	// +kubebuilder:validation:XValidation:rule="!self.contains('/') || self.split('/')[0].size() <= 253",message="labelKey prefix must be 253 characters or less"
	LabelKey string `json:"labelKey,omitempty"`
	// Domain is the level enforced.
	Domain TopologyDomain `json:"domain"`
	// Enforcement is required (same domain only) or preferred.
	// +optional
	// +kubebuilder:default=required
	Enforcement KvTransferEnforcement `json:"enforcement,omitempty"`
	// PreferredWeight, in [0, 1], is the strength of a preferred domain.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1
	PreferredWeight *float32 `json:"preferredWeight,omitempty"`
}

// ComponentKind is the kind of workload a component runs as.
// +kubebuilder:validation:Enum=PodClique;PodCliqueScalingGroup;Deployment;LeaderWorkerSet
type ComponentKind string

const (
	ComponentKindPodClique             ComponentKind = "PodClique"
	ComponentKindPodCliqueScalingGroup ComponentKind = "PodCliqueScalingGroup"
	ComponentKindDeployment            ComponentKind = "Deployment"
	ComponentKindLeaderWorkerSet       ComponentKind = "LeaderWorkerSet"
)

// DGDState summarises a graph's status in one word.
// +kubebuilder:validation:Enum=initializing;pending;successful;failed
type DGDState string

const (
	DGDStateInitializing DGDState = "initializing"
	DGDStatePending      DGDState = "pending"
	DGDStateSuccessful   DGDState = "successful"
	DGDStateFailed       DGDState = "failed"
)

// PlacementScoreState is how complete a graph's placement score is.
// +kubebuilder:validation:Enum=Reported;Partial;Unsupported;Unknown
type PlacementScoreState string

const (
	PlacementScoreStateReported    PlacementScoreState = "Reported"
	PlacementScoreStatePartial     PlacementScoreState = "Partial"
	PlacementScoreStateUnsupported PlacementScoreState = "Unsupported"
	PlacementScoreStateUnknown     PlacementScoreState = "Unknown"
)

// PlacementStatus is the scheduler's view of a graph's placement.
type PlacementStatus struct {
	// Score in [0, 1], higher is better: the worst of the graph's
	// placement units.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1
	Score *float64 `json:"score,omitempty"`
	// State of the score.
	// +optional
	State PlacementScoreState `json:"state,omitempty"`
}

// RestartPhase is the progress of a restart.
type RestartPhase string

const (
	RestartPhasePending    RestartPhase = "Pending"
	RestartPhaseRestarting RestartPhase = "Restarting"
	RestartPhaseCompleted  RestartPhase = "Completed"
	RestartPhaseFailed     RestartPhase = "Failed"
	RestartPhaseSuperseded RestartPhase = "Superseded"
)

// RestartStatus is the progress of the latest restart.
type RestartStatus struct {
	// ObservedID is the spec.restart.id being acted on.
	ObservedID string `json:"observedID,omitempty"`
	// Phase of the restart.
	Phase RestartPhase `json:"phase,omitempty"`
	// InProgress names the components restarting now.
	// +optional
	InProgress []string `json:"inProgress,omitempty"`
}

// RollingUpdatePhase is the progress of a rolling update.
// +kubebuilder:validation:Enum=Pending;InProgress;Completed;Failed;""
type RollingUpdatePhase string

const (
	RollingUpdatePhasePending    RollingUpdatePhase = "Pending"
	RollingUpdatePhaseInProgress RollingUpdatePhase = "InProgress"
	RollingUpdatePhaseCompleted  RollingUpdatePhase = "Completed"
	RollingUpdatePhaseFailed     RollingUpdatePhase = "Failed"
	RollingUpdatePhaseNone       RollingUpdatePhase = ""
)

// RollingUpdateStatus is the progress of a rolling update the operator runs.
type RollingUpdateStatus struct {
	// Phase of the update.
	// +optional
	Phase RollingUpdatePhase `json:"phase,omitempty"`
	// StartTime of the update.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// EndTime of the update, successful or not.
	// +optional
	EndTime *metav1.Time `json:"endTime,omitempty"`
	// UpdatedComponents have finished updating.
	// +optional
	UpdatedComponents []string `json:"updatedComponents,omitempty"`
}

// ComponentCheckpointStatus is the checkpoint of one component.
type ComponentCheckpointStatus struct {
	// CheckpointName is the snapshot in use.
	// +optional
	CheckpointName string `json:"checkpointName,omitempty"`
	// CheckpointID is a deprecated artifact identifier.
	// +optional
	CheckpointID string `json:"checkpointID,omitempty"`
	// IdentityHash is a deprecated identity hash.
	// +optional
	IdentityHash string `json:"identityHash,omitempty"`
	// Ready is true once later pods can restore from the checkpoint.
	// +optional
	Ready bool `json:"ready,omitempty"`
}

// ComponentReplicaStatus describes a component's workload and its replicas.
type ComponentReplicaStatus struct {
	// ComponentKind is the kind of the workload.
	ComponentKind ComponentKind `json:"componentKind"`
	// ComponentNames are the workloads' names: one, or the old and the new
	// during a rolling update.
	// +optional
	ComponentNames []string `json:"componentNames,omitempty"`
	// RuntimeNamespace is the Dynamo runtime namespace the component
	// registers in.
	// +optional
	RuntimeNamespace string `json:"runtimeNamespace,omitempty"`
	// GPUsPerEngine is the number of GPUs of one engine, over all its nodes.
	// +optional
	// +kubebuilder:validation:Minimum=0
	GPUsPerEngine *int64 `json:"gpusPerEngine,omitempty"`
	// GPUsPerReplica is the number of GPUs one more replica takes.
	// +optional
	// +kubebuilder:validation:Minimum=0
	GPUsPerReplica *int64 `json:"gpusPerReplica,omitempty"`
	// Replicas not terminated.
	// +kubebuilder:validation:Minimum=0
	Replicas int32 `json:"replicas"`
	// UpdatedReplicas run the current revision.
	// +kubebuilder:validation:Minimum=0
	UpdatedReplicas int32 `json:"updatedReplicas"`
	// ReadyReplicas are ready; unset where the workload does not say.
	// +optional
	// +kubebuilder:validation:Minimum=0
	ReadyReplicas *int32 `json:"readyReplicas,omitempty"`
	// AvailableReplicas are available; unset where the workload does not say.
	// +optional
	// +kubebuilder:validation:Minimum=0
	AvailableReplicas *int32 `json:"availableReplicas,omitempty"`
	// ScheduledReplicas have been scheduled, in component replicas; unset
	// where not reported, which never means none.
	// +optional
	// +kubebuilder:validation:Minimum=0
	ScheduledReplicas *int32 `json:"scheduledReplicas,omitempty"`
}
