package controllers

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

// Reasons of the Ready condition of a DynamoGraphDeployment.
const (
	ReasonAllComponentsAvailable = "AllComponentsAvailable"
	ReasonComponentsNotReady     = "ComponentsNotReady"
	ReasonComponentInvalid       = "ComponentInvalid"
	// ReasonComponentStalled is the reason of a graph's Stalled condition
	// when one of its components is stalled.
	ReasonComponentStalled = "ComponentStalled"
)

// graphStatus computes a DGD's status from its components as they are now.
// components holds one DCD per service, as last returned by the API server.
func graphStatus(dgd *v1alpha1.DynamoGraphDeployment, components []*v1alpha1.DynamoComponentDeployment, now metav1.Time) v1alpha1.DynamoGraphDeploymentStatus {
	st := *dgd.Status.DeepCopy()
	st.ObservedGeneration = dgd.Generation
	st.Services = make(map[string]v1alpha1.ServiceReplicaStatus, len(components))

	var waiting, invalid, stalled []string
	for _, dcd := range components {
		service := dcd.Spec.ServiceName
		st.Services[service] = serviceStatus(dcd)
		if s := componentStalled(dcd); s != nil {
			stalled = append(stalled, fmt.Sprintf("%s: %s", service, s.Message))
		}
		available, cond := componentCurrent(dcd)
		switch {
		case available:
		case cond == nil:
			waiting = append(waiting, fmt.Sprintf("%s (no status yet)", service))
		case cond.Reason == ReasonInvalidSpec || cond.Reason == ReasonNotAdoptable || cond.Reason == ReasonMissingAPI ||
			cond.Reason == ReasonImageBuildFailedForComponent:
			invalid = append(invalid, fmt.Sprintf("%s: %s", service, cond.Message))
		default:
			waiting = append(waiting, fmt.Sprintf("%s (%s)", service, cond.Message))
		}
	}
	sort.Strings(waiting)
	sort.Strings(invalid)
	sort.Strings(stalled)

	cond := metav1.Condition{Type: v1alpha1.ConditionReady, ObservedGeneration: dgd.Generation, LastTransitionTime: now}
	switch {
	case len(invalid) > 0:
		st.State = v1alpha1.GraphStateFailed
		cond.Status, cond.Reason = metav1.ConditionFalse, ReasonComponentInvalid
		cond.Message = "fix the spec of " + strings.Join(invalid, "; ")
	case len(waiting) > 0:
		st.State = v1alpha1.GraphStatePending
		cond.Status, cond.Reason = metav1.ConditionFalse, ReasonComponentsNotReady
		cond.Message = "waiting for " + strings.Join(waiting, ", ")
	default:
		st.State = v1alpha1.GraphStateSuccessful
		cond.Status, cond.Reason = metav1.ConditionTrue, ReasonAllComponentsAvailable
		cond.Message = fmt.Sprintf("all %d components are available", len(components))
	}
	meta.SetStatusCondition(&st.Conditions, cond)
	setGraphStalled(&st, dgd.Generation, now, ReasonComponentStalled, strings.Join(stalled, "; "))
	setIgnoredFieldsCondition(&st, dgd, components, now)
	return st
}

// componentStalled is a component's Stalled condition when it is True for
// the component's current spec, else nil.
func componentStalled(dcd *v1alpha1.DynamoComponentDeployment) *metav1.Condition {
	c := meta.FindStatusCondition(dcd.Status.Conditions, v1alpha1.ConditionStalled)
	if c == nil || c.Status != metav1.ConditionTrue || dcd.Status.ObservedGeneration != dcd.Generation || c.ObservedGeneration != dcd.Generation {
		return nil
	}
	return c
}

// setGraphStalled sets the graph's Stalled condition True with message,
// or removes it when message is empty: kstatus-based tools (Flux, Argo CD)
// read a graph with Stalled True as Failed, one without it by its Ready
// condition. A graph is stalled when it cannot progress without a change:
// a component of it is stalled (a passed progress deadline, an invalid
// component spec), or its own spec is invalid.
func setGraphStalled(st *v1alpha1.DynamoGraphDeploymentStatus, gen int64, now metav1.Time, reason, message string) {
	if message == "" {
		meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionStalled)
		return
	}
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{
		Type: v1alpha1.ConditionStalled, Status: metav1.ConditionTrue, Reason: reason, Message: message,
		ObservedGeneration: gen, LastTransitionTime: now,
	})
}

// invalidGraphStatus records a graph spec the user must fix before any
// child can be made from it.
func invalidGraphStatus(dgd *v1alpha1.DynamoGraphDeployment, err error, now metav1.Time) v1alpha1.DynamoGraphDeploymentStatus {
	st := *dgd.Status.DeepCopy()
	st.ObservedGeneration = dgd.Generation
	st.State = v1alpha1.GraphStateFailed
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{
		Type:               v1alpha1.ConditionReady,
		Status:             metav1.ConditionFalse,
		Reason:             ReasonInvalidSpec,
		Message:            err.Error(),
		ObservedGeneration: dgd.Generation,
		LastTransitionTime: now,
	})
	setGraphStalled(&st, dgd.Generation, now, ReasonInvalidSpec, err.Error())
	return st
}

// serviceStatus is a service's entry of the graph's status.services in
// Dynamo's shape, read from its component's status.service, which either
// operator writes (our top-level replica counts are pruned where Dynamo's
// CRD is installed). componentName is the workload's name, as Dynamo's
// operator writes it; before the component reported one, the component's.
func serviceStatus(dcd *v1alpha1.DynamoComponentDeployment) v1alpha1.ServiceReplicaStatus {
	if dcd.Status.Service != nil && dcd.Status.Service.ComponentKind != "" {
		s := *dcd.Status.Service.DeepCopy()
		if len(s.ComponentNames) == 0 && s.ComponentName != "" {
			s.ComponentNames = []string{s.ComponentName}
		}
		return s
	}
	return v1alpha1.ServiceReplicaStatus{
		ComponentKind:     v1alpha1.ComponentKindDeployment,
		ComponentName:     dcd.Name,
		ComponentNames:    []string{dcd.Name},
		Replicas:          dcd.Status.Replicas,
		UpdatedReplicas:   dcd.Status.UpdatedReplicas,
		ReadyReplicas:     ptr.To(dcd.Status.ReadyReplicas),
		AvailableReplicas: ptr.To(dcd.Status.AvailableReplicas),
	}
}
