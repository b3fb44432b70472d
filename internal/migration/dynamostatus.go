package migration

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// The status types below mirror Dynamo's own Go types (ServiceReplicaStatus
// and the graph's and component's status in ai-dynamo/dynamo's
// api/v1alpha1), to decode what our operator writes as Dynamo's operator
// and tools read it: a field we write in another shape fails to decode.

// DynamoServiceStatus is a service's workload as Dynamo reads it.
type DynamoServiceStatus struct {
	ComponentKind     string   `json:"componentKind"`
	ComponentName     string   `json:"componentName"`
	ComponentNames    []string `json:"componentNames,omitempty"`
	Replicas          int32    `json:"replicas"`
	UpdatedReplicas   int32    `json:"updatedReplicas"`
	ReadyReplicas     *int32   `json:"readyReplicas,omitempty"`
	AvailableReplicas *int32   `json:"availableReplicas,omitempty"`
}

// DynamoGraphStatus is a graph's status as Dynamo reads it.
type DynamoGraphStatus struct {
	ObservedGeneration int64                          `json:"observedGeneration,omitempty"`
	State              string                         `json:"state"`
	Conditions         []metav1.Condition             `json:"conditions"`
	Services           map[string]DynamoServiceStatus `json:"services,omitempty"`
}

// DynamoComponentStatus is a component's status as Dynamo reads it.
type DynamoComponentStatus struct {
	ObservedGeneration int64                `json:"observedGeneration,omitempty"`
	Conditions         []metav1.Condition   `json:"conditions"`
	PodSelector        map[string]string    `json:"podSelector,omitempty"`
	Service            *DynamoServiceStatus `json:"service,omitempty"`
}
