package controllers

import (
	"context"
	"fmt"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/render"
)

// AdapterFieldOwner is the field manager that writes a component's
// spec.replicas from its service's DynamoGraphDeploymentScalingAdapter.
//
// A service that opts in (scalingAdapter) gets an adapter, created with the
// replicas the service runs then; from then on the adapter's spec.replicas,
// which HPA, KEDA, Dynamo's planner or kubectl scale write through its scale
// subresource, is the service's replicas. The operator carries it to the
// component under this manager of its own, and the graph applies the
// component without replicas (yieldReplicas sees another manager): the
// graph's spec is never written, so nothing a GitOps tool holds changes, and
// the graph's replicas for the service, which admission keeps as they were
// (rules.AdapterReplicas), never revert the scaler's. A write to the
// component's own scale subresource is put back to the adapter's value: the
// adapter owns the replicas. When the service opts out the adapter is
// deleted and the component keeps its replicas until the graph's change.
const AdapterFieldOwner = FieldOwner + "-scaling-adapter"

// ensureScalingAdapters creates the adapter of each service that opts in and
// deletes those of services that no longer do (or left the graph), and
// reads each adapter for applyComponents.
func (r *GraphReconciler) ensureScalingAdapters(ctx context.Context, s *graphState) (reconcile.Result, bool, error) {
	dgd := s.dgd
	list := &v1alpha1.DynamoGraphDeploymentScalingAdapterList{}
	if err := r.Client.List(ctx, list, client.InNamespace(dgd.Namespace),
		client.MatchingLabels{render.LabelGraphName: dgd.Name}); err != nil {
		return stop(reconcile.Result{}, err)
	}
	existing := map[string]*v1alpha1.DynamoGraphDeploymentScalingAdapter{}
	for i := range list.Items {
		if a := &list.Items[i]; metav1.IsControlledBy(a, dgd) {
			existing[a.Spec.DGDRef.ServiceName] = a
		}
	}
	s.adapters = map[string]*v1alpha1.DynamoGraphDeploymentScalingAdapter{}
	for _, service := range render.ScalingAdapterServices(dgd) {
		if a, ok := existing[service]; ok {
			s.adapters[service] = a
			delete(existing, service)
			continue
		}
		a, err := r.createScalingAdapter(ctx, s, service)
		if err != nil {
			return stop(reconcile.Result{}, err)
		}
		s.adapters[service] = a
	}
	for _, a := range existing {
		if err := r.Client.Delete(ctx, a); client.IgnoreNotFound(err) != nil {
			return stop(reconcile.Result{}, fmt.Errorf("deleting DynamoGraphDeploymentScalingAdapter %s: %w", a.Name, err))
		}
		s.changes.deleted = append(s.changes.deleted, "DynamoGraphDeploymentScalingAdapter/"+a.Name)
	}
	return proceed()
}

// createScalingAdapter creates the adapter of service, starting at the
// replicas its component runs (opting in changes nothing that runs), or
// the graph's when it has no component yet.
func (r *GraphReconciler) createScalingAdapter(ctx context.Context, s *graphState,
	service string) (*v1alpha1.DynamoGraphDeploymentScalingAdapter, error) {
	replicas := render.ServiceReplicas(s.dgd, service)
	if live := s.live[service]; live != nil && live.Spec.Replicas != nil {
		replicas = *live.Spec.Replicas
	}
	a := render.ScalingAdapter(s.dgd, service, replicas)
	if err := controllerutil.SetControllerReference(s.dgd, a, r.Client.Scheme()); err != nil {
		return nil, err
	}
	err := r.Client.Create(ctx, a, client.FieldOwner(FieldOwner))
	if apierrors.IsAlreadyExists(err) {
		// The cache did not show it yet: the stored one is the truth.
		err = r.Client.Get(ctx, client.ObjectKeyFromObject(a), a)
		return a, err
	}
	if err != nil {
		return nil, fmt.Errorf("creating DynamoGraphDeploymentScalingAdapter %s: %w", a.Name, err)
	}
	s.changes.created = append(s.changes.created, "DynamoGraphDeploymentScalingAdapter/"+a.Name)
	return a, nil
}

