package v1alpha1

import (
	"bytes"
	"encoding/json"
)

// ComponentKind is the kind of a service's workload, as Dynamo names it:
// Deployment, LeaderWorkerSet, PodClique or PodCliqueScalingGroup. It is a
// free string here, without Dynamo's enum, so a kind a later version adds
// is still read.
type ComponentKind string

// Kinds of the workloads this operator renders: a Deployment, or for a
// multinode service a LeaderWorkerSet.
const (
	ComponentKindDeployment      ComponentKind = "Deployment"
	ComponentKindLeaderWorkerSet ComponentKind = "LeaderWorkerSet"
)

// ServiceReplicaStatus is one service's workload, in the shape Dynamo's
// operator writes for a graph's status.services[name] and a component's
// status.service, so that objects either operator wrote decode in the
// other and users' scripts read the same fields. componentKind,
// componentName, replicas and updatedReplicas are always written (Dynamo's
// schema requires them), which is why they have no omitempty.
type ServiceReplicaStatus struct {
	// ComponentKind is the kind of the workload.
	// +optional
	ComponentKind ComponentKind `json:"componentKind"`
	// ComponentName is the name of the workload (during a rollout, the new one).
	// +optional
	ComponentName string `json:"componentName"`
	// ComponentNames are the names of every workload of the service: one,
	// or during a rollout from one workload to another, both.
	// +optional
	ComponentNames []string `json:"componentNames,omitempty"`
	// Replicas is the number of pods (instances, for multinode) of the workload.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Replicas int32 `json:"replicas"`
	// UpdatedReplicas run the current pod template.
	// +optional
	// +kubebuilder:validation:Minimum=0
	UpdatedReplicas int32 `json:"updatedReplicas"`
	// ReadyReplicas are ready pods; absent where the workload kind has no
	// such count.
	// +optional
	// +kubebuilder:validation:Minimum=0
	ReadyReplicas *int32 `json:"readyReplicas,omitempty"`
	// AvailableReplicas are pods ready for the minimum ready time; absent
	// where the workload kind has no such count.
	// +optional
	// +kubebuilder:validation:Minimum=0
	AvailableReplicas *int32 `json:"availableReplicas,omitempty"`
}

// UnmarshalJSON reads Dynamo's object, and also the bare string that
// versions of this operator before 0.2 wrote as a component's
// status.service (the Service's name, which was the component's name), so
// an object stored by any version decodes. Decoding a status must never
// fail: a list that fails to decode stops every informer of the kind.
func (s *ServiceReplicaStatus) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	switch {
	case bytes.Equal(data, []byte("null")):
		*s = ServiceReplicaStatus{}
		return nil
	case len(data) > 0 && data[0] == '"':
		var name string
		if err := json.Unmarshal(data, &name); err != nil {
			return err
		}
		*s = ServiceReplicaStatus{ComponentName: name}
		return nil
	}
	// A type of its own, without this method, to decode the object form.
	type plain ServiceReplicaStatus
	var p plain
	if err := json.Unmarshal(data, &p); err != nil {
		return err
	}
	*s = ServiceReplicaStatus(p)
	return nil
}
