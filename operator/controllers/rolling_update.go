package controllers

import (
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

// Managed rolling updates. A change of a graph's spec reaches its services
// in dependency order: the workers (worker, prefill, decode) first, then
// the services that route to them (the frontend, and every other), which
// keep their current spec until every worker runs its new one with all
// its pods ready. Within a stage services roll together, each surge first
// (render.rolloutStrategy), so no service ever has fewer ready pods than it
// desires. A held service still gets its replicas, ownership and metadata:
// scaling never waits.
//
// status.rollingUpdate reports it: InProgress from the first reconcile
// that finds a service's spec changed (its component records another input,
// AnnotationRenderedFor), with the time; updatedServices the services that
// run the current spec, all their pods ready; Completed, with the end time,
// once every service does. Like the restart, everything is derived from the
// spec, the stored status and the components, so an operator restart in
// the middle carries on.

// rollingStage is the order in which a service takes a spec change: the
// workers before the rest.
func rollingStage(svc *v1alpha1.DynamoComponentDeploymentSharedSpec) int {
	switch svc.ComponentType {
	case v1alpha1.ComponentTypeWorker, v1alpha1.ComponentTypePrefill, v1alpha1.ComponentTypeDecode:
		return 0
	}
	return 1
}

// specChanged reports whether a service's component, as it is, was
// rendered for another input than the graph's current one. A component with
// no record (adopted content) is not changed: it is adopted as it is.
func specChanged(dgd *v1alpha1.DynamoGraphDeployment, service string, live *v1alpha1.DynamoComponentDeployment) bool {
	if live == nil {
		return false
	}
	done := live.Annotations[AnnotationRenderedFor]
	return done != "" && done != serviceInput(dgd, service)
}

// rollingHold names the services whose spec change waits: those of a stage
// after one with a service whose spec changed or that is not yet Available
// for its current spec (and not stalled). live are the components before
// this reconcile.
func rollingHold(dgd *v1alpha1.DynamoGraphDeployment, live map[string]*v1alpha1.DynamoComponentDeployment) map[string]bool {
	busy := map[int]bool{}
	for name, svc := range dgd.Spec.Services {
		if svc == nil || live[name] == nil {
			continue
		}
		// A stalled service cannot progress without a change: it holds
		// nothing back, or a fix of another service could never land.
		if componentStalled(live[name]) != nil {
			continue
		}
		if available, _ := componentCurrent(live[name]); specChanged(dgd, name, live[name]) || !available {
			busy[rollingStage(svc)] = true
		}
	}
	hold := map[string]bool{}
	for name, svc := range dgd.Spec.Services {
		if svc == nil || !specChanged(dgd, name, live[name]) {
			continue
		}
		for stage := range rollingStage(svc) {
			if busy[stage] {
				hold[name] = true
			}
		}
	}
	return hold
}

// rollingUpdateStatus is the graph's next status.rollingUpdate. live are the
// components before this reconcile, components as it left them.
func rollingUpdateStatus(dgd *v1alpha1.DynamoGraphDeployment, live map[string]*v1alpha1.DynamoComponentDeployment,
	components []*v1alpha1.DynamoComponentDeployment, now metav1.Time) *v1alpha1.RollingUpdateStatus {
	prev := dgd.Status.RollingUpdate
	active := prev != nil && prev.Phase == v1alpha1.RollingUpdatePhaseInProgress
	if !active {
		started := false
		for name := range dgd.Spec.Services {
			started = started || specChanged(dgd, name, live[name])
		}
		if !started {
			return prev.DeepCopy()
		}
		prev = &v1alpha1.RollingUpdateStatus{Phase: v1alpha1.RollingUpdatePhaseInProgress, StartTime: &now}
	}
	next := prev.DeepCopy()
	next.UpdatedServices = nil
	all := true
	for _, dcd := range components {
		service := dcd.Spec.ServiceName
		available, _ := componentCurrent(dcd)
		if !specChanged(dgd, service, dcd) && available {
			next.UpdatedServices = append(next.UpdatedServices, service)
		} else {
			all = false
		}
	}
	sort.Strings(next.UpdatedServices)
	if all {
		next.Phase, next.EndTime = v1alpha1.RollingUpdatePhaseCompleted, &now
	}
	return next
}

// holdBack keeps a held service's component as it is, less its replicas
// (which apply at once), and returns the input to record: the one its
// content was rendered for.
func holdBack(dcd, live *v1alpha1.DynamoComponentDeployment) string {
	keepComponent(dcd, live)
	return live.Annotations[AnnotationRenderedFor]
}
