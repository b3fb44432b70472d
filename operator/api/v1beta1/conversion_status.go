package v1beta1

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

type (
	alphaGraphStatus = v1alpha1.DynamoGraphDeploymentStatus
	alphaReplicas    = v1alpha1.ServiceReplicaStatus
)

func graphStatusUp(a *alphaGraphStatus) DynamoGraphDeploymentStatus {
	b := DynamoGraphDeploymentStatus{
		ObservedGeneration: a.ObservedGeneration,
		State:              DGDState(a.State),
		Conditions:         cloneConditions(a.Conditions),
		Restart:            restartStatusUp(a.Restart),
		RollingUpdate:      rollingUpdateUp(a.RollingUpdate),
	}
	for name, s := range a.Services {
		if b.Components == nil {
			b.Components = map[string]ComponentReplicaStatus{}
		}
		b.Components[name] = replicasUp(&s)
	}
	return b
}

func graphStatusDown(b *DynamoGraphDeploymentStatus) alphaGraphStatus {
	a := alphaGraphStatus{
		ObservedGeneration: b.ObservedGeneration,
		State:              v1alpha1.GraphState(b.State),
		Conditions:         cloneConditions(b.Conditions),
		Restart:            restartStatusDown(b.Restart),
		RollingUpdate:      rollingUpdateDown(b.RollingUpdate),
	}
	for name, c := range b.Components {
		if a.Services == nil {
			a.Services = map[string]alphaReplicas{}
		}
		a.Services[name] = replicasDown(&c)
	}
	return a
}

// replicasUp: v1beta1 has only componentNames, of which v1alpha1's
// componentName is the last (the new workload during a rollout).
func replicasUp(a *alphaReplicas) ComponentReplicaStatus {
	names := append([]string(nil), a.ComponentNames...)
	if len(names) == 0 && a.ComponentName != "" {
		names = []string{a.ComponentName}
	}
	return ComponentReplicaStatus{
		ComponentKind:     ComponentKind(a.ComponentKind),
		ComponentNames:    names,
		Replicas:          a.Replicas,
		UpdatedReplicas:   a.UpdatedReplicas,
		ReadyReplicas:     cloneInt32(a.ReadyReplicas),
		AvailableReplicas: cloneInt32(a.AvailableReplicas),
	}
}

func replicasDown(b *ComponentReplicaStatus) alphaReplicas {
	a := alphaReplicas{
		ComponentKind:     v1alpha1.ComponentKind(b.ComponentKind),
		ComponentNames:    append([]string(nil), b.ComponentNames...),
		Replicas:          b.Replicas,
		UpdatedReplicas:   b.UpdatedReplicas,
		ReadyReplicas:     cloneInt32(b.ReadyReplicas),
		AvailableReplicas: cloneInt32(b.AvailableReplicas),
	}
	if n := len(b.ComponentNames); n > 0 {
		a.ComponentName = b.ComponentNames[n-1]
	}
	return a
}

// rollingUpdateUp: v1beta1 names the updated services components.
func rollingUpdateUp(a *v1alpha1.RollingUpdateStatus) *RollingUpdateStatus {
	if a == nil {
		return nil
	}
	return &RollingUpdateStatus{
		Phase:             RollingUpdatePhase(a.Phase),
		StartTime:         a.StartTime.DeepCopy(),
		EndTime:           a.EndTime.DeepCopy(),
		UpdatedComponents: slices.Clone(a.UpdatedServices),
	}
}

func rollingUpdateDown(b *RollingUpdateStatus) *v1alpha1.RollingUpdateStatus {
	if b == nil {
		return nil
	}
	return &v1alpha1.RollingUpdateStatus{
		Phase:           v1alpha1.RollingUpdatePhase(b.Phase),
		StartTime:       b.StartTime.DeepCopy(),
		EndTime:         b.EndTime.DeepCopy(),
		UpdatedServices: slices.Clone(b.UpdatedComponents),
	}
}

func cloneConditions(in []metav1.Condition) []metav1.Condition {
	if in == nil {
		return nil
	}
	out := make([]metav1.Condition, len(in))
	for i := range in {
		in[i].DeepCopyInto(&out[i])
	}
	return out
}

