package controllers

import (
	"context"
	"fmt"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/render"
)

// ConditionVirtualService says, for a component whose ingress sets
// useVirtualService, whether it is exposed through its Istio VirtualService
// (True) or through an Ingress instead (False, with why: the cluster serves
// no VirtualService API, or no gateway is named). Absent otherwise.
const ConditionVirtualService = "VirtualService"

// Reasons of ConditionVirtualService (and ReasonAPINotServed).
const (
	ReasonVirtualService = "VirtualService"
	ReasonNoGateway      = "NoGateway"
	// ReasonVirtualServiceAtNextChange: the component runs as a workload
	// an earlier version rendered, kept until its spec changes, and keeps
	// the Ingress that version exposed it through until then.
	ReasonVirtualServiceAtNextChange = "VirtualServiceAtNextSpecChange"
)

// applyExposure applies what exposes the component outside the cluster: its
// VirtualService when it asks for one with a gateway and the cluster serves
// Istio's API, else its Ingress when enabled; the other is deleted. It
// returns the VirtualService condition (nil when the component does not
// ask for one) and whether to look for the API again (discovery is not
// watchable: gangAPIRecheck). While the component's workload is kept
// (keptWorkload: an earlier version's rendering, until its spec changes)
// its Ingress stays too: nothing new is created beside a kept workload.
func (r *ComponentReconciler) applyExposure(ctx context.Context, dcd *v1alpha1.DynamoComponentDeployment, keptWorkload bool, changes *changeSet) (*metav1.Condition, bool, error) {
	gvk := render.VirtualServiceGVK
	served, err := r.virtualServiceAPI.lookup(r.Client.RESTMapper(), gvk, r.Clock.Now())
	if err != nil {
		return nil, false, err
	}
	vs := render.VirtualService(dcd)
	if keptWorkload {
		vs = nil
	}
	ingress := render.Ingress(dcd)
	if served {
		if vs != nil {
			ingress = nil // instead of it
		}
		if err := r.applyOrDeleteVirtualService(ctx, dcd, vs, changes); err != nil {
			return nil, false, err
		}
	}
	if err := r.applyOrDelete(ctx, dcd, ingress, dcd.Name, &networkingv1.Ingress{}, changes); err != nil {
		return nil, false, err
	}
	if !render.WantsVirtualService(dcd) {
		return nil, false, nil
	}
	cond := &metav1.Condition{
		Type:               ConditionVirtualService,
		ObservedGeneration: dcd.Generation,
		LastTransitionTime: metav1.NewTime(r.Clock.Now()),
	}
	switch {
	case keptWorkload:
		cond.Status, cond.Reason = metav1.ConditionFalse, ReasonVirtualServiceAtNextChange
		cond.Message = fmt.Sprintf("the component runs as the workload an earlier version rendered, kept so that the upgrade "+
			"restarts nothing: the Ingress %s serves until the service's next spec change", dcd.Name)
	case vs == nil:
		cond.Status, cond.Reason = metav1.ConditionFalse, ReasonNoGateway
		cond.Message = fmt.Sprintf("useVirtualService needs ingress.virtualServiceGateway, the Istio gateway to route through: "+
			"the Ingress %s serves instead", dcd.Name)
	case !served:
		cond.Status, cond.Reason = metav1.ConditionFalse, ReasonAPINotServed
		cond.Message = fmt.Sprintf("the cluster serves no %s VirtualService API: the Ingress %s serves instead; "+
			"with Istio installed the operator switches to the VirtualService within a minute, without a restart",
			gvk.GroupVersion(), dcd.Name)
	default:
		cond.Status, cond.Reason = metav1.ConditionTrue, ReasonVirtualService
		cond.Message = fmt.Sprintf("exposed through the VirtualService %s of gateway %s, instead of an Ingress",
			dcd.Name, *dcd.Spec.Ingress.VirtualServiceGateway)
	}
	return cond, !served, nil
}

// applyOrDeleteVirtualService applies desired, or deletes the component's
// VirtualService when desired is nil.
func (r *ComponentReconciler) applyOrDeleteVirtualService(ctx context.Context, dcd *v1alpha1.DynamoComponentDeployment,
	desired *unstructured.Unstructured, changes *changeSet) error {
	gvk := render.VirtualServiceGVK
	return applyOrDeleteOnceServed(ctx, r.Client, r.Applier, r.watchOnceServed(gvk.GroupKind()), dcd, gvk,
		client.ObjectKey{Namespace: dcd.Namespace, Name: dcd.Name}, desired, changes)
}

// setVirtualServiceCondition records cond in st, or removes the condition
// when the component asks for no VirtualService.
func setVirtualServiceCondition(st *v1alpha1.DynamoComponentDeploymentStatus, cond *metav1.Condition) {
	if cond == nil {
		meta.RemoveStatusCondition(&st.Conditions, ConditionVirtualService)
		return
	}
	meta.SetStatusCondition(&st.Conditions, *cond)
}
