package controllers

import (
	"slices"
	"sort"
	"strings"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1beta1"
)

// Restarts. spec.restart.id asks for the graph's pods to be replaced
// without any change to their spec, as `kubectl rollout restart` does: the
// graph controller writes the id into the pod template annotations of the
// component of each service it restarts (AnnotationRestartAt, Dynamo's
// annotation), the component controller renders them into the Deployment
// or LeaderWorkerSet, and the workload rolls as for any template change,
// surge first (render.rolloutStrategy: no old pod goes before its
// replacement is ready).
//
// Everything is derived from the spec, the stored status.restart and the
// components as they are, so an operator restart or upgrade in the middle
// carries on where it was and re-rolls nothing:
//   - a restart whose id status.restart.observedID already names, and which
//     ended (Completed, Failed, Superseded), is done: nothing changes;
//   - a new id starts a restart: Sequential with the first service of the
//     order, Parallel with every service;
//   - a service's restart is over once its component carries the id and
//     reports Available for its current spec: every replica runs the new
//     template and is ready, none of the old is left;
//   - Sequential goes on with the next service in the order only then, so
//     one service at a time rolls.
//
// The annotation's value is the id: a service whose component still
// carries an id from an earlier restart counts as restarted when that id
// is asked for again while it is its turn, so each restart takes a new id.
//
// A service not being restarted keeps the annotation its component has:
// the value an earlier restart (of this operator or of Dynamo's) left is
// never removed, which would roll its pods.

// AnnotationRestartAt is the pod template annotation whose change restarts
// a service's pods. Dynamo's operator writes it too (with a time), so a
// graph it restarted is taken over as it is.
const AnnotationRestartAt = "nvidia.com/restartAt"

// restartPlan is what a graph's restart asks for now.
type restartPlan struct {
	// status is the graph's next status.restart.
	status *v1alpha1.RestartStatus
	// annotate maps each service that restarts now, or already restarted
	// in this restart, to the value of its AnnotationRestartAt.
	annotate map[string]string
}

// planRestart computes the restart plan of dgd from its stored status and
// its components by service name (live, as the API server returned them).
func planRestart(dgd *v1alpha1.DynamoGraphDeployment, live map[string]*v1alpha1.DynamoComponentDeployment) restartPlan {
	prev := dgd.Status.Restart
	req := dgd.Spec.Restart
	if req == nil || req.ID == "" {
		// No restart asked: an ended one stays reported; one cut short by
		// the removal of spec.restart is no longer in progress.
		if prev != nil && !restartEnded(prev.Phase) {
			return restartPlan{status: nil}
		}
		return restartPlan{status: prev.DeepCopy()}
	}
	if prev != nil && prev.ObservedID == req.ID && restartEnded(prev.Phase) {
		return restartPlan{status: prev.DeepCopy()}
	}
	isNew := prev == nil || prev.ObservedID != req.ID
	order := restartOrder(dgd)
	if len(order) == 0 {
		return restartPlan{status: &v1alpha1.RestartStatus{ObservedID: req.ID, Phase: v1alpha1.RestartPhaseCompleted}}
	}
	if restartParallel(req) {
		return planParallel(req.ID, order, prev, isNew, live)
	}
	return planSequential(req.ID, order, prev, isNew, live)
}

// planParallel: every service restarts at once; those whose restart is
// over leave inProgress.
func planParallel(id string, order []string, prev *v1alpha1.RestartStatus, isNew bool,
	live map[string]*v1alpha1.DynamoComponentDeployment) restartPlan {
	annotate := annotateAll(order, id)
	if isNew {
		return restartPlan{status: restarting(id, order), annotate: annotate}
	}
	inProgress := order
	if len(prev.InProgress) > 0 {
		inProgress = prev.InProgress
	}
	inProgress = slices.DeleteFunc(slices.Clone(inProgress), func(s string) bool { return restartedFor(live[s], id) })
	if len(inProgress) == 0 {
		return restartPlan{status: completed(id), annotate: annotate}
	}
	return restartPlan{status: restarting(id, inProgress), annotate: annotate}
}

// planSequential: the service in progress (the first of the order for a
// new restart) restarts; once its restart is over, the next one starts.
// It moves on by one service a reconcile: the next one has just been
// annotated, and its own restart is seen over only once it rolled.
func planSequential(id string, order []string, prev *v1alpha1.RestartStatus, isNew bool,
	live map[string]*v1alpha1.DynamoComponentDeployment) restartPlan {
	current := 0
	if !isNew && len(prev.InProgress) > 0 {
		if i := slices.Index(order, prev.InProgress[0]); i >= 0 {
			current = i
		}
		if restartedFor(live[order[current]], id) {
			current++
		}
	}
	annotate := annotateAll(order[:min(current+1, len(order))], id)
	if current == len(order) {
		return restartPlan{status: completed(id), annotate: annotate}
	}
	return restartPlan{status: restarting(id, []string{order[current]}), annotate: annotate}
}

