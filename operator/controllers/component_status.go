package controllers

import (
	"fmt"
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/render"
)

// Reasons of the Available condition of a DynamoComponentDeployment.
const (
	ReasonAvailable         = "Available"
	ReasonRolloutInProgress = "RolloutInProgress"
	ReasonInvalidSpec       = "InvalidSpec"
	// ReasonNotAdoptable: another operator runs the component with a
	// workload this operator cannot take over in place.
	ReasonNotAdoptable = "NotAdoptable"
)

// componentStatus computes a DCD's status from its Deployment as the API
// server returned it. The DCD is Available only when the Deployment has
// observed its current generation and every desired replica runs the new
// template and is available, with no old replica left: during a rollout
// old pods still serve, and the component is not yet what its spec says.
// why, when not nil, explains a component that is not available (see
// rolloutBlocker) in its conditions' reason and message.
func componentStatus(dcd *v1alpha1.DynamoComponentDeployment, deploy *appsv1.Deployment, why *blocker, now metav1.Time) v1alpha1.DynamoComponentDeploymentStatus {
	st := *dcd.Status.DeepCopy()
	st.ObservedGeneration = dcd.Generation
	st.Service = &v1alpha1.ServiceReplicaStatus{
		ComponentKind:     v1alpha1.ComponentKindDeployment,
		ComponentName:     deploy.Name,
		ComponentNames:    []string{deploy.Name},
		Replicas:          deploy.Status.Replicas,
		UpdatedReplicas:   deploy.Status.UpdatedReplicas,
		ReadyReplicas:     ptr.To(deploy.Status.ReadyReplicas),
		AvailableReplicas: ptr.To(deploy.Status.AvailableReplicas),
	}
	// The workload's own selector: one another operator made keeps its own.
	st.PodSelector = map[string]string{render.LabelComponent: dcd.Name}
	if deploy.Spec.Selector != nil && len(deploy.Spec.Selector.MatchLabels) > 0 {
		st.PodSelector = maps.Clone(deploy.Spec.Selector.MatchLabels)
	}
	st.Selector = labels.SelectorFromSet(st.PodSelector).String()
	st.Replicas = deploy.Status.Replicas
	st.UpdatedReplicas = deploy.Status.UpdatedReplicas
	st.ReadyReplicas = deploy.Status.ReadyReplicas
	st.AvailableReplicas = deploy.Status.AvailableReplicas

	cond := deploymentAvailability(deploy)
	cond.ObservedGeneration, cond.LastTransitionTime = dcd.Generation, now
	stalled := false
	if why != nil && cond.Status != metav1.ConditionTrue {
		cond.Reason = why.Reason
		cond.Message += "; " + why.Message
		stalled = why.Stalled
	}
	setComponentConditions(&st, cond, stalled)
	return st
}

// deploymentAvailability is a component's Available condition as far as its
// Deployment's status tells, without generation and time.
func deploymentAvailability(deploy *appsv1.Deployment) metav1.Condition {
	desired := int32(1)
	if deploy.Spec.Replicas != nil {
		desired = *deploy.Spec.Replicas
	}
	cond := metav1.Condition{Type: v1alpha1.ConditionAvailable}
	switch {
	case deploy.Status.ObservedGeneration < deploy.Generation:
		cond.Status, cond.Reason = metav1.ConditionFalse, ReasonRolloutInProgress
		cond.Message = "the Deployment has not yet observed the current spec"
	case deploy.Status.UpdatedReplicas < desired:
		cond.Status, cond.Reason = metav1.ConditionFalse, ReasonRolloutInProgress
		cond.Message = fmt.Sprintf("%d of %d replicas updated", deploy.Status.UpdatedReplicas, desired)
	case deploy.Status.Replicas > desired:
		cond.Status, cond.Reason = metav1.ConditionFalse, ReasonRolloutInProgress
		cond.Message = fmt.Sprintf("%d old replicas still running", deploy.Status.Replicas-desired)
	case deploy.Status.AvailableReplicas < desired:
		cond.Status, cond.Reason = metav1.ConditionFalse, ReasonRolloutInProgress
		cond.Message = fmt.Sprintf("%d of %d replicas available", deploy.Status.AvailableReplicas, desired)
	default:
		cond.Status, cond.Reason = metav1.ConditionTrue, ReasonAvailable
		cond.Message = fmt.Sprintf("%d of %d replicas available", deploy.Status.AvailableReplicas, desired)
	}
	return cond
}

// setComponentConditions sets Available and, with the same truth, Ready:
// kstatus (Flux, Argo CD, kubectl wait --for=condition=Ready) reads Ready,
// and without it calls any component with conditions "Current". Stalled is
// True only while the component cannot progress without a change (an
// invalid spec, a passed progress deadline), which kstatus reports as
// Failed; otherwise it is removed, as kstatus's convention has it.
func setComponentConditions(st *v1alpha1.DynamoComponentDeploymentStatus, available metav1.Condition, stalled bool) {
	available.Type = v1alpha1.ConditionAvailable
	meta.SetStatusCondition(&st.Conditions, available)
	ready := available
	ready.Type = v1alpha1.ConditionReady
	meta.SetStatusCondition(&st.Conditions, ready)
	if !stalled {
		meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionStalled)
		return
	}
	s := available
	s.Type, s.Status = v1alpha1.ConditionStalled, metav1.ConditionTrue
	meta.SetStatusCondition(&st.Conditions, s)
}

// invalidComponentStatus records a spec the user must fix.
// reason is ReasonInvalidSpec or ReasonNotAdoptable.
func invalidComponentStatus(dcd *v1alpha1.DynamoComponentDeployment, reason string, err error, now metav1.Time) v1alpha1.DynamoComponentDeploymentStatus {
	st := *dcd.Status.DeepCopy()
	st.ObservedGeneration = dcd.Generation
	setComponentConditions(&st, metav1.Condition{
		Status:             metav1.ConditionFalse,
		Reason:             reason,
		Message:            err.Error(),
		ObservedGeneration: dcd.Generation,
		LastTransitionTime: now,
	}, true)
	return st
}

// componentCurrent reports whether a DCD's status describes its current
// spec and says Available.
func componentCurrent(dcd *v1alpha1.DynamoComponentDeployment) (available bool, cond *metav1.Condition) {
	cond = meta.FindStatusCondition(dcd.Status.Conditions, v1alpha1.ConditionAvailable)
	if cond == nil || dcd.Status.ObservedGeneration != dcd.Generation || cond.ObservedGeneration != dcd.Generation {
		return false, nil
	}
	return cond.Status == metav1.ConditionTrue, cond
}