// adapterReplicas gives desired, the component of a service with an
// adapter, the adapter's replicas. A new component is created with them. An existing
// one gets them under AdapterFieldOwner (scaleToAdapter), and desired is
// applied without replicas. The graph's own replicas are still recorded
// (AnnotationGraphReplicas), so that after an opt-out the component keeps
// the adapter's last value until the graph's change (yieldReplicas).
func (r *GraphReconciler) adapterReplicas(ctx context.Context, desired, live *v1alpha1.DynamoComponentDeployment,
	a *v1alpha1.DynamoGraphDeploymentScalingAdapter) error {
	recordGraphReplicas(desired)
	want := a.Spec.Replicas
	if live == nil {
		desired.Spec.Replicas = &want
		return nil
	}
	desired.Spec.Replicas = nil
	return r.scaleToAdapter(ctx, live, a)
}

// scaleToAdapter sets live's spec.replicas to a's under AdapterFieldOwner,
// unless that manager holds it at that value already. Forced: a component
// scaled by other means is put back to its adapter's value.
func (r *GraphReconciler) scaleToAdapter(ctx context.Context, live *v1alpha1.DynamoComponentDeployment,
	a *v1alpha1.DynamoGraphDeploymentScalingAdapter) error {
	want := a.Spec.Replicas
	if live.Spec.Replicas != nil && *live.Spec.Replicas == want && managesReplicas(live, AdapterFieldOwner) {
		return nil
	}
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"replicas": int64(want)}}}
	u.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("DynamoComponentDeployment"))
	u.SetNamespace(live.Namespace)
	u.SetName(live.Name)
	if err := r.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u),
		client.FieldOwner(AdapterFieldOwner), client.ForceOwnership); err != nil {
		return fmt.Errorf("scaling DynamoComponentDeployment %s to its adapter's %d replicas: %w", live.Name, want, err)
	}
	from := "unset"
	if live.Spec.Replicas != nil {
		from = strconv.Itoa(int(*live.Spec.Replicas))
	}
	ctrl.LoggerFrom(ctx).Info("component scaled to its adapter's replicas", "component", klog.KObj(live),
		"adapter", klog.KObj(a), "from", from, "to", want)
	if live.Spec.Replicas != nil && *live.Spec.Replicas == want {
		return nil
	}
	now := metav1.NewTime(r.Clock.Now())
	_, err := patchStatus(ctx, r.Client, a, func(a *v1alpha1.DynamoGraphDeploymentScalingAdapter) {
		a.Status.LastScaleTime = &now
	})
	return client.IgnoreNotFound(err)
}

// managesReplicas says whether manager manages dcd's spec.replicas (the
// cache keeps exactly those managers of another name than FieldOwner).
func managesReplicas(dcd *v1alpha1.DynamoComponentDeployment, manager string) bool {
	for _, mf := range replicasManagers(dcd.ManagedFields, FieldOwner) {
		if mf.Manager == manager {
			return true
		}
	}
	return false
}

// reportScalingAdapters writes each adapter's status from its component as
// stored: the scale subresource's current replicas and selector, which an
// HPA scales from and reads pods' metrics by.
func (r *GraphReconciler) reportScalingAdapters(ctx context.Context, s *graphState) (reconcile.Result, bool, error) {
	for _, dcd := range s.components {
		a := s.adapters[dcd.Spec.ServiceName]
		if a == nil {
			continue
		}
		if _, err := patchStatus(ctx, r.Client, a, func(a *v1alpha1.DynamoGraphDeploymentScalingAdapter) {
			a.Status.Replicas = dcd.Status.Replicas
			a.Status.Selector = dcd.Status.Selector
		}); client.IgnoreNotFound(err) != nil {
			return stop(reconcile.Result{}, fmt.Errorf("writing the status of DynamoGraphDeploymentScalingAdapter %s: %w", a.Name, err))
		}
	}
	return proceed()
}
