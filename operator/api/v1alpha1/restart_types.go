package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Restart asks for a restart of a graph's services: their pods are replaced
// without any change to their spec, as `kubectl rollout restart` does.
type Restart struct {
	// ID is any string; each new value requests one restart. Setting the
	// value already acted on again does nothing.
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MinLength=1
	ID string `json:"id"`
	// Strategy says in which order the services restart.
	// +optional
	Strategy *RestartStrategy `json:"strategy,omitempty"`
}

// RestartStrategyType is how a graph's services restart.
type RestartStrategyType string

const (
	// RestartStrategyTypeSequential restarts one service at a time; the
	// next starts once the previous one's pods are all replaced and ready.
	RestartStrategyTypeSequential RestartStrategyType = "Sequential"
	// RestartStrategyTypeParallel restarts every service at once.
	RestartStrategyTypeParallel RestartStrategyType = "Parallel"
)

// RestartStrategy orders a restart.
type RestartStrategy struct {
	// Type is Sequential (one service after the other) or Parallel.
	// +optional
	// +kubebuilder:validation:Enum=Sequential;Parallel
	// +kubebuilder:default=Sequential
	Type RestartStrategyType `json:"type,omitempty"`
	// Order lists the services in the order of a sequential restart; when
	// empty, services restart by name.
	// +optional
	Order []string `json:"order,omitempty"`
}

// RestartPhase is the progress of a restart.
type RestartPhase string

const (
	RestartPhasePending    RestartPhase = "Pending"
	RestartPhaseRestarting RestartPhase = "Restarting"
	RestartPhaseCompleted  RestartPhase = "Completed"
	RestartPhaseFailed     RestartPhase = "Failed"
	// RestartPhaseSuperseded: the restart was not run as such. Dynamo's
	// operator reports it when a rolling update replaced the pods anyway;
	// this operator, for an id written before it acted on restarts.
	RestartPhaseSuperseded RestartPhase = "Superseded"
)

// RestartStatus is the progress of the latest restart.
type RestartStatus struct {
	// ObservedID is the spec.restart.id being, or last, acted on.
	// +optional
	ObservedID string `json:"observedID,omitempty"`
	// Phase of the restart.
	// +optional
	Phase RestartPhase `json:"phase,omitempty"`
	// InProgress names the services restarting now.
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

// RollingUpdateStatus is the progress of a rolling update of the graph's
// services after a change of their spec.
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
	// UpdatedServices have finished updating: their pods all run the new
	// spec and are ready.
	// +optional
	UpdatedServices []string `json:"updatedServices,omitempty"`
}
