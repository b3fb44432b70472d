package controllers

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/render"
)

// ConditionInferencePool says, for a graph with a configured endpoint
// picker, whether the InferencePool <graph>-pool it picks for exists (True)
// or not (False, with why: the cluster serves no InferencePool API, or the
// picker runs as the workload an earlier version rendered). Absent
// otherwise.
const ConditionInferencePool = "InferencePool"

// Reasons of ConditionInferencePool (and ReasonAPINotServed).
const (
	ReasonInferencePool = "InferencePool"
	// ReasonInferencePoolAtNextChange: the picker runs as a workload an
	// earlier version rendered, kept until its service's spec changes;
	// nothing new is created beside it until then.
	ReasonInferencePoolAtNextChange = "InferencePoolAtNextSpecChange"
	// ReasonInferencePoolComponentUnreported: the picker's component status
	// is still an earlier version's (just after an upgrade), which does not
	// say whether its workload is kept; the pool waits for its report.
	ReasonInferencePoolComponentUnreported = "PickerNotReported"
)

// applyInferencePool applies the InferencePool of the graph's endpoint
// picker when the cluster serves the inference extension's API, and deletes
// it when the graph no longer has a picker. Dynamo's operator writes the pool
// with the graph as its owner and fails the graph's reconcile on a cluster
// without the API; here the graph runs all the same and says so. components
// are the graph's components as stored, whose WorkloadPending condition says
// a picker is kept as an earlier version rendered it. It returns the
// InferencePool condition (nil without a picker) and whether to look for the
// API again (discovery is not watchable: gangAPIRecheck).
func (r *GraphReconciler) applyInferencePool(ctx context.Context, dgd *v1alpha1.DynamoGraphDeployment,
	desired, components []*v1alpha1.DynamoComponentDeployment, changes *changeSet) (*metav1.Condition, bool, error) {
	gvk := render.InferencePoolGVK
	served, err := r.inferencePoolAPI.lookup(r.Client.RESTMapper(), gvk, r.Clock.Now())
	if err != nil {
		return nil, false, err
	}
	picker := render.EndpointPicker(desired)
	kept, reported := false, true
	if picker != nil {
		kept, reported = pickerKept(picker, components)
	}
	pool := render.InferencePool(picker)
	if kept || !reported {
		pool = nil
	}
	if served {
		key := client.ObjectKey{Namespace: dgd.Namespace, Name: render.EPPPoolName(dgd.Name)}
		if err := applyOrDeleteOnceServed(ctx, r.Client, r.Applier, onceServedWatch(r.onceServed, gvk.GroupKind()),
			dgd, gvk, key, pool, changes); err != nil {
			return nil, false, err
		}
	}
	if picker == nil {
		return nil, false, nil
	}
	cond := &metav1.Condition{
		Type:               ConditionInferencePool,
		ObservedGeneration: dgd.Generation,
		LastTransitionTime: metav1.NewTime(r.Clock.Now()),
	}
	name := render.EPPPoolName(dgd.Name)
	switch {
	case !reported:
		cond.Status, cond.Reason = metav1.ConditionFalse, ReasonInferencePoolComponentUnreported
		cond.Message = fmt.Sprintf("the endpoint picker %s has not reported its workload yet (its status is an earlier "+
			"version's): the InferencePool %s is created once it reports that it runs what its spec sets", picker.Name, name)
	case kept:
		cond.Status, cond.Reason = metav1.ConditionFalse, ReasonInferencePoolAtNextChange
		cond.Message = fmt.Sprintf("the endpoint picker %s runs as the workload an earlier version rendered, kept so that the "+
			"upgrade restarts nothing: the InferencePool %s is created at the service's next spec change", picker.Name, name)
	case !served:
		cond.Status, cond.Reason = metav1.ConditionFalse, ReasonAPINotServed
		cond.Message = fmt.Sprintf("the cluster serves no %s InferencePool API, so the InferencePool %s the endpoint picker %s "+
			"picks for is not created: install the Gateway API inference extension's CRDs; the operator creates it within a "+
			"minute, without a restart", gvk.GroupVersion(), name, picker.Name)
	default:
		cond.Status, cond.Reason = metav1.ConditionTrue, ReasonInferencePool
		cond.Message = fmt.Sprintf("the InferencePool %s selects the graph's workers, picked by the endpoint picker %s",
			name, picker.Name)
	}
	return cond, !served, nil
}

// pickerKept says what the picker's component tells of its workload
// (workloadKept): kept as an earlier version rendered it, and whether it
// has reported so at all. A picker not stored yet is new: rendered here.
func pickerKept(picker *v1alpha1.DynamoComponentDeployment, components []*v1alpha1.DynamoComponentDeployment) (kept, reported bool) {
	for _, dcd := range components {
		if dcd.Spec.ServiceName == picker.Spec.ServiceName {
			return workloadKept(dcd)
		}
	}
	return false, true
}

// setInferencePoolCondition records cond in st, or removes the condition
// when the graph has no endpoint picker.
func setInferencePoolCondition(st *v1alpha1.DynamoGraphDeploymentStatus, cond *metav1.Condition) {
	if cond == nil {
		meta.RemoveStatusCondition(&st.Conditions, ConditionInferencePool)
		return
	}
	meta.SetStatusCondition(&st.Conditions, *cond)
}
