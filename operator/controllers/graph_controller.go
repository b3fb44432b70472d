package controllers

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/apply"
	"github.com/dynamoctl/dynamo-operator/operator/metrics"
	"github.com/dynamoctl/dynamo-operator/operator/render"
	"github.com/dynamoctl/dynamo-operator/operator/scope"
)

// GraphReconciler turns a DynamoGraphDeployment into one
// DynamoComponentDeployment per service, creates the claims it asks for and
// reports the graph's state.
type GraphReconciler struct {
	Client   client.Client
	Applier  *apply.Applier
	Recorder events.EventRecorder
	Clock    clock.PassiveClock

	progress progressThrottle
}

// SetupWithManager registers the controller. Changes of a graph's labels and
// annotations are reconciled as well as spec changes: they flow to children.
// Only namespaces the gate allows are reconciled; resync brings back those
// handed over by another operator.
func (r *GraphReconciler) SetupWithManager(mgr manager.Manager, workers int, gate *scope.Gate, resync *Resync) error {
	return builder.ControllerManagedBy(mgr).
		For(&v1alpha1.DynamoGraphDeployment{}, builder.WithPredicates(specOrMetadataChanged())).
		Owns(&v1alpha1.DynamoComponentDeployment{}).
		WatchesRawSource(resync.graphSource()).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		Complete(owned{gate: gate, next: metrics.Instrument("DynamoGraphDeployment", r)})
}

// Reconcile brings one graph's children in line with its spec.
func (r *GraphReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	return quietWhenTerminating(r.reconcile(ctx, req))
}