// Status parts. The status is written by the operator through v1alpha1;
// what v1beta1 adds is saved for a round trip of the whole object (a status
// write through v1beta1 keeps the stored metadata, and so cannot save it).

var alphaGraphStatusParts = []part[alphaGraphStatus, DynamoGraphDeploymentStatus]{
	fieldPart("observedGeneration", func(a *alphaGraphStatus) int64 { return a.ObservedGeneration },
		func(a *alphaGraphStatus, v int64) { a.ObservedGeneration = v },
		func(b *DynamoGraphDeploymentStatus) any { return b.ObservedGeneration }),
	fieldPart("state", func(a *alphaGraphStatus) v1alpha1.GraphState { return a.State },
		func(a *alphaGraphStatus, v v1alpha1.GraphState) { a.State = v },
		func(b *DynamoGraphDeploymentStatus) any { return b.State }),
	fieldPart("conditions", func(a *alphaGraphStatus) []metav1.Condition { return a.Conditions },
		func(a *alphaGraphStatus, v []metav1.Condition) { a.Conditions = v },
		func(b *DynamoGraphDeploymentStatus) any { return b.Conditions }),
}

var betaGraphStatusParts = []part[DynamoGraphDeploymentStatus, alphaGraphStatus]{
	fieldPart("observedGeneration", func(b *DynamoGraphDeploymentStatus) int64 { return b.ObservedGeneration },
		func(b *DynamoGraphDeploymentStatus, v int64) { b.ObservedGeneration = v },
		func(a *alphaGraphStatus) any { return a.ObservedGeneration }),
	fieldPart("state", func(b *DynamoGraphDeploymentStatus) DGDState { return b.State },
		func(b *DynamoGraphDeploymentStatus, v DGDState) { b.State = v },
		func(a *alphaGraphStatus) any { return a.State }),
	fieldPart("conditions", func(b *DynamoGraphDeploymentStatus) []metav1.Condition { return b.Conditions },
		func(b *DynamoGraphDeploymentStatus, v []metav1.Condition) { b.Conditions = v },
		func(a *alphaGraphStatus) any { return a.Conditions }),
	fieldPart("restart", func(b *DynamoGraphDeploymentStatus) *RestartStatus { return b.Restart },
		func(b *DynamoGraphDeploymentStatus, v *RestartStatus) { b.Restart = v },
		func(a *alphaGraphStatus) any { return a.Restart }),
	fieldPart("checkpoints", func(b *DynamoGraphDeploymentStatus) map[string]ComponentCheckpointStatus { return b.Checkpoints },
		func(b *DynamoGraphDeploymentStatus, v map[string]ComponentCheckpointStatus) { b.Checkpoints = v }, nilOf[alphaGraphStatus]()),
	fieldPart("rollingUpdate", func(b *DynamoGraphDeploymentStatus) *RollingUpdateStatus { return b.RollingUpdate },
		func(b *DynamoGraphDeploymentStatus, v *RollingUpdateStatus) { b.RollingUpdate = v },
		func(a *alphaGraphStatus) any { return a.RollingUpdate }),
	fieldPart("placement", func(b *DynamoGraphDeploymentStatus) *PlacementStatus { return b.Placement },
		func(b *DynamoGraphDeploymentStatus, v *PlacementStatus) { b.Placement = v }, nilOf[alphaGraphStatus]()),
}

// alphaReplicasParts and betaReplicasParts: one entry of the services or
// components of a status, saved whole when it does not come back equal.
var alphaReplicasParts = []part[alphaReplicas, ComponentReplicaStatus]{
	fieldPart("entry", func(a *alphaReplicas) alphaReplicas { return *a },
		func(a *alphaReplicas, v alphaReplicas) { *a = v },
		func(b *ComponentReplicaStatus) any { return b }),
}

var betaReplicasParts = []part[ComponentReplicaStatus, alphaReplicas]{
	fieldPart("entry", func(b *ComponentReplicaStatus) ComponentReplicaStatus { return *b },
		func(b *ComponentReplicaStatus, v ComponentReplicaStatus) { *b = v },
		func(a *alphaReplicas) any { return a }),
}

// nilOf is the "of" of a part the other version O has nothing of, typed so
// that the part's types are inferred.
func nilOf[O any]() func(*O) any { return nil }