// restartOrder is the services a restart goes through, in order: the
// strategy's order, less names the graph has no service of, then (for an
// order left empty) every service by name.
func restartOrder(dgd *v1alpha1.DynamoGraphDeployment) []string {
	var order []string
	if s := dgd.Spec.Restart.Strategy; s != nil && len(s.Order) > 0 {
		for _, name := range s.Order {
			if svc, ok := dgd.Spec.Services[name]; ok && svc != nil && !slices.Contains(order, name) {
				order = append(order, name)
			}
		}
		return order
	}
	for name, svc := range dgd.Spec.Services {
		if svc != nil {
			order = append(order, name)
		}
	}
	sort.Strings(order)
	return order
}

func restartParallel(r *v1alpha1.Restart) bool {
	return r.Strategy != nil && r.Strategy.Type == v1alpha1.RestartStrategyTypeParallel
}

func restartEnded(p v1alpha1.RestartPhase) bool {
	return p == v1alpha1.RestartPhaseCompleted || p == v1alpha1.RestartPhaseFailed || p == v1alpha1.RestartPhaseSuperseded
}

// restartedFor reports whether a component finished its restart for id: it
// carries the id and is Available for its current spec.
func restartedFor(dcd *v1alpha1.DynamoComponentDeployment, id string) bool {
	if dcd == nil || restartAt(dcd) != id {
		return false
	}
	available, _ := componentCurrent(dcd)
	return available
}

// restartAt is a component's AnnotationRestartAt, "" when it has none.
func restartAt(dcd *v1alpha1.DynamoComponentDeployment) string {
	if m := dcd.Spec.ExtraPodMetadata; m != nil {
		return m.Annotations[AnnotationRestartAt]
	}
	return ""
}

// setRestartAt sets a component's AnnotationRestartAt; "" leaves it
// without one.
func setRestartAt(dcd *v1alpha1.DynamoComponentDeployment, value string) {
	if value == "" || restartAt(dcd) == value {
		return
	}
	spec := &dcd.Spec.DynamoComponentDeploymentSharedSpec
	if spec.ExtraPodMetadata == nil {
		spec.ExtraPodMetadata = &v1alpha1.ExtraPodMetadata{}
	}
	if spec.ExtraPodMetadata.Annotations == nil {
		spec.ExtraPodMetadata.Annotations = map[string]string{}
	}
	spec.ExtraPodMetadata.Annotations[AnnotationRestartAt] = value
}

// restartValue is the AnnotationRestartAt a service's component is applied
// with: the plan's for a service restarting in it, else the one its
// component carries (live nil: none).
func (p restartPlan) restartValue(service string, live *v1alpha1.DynamoComponentDeployment) string {
	if v, ok := p.annotate[service]; ok {
		return v
	}
	if live == nil {
		return ""
	}
	return restartAt(live)
}

func annotateAll(services []string, id string) map[string]string {
	out := make(map[string]string, len(services))
	for _, s := range services {
		out[s] = id
	}
	return out
}

func restarting(id string, inProgress []string) *v1alpha1.RestartStatus {
	return &v1alpha1.RestartStatus{ObservedID: id, Phase: v1alpha1.RestartPhaseRestarting, InProgress: inProgress}
}

func completed(id string) *v1alpha1.RestartStatus {
	return &v1alpha1.RestartStatus{ObservedID: id, Phase: v1alpha1.RestartPhaseCompleted}
}

// legacyRestart is the status.restart of a graph whose restart id was
// written through v1beta1 before v1alpha1 had spec.restart (kept in the
// conversion's annotation, and not acted on then): that id is taken as
// seen, Superseded, so that it restarts nothing when a later write through
// v1beta1 (a GitOps tool applying the same manifest) brings it into
// v1alpha1; a new id restarts. nil for any other graph, or once
// status.restart says anything. Only an annotation that names a restart
// is converted: the graph's status converts it on each reconcile already
// (betaOnlyIgnoredFields).
func legacyRestart(dgd *v1alpha1.DynamoGraphDeployment) *v1alpha1.RestartStatus {
	if dgd.Status.Restart != nil || !strings.Contains(dgd.Annotations[v1beta1.AnnotationBetaSpec], `"restart"`) {
		return nil
	}
	beta := savedBeta(dgd)
	if beta == nil || beta.Spec.Restart == nil || beta.Spec.Restart.ID == "" {
		return nil
	}
	return &v1alpha1.RestartStatus{ObservedID: beta.Spec.Restart.ID, Phase: v1alpha1.RestartPhaseSuperseded}
}