func (r *GraphReconciler) reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	dgd := &v1alpha1.DynamoGraphDeployment{}
	if err := r.Client.Get(ctx, req.NamespacedName, dgd); err != nil {
		if apierrors.IsNotFound(err) {
			r.progress.forget(req.NamespacedName)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !dgd.DeletionTimestamp.IsZero() {
		// Owner references let the garbage collector remove the components;
		// created claims have none and stay, on purpose.
		return reconcile.Result{}, nil
	}

	desired, err := render.Components(dgd)
	if err != nil {
		return reconcile.Result{}, r.fail(ctx, dgd, err)
	}
	components, changes, err := r.applyComponents(ctx, dgd, desired)
	if err != nil {
		if isUserError(err) {
			return reconcile.Result{}, r.fail(ctx, dgd, err)
		}
		return reconcile.Result{}, err
	}
	if err := r.createClaims(ctx, dgd, &changes); err != nil {
		return reconcile.Result{}, err
	}
	if err := r.deleteRemovedComponents(ctx, dgd, desired, &changes); err != nil {
		return reconcile.Result{}, err
	}
	changes.emit(r.Recorder, dgd)
	logChanges(ctx, dgd, changes)

	now := r.Clock.Now()
	next := graphStatus(dgd, components, metav1.NewTime(now))
	if wait := r.progress.wait(req.NamespacedName, &dgd.Status, &next, now); wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	before := dgd.Status.State
	wrote, err := patchStatus(ctx, r.Client, dgd, func(g *v1alpha1.DynamoGraphDeployment) { g.Status = next })
	if wrote && err == nil {
		r.progress.wrote(req.NamespacedName, now)
		if before != next.State {
			ctrl.LoggerFrom(ctx).Info("graph state changed", "graph", klog.KObj(dgd),
				"from", before, "to", next.State, "why", readyMessage(next.Conditions))
		}
	}
	if !wrote && err == nil && changes.empty() {
		logNothingToDo(ctx, dgd)
	}
	return changes.result(), err
}

// applyComponents makes each desired component exist as rendered and
// returns them as the API server holds them now.
func (r *GraphReconciler) applyComponents(ctx context.Context, dgd *v1alpha1.DynamoGraphDeployment,
	desired []*v1alpha1.DynamoComponentDeployment) ([]*v1alpha1.DynamoComponentDeployment, changeSet, error) {
	var changes changeSet
	out := make([]*v1alpha1.DynamoComponentDeployment, 0, len(desired))
	for _, dcd := range desired {
		if err := controllerutil.SetControllerReference(dgd, dcd, r.Client.Scheme()); err != nil {
			return nil, changes, err
		}
		live, err := getOptional(ctx, r.Client, client.ObjectKeyFromObject(dcd), &v1alpha1.DynamoComponentDeployment{})
		if err != nil {
			return nil, changes, err
		}
		outcome, err := r.Applier.Apply(ctx, dcd, asObject(live))
		if err != nil {
			return nil, changes, fmt.Errorf("applying DynamoComponentDeployment %s: %w", dcd.Name, err)
		}
		switch {
		case outcome == apply.Assumed:
			changes.assumed = true
		case outcome == apply.Unchanged:
		case live == nil:
			changes.created = append(changes.created, "DynamoComponentDeployment/"+dcd.Name)
		default:
			changes.updated = append(changes.updated, "DynamoComponentDeployment/"+dcd.Name)
		}
		out = append(out, dcd)
	}
	return out, changes, nil
}

// createClaims creates the claims the graph asks for, once. They carry no
// owner reference so they survive the graph: model caches are expensive.
func (r *GraphReconciler) createClaims(ctx context.Context, dgd *v1alpha1.DynamoGraphDeployment, changes *changeSet) error {
	for _, pvc := range render.PVCs(dgd) {
		err := r.Client.Get(ctx, client.ObjectKeyFromObject(pvc), &corev1.PersistentVolumeClaim{})
		if !apierrors.IsNotFound(err) {
			if err != nil {
				return err
			}
			continue
		}
		if err := r.Client.Create(ctx, pvc, client.FieldOwner(r.Applier.FieldOwner)); err != nil {
			if apierrors.IsAlreadyExists(err) {
				continue
			}
			return fmt.Errorf("creating PersistentVolumeClaim %s: %w", pvc.Name, err)
		}
		changes.created = append(changes.created, "PersistentVolumeClaim/"+pvc.Name)
	}
	return nil
}

// deleteRemovedComponents deletes the components of services no longer in
// the graph; their workloads go with them through owner references.
func (r *GraphReconciler) deleteRemovedComponents(ctx context.Context, dgd *v1alpha1.DynamoGraphDeployment,
	desired []*v1alpha1.DynamoComponentDeployment, changes *changeSet) error {
	keep := make(map[string]bool, len(desired))
	for _, dcd := range desired {
		keep[dcd.Name] = true
	}
	var list v1alpha1.DynamoComponentDeploymentList
	if err := r.Client.List(ctx, &list, client.InNamespace(dgd.Namespace),
		client.MatchingLabels{render.LabelGraphName: dgd.Name}); err != nil {
		return err
	}
	for i := range list.Items {
		dcd := &list.Items[i]
		if keep[dcd.Name] || !metav1.IsControlledBy(dcd, dgd) || !dcd.DeletionTimestamp.IsZero() {
			continue
		}
		if err := r.Client.Delete(ctx, dcd, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting DynamoComponentDeployment %s of a removed service: %w", dcd.Name, err)
		}
		r.Applier.Forget(dcd)
		changes.deleted = append(changes.deleted, "DynamoComponentDeployment/"+dcd.Name)
	}
	return nil
}

// fail records a spec the user must fix. It is not returned as an error:
// retrying cannot help until the spec changes, which triggers a reconcile.
func (r *GraphReconciler) fail(ctx context.Context, dgd *v1alpha1.DynamoGraphDeployment, cause error) error {
	var changed bool
	_, err := patchStatus(ctx, r.Client, dgd, func(g *v1alpha1.DynamoGraphDeployment) {
		before := g.Status.DeepCopy()
		g.Status = invalidGraphStatus(g, cause, metav1.NewTime(r.Clock.Now()))
		changed = !conditionsEqual(before.Conditions, g.Status.Conditions)
	})
	if changed {
		r.Recorder.Eventf(dgd, nil, corev1.EventTypeWarning, "Failed", "Reconcile", "%v", cause)
	}
	if err == nil {
		logRefused(ctx, dgd, cause, changed)
	}
	return err
}

// changeSet collects what one reconcile changed, for one event per kind of
// change rather than one per object.
type changeSet struct {
	created, updated, deleted []string
	// assumed is set when a child was taken to be as this operator wrote it
	// moments ago, before the cache showed it; a later look confirms it.
	assumed bool
}

func (c changeSet) result() reconcile.Result {
	if c.assumed {
		return reconcile.Result{RequeueAfter: apply.CacheLag}
	}
	return reconcile.Result{}
}

func (c changeSet) emit(rec events.EventRecorder, obj client.Object) {
	for _, e := range []struct {
		reason, action string
		names          []string
	}{{"Created", "Create", c.created}, {"Updated", "Update", c.updated}, {"Deleted", "Delete", c.deleted}} {
		if len(e.names) == 0 {
			continue
		}
		sort.Strings(e.names)
		rec.Eventf(obj, nil, corev1.EventTypeNormal, e.reason, e.action, "%s %s", e.reason, strings.Join(e.names, ", "))
	}
}
