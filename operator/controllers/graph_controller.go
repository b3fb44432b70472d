package controllers

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/apply"
	"github.com/dynamoctl/dynamo-operator/operator/children"
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
	// Reader reads from the API server what the cache does not hold: claims
	// another operator made, which lack the label the cache selects on.
	Reader client.Reader
	// Renderer identifies this operator's rendering (RendererID); see
	// adoption.go for what it decides.
	Renderer string
	// indexed: Client reads from the manager's cache, which has the
	// field indexes (indexes.go).
	indexed  bool
	progress progressThrottle
	// written remembers our latest status write of each graph until the
	// cache shows it (statusWrites).
	written statusWrites
	// released remembers the graphs whose claims were looked at since this
	// process started, so the uncached look happens once per graph.
	released sync.Map // types.UID -> struct{}
	// onceServed watch the children whose API a cluster may lack (the
	// InferencePool), by group and kind.
	onceServed map[schema.GroupKind]*lazyWatch
	// inferencePoolAPI remembers whether the inference extension's
	// InferencePool API is served (inferencepool.go).
	inferencePoolAPI apiProbe
}

// SetupWithManager registers the controller. Changes of a graph's labels and
// annotations are reconciled as well as spec changes: they flow to children.
// Only namespaces the gate allows are reconciled; resync brings back those
// handed over by another operator.
func (r *GraphReconciler) SetupWithManager(mgr manager.Manager, workers int, gate *scope.Gate, resync *Resync) error {
	b := builder.ControllerManagedBy(mgr).
		For(&v1alpha1.DynamoGraphDeployment{}, builder.WithPredicates(specOrMetadataChanged())).
		Watches(&v1alpha1.DynamoComponent{}, handler.EnqueueRequestsFromMapFunc(r.graphsOfDynamoComponent))
	// Its components and discovery objects (the children table).
	c, err := ownChildren(b, children.OwnedByGraph).
		WatchesRawSource(resync.graphSource()).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		Build(owned{gate: gate, next: metrics.Instrument("DynamoGraphDeployment", r)})
	if err != nil {
		return err
	}
	// InferencePools are watched once their API is found (inferencepool.go).
	r.onceServed = watchesOnceServed(c, mgr.GetCache(), children.OwnedByGraph)
	return nil
}

// Reconcile brings one graph's children in line with its spec.
func (r *GraphReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	return quietWhenTerminating(r.reconcile(ctx, req))
}

// graphState is what one reconcile of a graph learns, step by step.
type graphState struct {
	req reconcile.Request
	dgd *v1alpha1.DynamoGraphDeployment
	// desired are the rendered components; toApply those to apply now,
	// held those kept as they are while the graph's image is built
	// (withGraphImage).
	desired, toApply, held []*v1alpha1.DynamoComponentDeployment
	// pending is the image build the graph waits for; nil when none.
	pending *imageWait
	// components are the graph's components as stored now.
	components []*v1alpha1.DynamoComponentDeployment
	// live are the graph's components before this reconcile applies any,
	// by service name.
	live map[string]*v1alpha1.DynamoComponentDeployment
	// restart is what spec.restart asks for now.
	restart restartPlan
	// adapters are the scaling adapters of the services that opt in, by
	// service.
	adapters map[string]*v1alpha1.DynamoGraphDeploymentScalingAdapter
	// inferencePool is the InferencePool condition (nil without an
	// endpoint picker); inferencePoolRecheck says to look for its API
	// again.
	inferencePool        *metav1.Condition
	inferencePoolRecheck bool
	changes              changeSet
}

func (r *GraphReconciler) reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	return runSteps(ctx, &graphState{req: req},
		r.loadGraph,
		r.renderComponents,
		r.planGraphRestart,
		r.ensureScalingAdapters,
		r.resolveGraphImage,
		r.applyGraphChildren,
		r.reportScalingAdapters,
		r.reportGraphStatus,
	)
}

// loadGraph reads the graph, fresh from the API server while the cache may
// not show our latest status write, and ends the reconcile of a graph gone
// or being deleted.
func (r *GraphReconciler) loadGraph(ctx context.Context, s *graphState) (reconcile.Result, bool, error) {
	dgd := &v1alpha1.DynamoGraphDeployment{}
	if err := r.Client.Get(ctx, s.req.NamespacedName, dgd); err != nil {
		if apierrors.IsNotFound(err) {
			r.progress.forget(s.req.NamespacedName)
		}
		return stop(reconcile.Result{}, client.IgnoreNotFound(err))
	}
	if r.Reader != nil && r.written.unseen(s.req.NamespacedName, dgd.ResourceVersion, r.Clock.Now()) {
		// The cache does not show our latest status write yet: compared
		// with the status before it, the graph's next one could look
		// written already and never be written (a graph left "waiting
		// for" a component that is Available). Read it from the API server.
		dgd = &v1alpha1.DynamoGraphDeployment{}
		if err := r.Reader.Get(ctx, s.req.NamespacedName, dgd); err != nil {
			return stop(reconcile.Result{}, client.IgnoreNotFound(err))
		}
	}
	// The patch leaves dgd as stored: the reconcile goes on with it.
	if _, err := dropDynamoFinalizer(ctx, r.Client, dgd); err != nil {
		return stop(reconcile.Result{}, err)
	}
	if !dgd.DeletionTimestamp.IsZero() {
		// Owner references let the garbage collector remove the components;
		// created claims have none and stay, on purpose.
		return stop(reconcile.Result{}, nil)
	}
	s.dgd = dgd
	return proceed()
}

// renderComponents renders the graph's components, under the names of the
// components that already run their services.
func (r *GraphReconciler) renderComponents(ctx context.Context, s *graphState) (reconcile.Result, bool, error) {
	desired, err := render.Components(s.dgd)
	if err != nil {
		return stop(reconcile.Result{}, r.fail(ctx, s.dgd, err))
	}
	live, err := r.takeExistingNames(ctx, s.dgd, desired)
	if err != nil {
		return stop(reconcile.Result{}, err)
	}
	s.desired, s.live = desired, live
	return proceed()
}

// planGraphRestart works out what spec.restart asks of the components now
// (restart.go).
func (r *GraphReconciler) planGraphRestart(_ context.Context, s *graphState) (reconcile.Result, bool, error) {
	s.restart = planRestart(s.dgd, s.live)
	if s.restart.status == nil && s.dgd.Spec.Restart == nil {
		s.restart.status = legacyRestart(s.dgd)
	}
	return proceed()
}

// resolveGraphImage makes the graph's DynamoComponent exist and puts its
// built image in the components, holding back those that wait for it.
func (r *GraphReconciler) resolveGraphImage(ctx context.Context, s *graphState) (reconcile.Result, bool, error) {
	if err := r.ensureDynamoComponent(ctx, s.dgd, &s.changes); err != nil {
		if errors.Is(err, errUserSpec) {
			return stop(reconcile.Result{}, r.fail(ctx, s.dgd, err))
		}
		return stop(reconcile.Result{}, err)
	}
	image, pending, err := r.graphImage(ctx, s.dgd)
	if err != nil {
		return stop(reconcile.Result{}, err)
	}
	if s.toApply, s.held, err = r.withGraphImage(ctx, image, pending, s.desired); err != nil {
		return stop(reconcile.Result{}, err)
	}
	s.pending = pending
	return proceed()
}

// applyGraphChildren applies the discovery objects and the components,
// creates and releases the claims, and deletes the components the graph no
// longer has.
func (r *GraphReconciler) applyGraphChildren(ctx context.Context, s *graphState) (reconcile.Result, bool, error) {
	dgd := s.dgd
	// The discovery ServiceAccount (and its rights) exist before any
	// component does: the components' pods name it, and the API server
	// refuses a pod whose ServiceAccount is missing, which the ReplicaSet
	// controller then retries with backoff (the graph said "cannot create
	// pods: ... forbidden: error looking up service account" meanwhile).
	var discovery changeSet
	if err := applyDiscovery(ctx, r.Client, r.Applier, dgd, render.GraphDiscoveryRBAC(dgd), &discovery); err != nil {
		return stop(reconcile.Result{}, err)
	}
	components, changes, err := r.applyComponents(ctx, s)
	s.components = append(components, s.held...)
	changes.add(s.changes)
	changes.add(discovery)
	s.changes = changes
	if err != nil {
		if isUserError(err) {
			return stop(reconcile.Result{}, r.fail(ctx, dgd, err))
		}
		return stop(reconcile.Result{}, err)
	}
	for _, f := range []func(context.Context, *v1alpha1.DynamoGraphDeployment, *changeSet) error{r.createClaims, r.releaseClaims} {
		if err := f(ctx, dgd, &s.changes); err != nil {
			return stop(reconcile.Result{}, err)
		}
	}
	if err := r.deleteRemovedComponents(ctx, dgd, s.desired, &s.changes); err != nil {
		return stop(reconcile.Result{}, err)
	}
	// After the components: the pool points at the picker's Service.
	if s.inferencePool, s.inferencePoolRecheck, err = r.applyInferencePool(ctx, dgd, s.desired, s.components, &s.changes); err != nil {
		return stop(reconcile.Result{}, err)
	}
	s.changes.emit(r.Recorder, dgd)
	logChanges(ctx, dgd, s.changes)
	return proceed()
}

// reportGraphStatus writes the graph's status: at once when it says
// something new (its state, readiness, spec, blockers, or which components
// it waits for), progress alone (replica counts) at most every
// progressInterval. A new graph reports what it waits for in the reconcile
// that created its components.
func (r *GraphReconciler) reportGraphStatus(ctx context.Context, s *graphState) (reconcile.Result, bool, error) {
	dgd := s.dgd
	now := r.Clock.Now()
	next := graphStatus(dgd, s.components, metav1.NewTime(now))
	next.Restart = s.restart.status
	next.RollingUpdate = rollingUpdateStatus(dgd, s.live, s.components, metav1.NewTime(now))
	setImageWait(&next, dgd, s.pending, metav1.NewTime(now))
	setInferencePoolCondition(&next, s.inferencePool)
	news := progressNews{blockers: componentBlockers(s.components), awaited: awaitedComponents(s.components)}
	if wait := r.progress.wait(s.req.NamespacedName, &dgd.Status, &next, news, now); wait > 0 {
		return stop(r.recheckAPIs(s, reconcile.Result{RequeueAfter: wait}), nil)
	}
	before := dgd.Status.State
	wrote, err := patchStatus(ctx, r.Client, dgd, func(g *v1alpha1.DynamoGraphDeployment) { g.Status = next })
	if wrote && err == nil {
		r.recordGraphWrite(ctx, s, before, next, news, now)
	}
	if !wrote && err == nil && s.changes.empty() {
		logNothingToDo(ctx, dgd)
	}
	if err != nil {
		return stop(s.changes.result(), err)
	}
	return stop(r.recheckAPIs(s, s.changes.result()), nil)
}

// recheckAPIs requeues a graph that waits for an API the cluster does not
// serve yet: discovery is not watchable, so it looks again.
func (r *GraphReconciler) recheckAPIs(s *graphState, res reconcile.Result) reconcile.Result {
	if s.inferencePoolRecheck {
		return soonest(res, gangAPIRecheck)
	}
	return res
}

// recordGraphWrite remembers a status write, until the cache shows it and
// for the progress throttle, and logs it with why.
func (r *GraphReconciler) recordGraphWrite(ctx context.Context, s *graphState, before v1alpha1.GraphState,
	next v1alpha1.DynamoGraphDeploymentStatus, news progressNews, now time.Time) {
	r.written.record(s.req.NamespacedName, s.dgd.ResourceVersion, now)
	r.progress.wrote(s.req.NamespacedName, news, now)
	if before != next.State {
		ctrl.LoggerFrom(ctx).Info("graph state changed", "graph", klog.KObj(s.dgd),
			"from", before, "to", next.State, "why", readyMessage(next.Conditions))
		return
	}
	// A write is logged even when the state stays (a condition such as
	// FieldsNotActedOn changed): every write says why.
	ctrl.LoggerFrom(ctx).V(1).Info("graph status written", "graph", klog.KObj(s.dgd),
		"state", next.State, "why", readyMessage(next.Conditions))
}

// applyComponents makes each component of s.toApply exist as rendered and
// returns them as the API server holds them now.
func (r *GraphReconciler) applyComponents(ctx context.Context, s *graphState) ([]*v1alpha1.DynamoComponentDeployment, changeSet, error) {
	var changes changeSet
	dgd := s.dgd
	out := make([]*v1alpha1.DynamoComponentDeployment, 0, len(s.toApply))
	hold := rollingHold(dgd, s.live)
	for _, dcd := range s.toApply {
		if err := controllerutil.SetControllerReference(dgd, dcd, r.Client.Scheme()); err != nil {
			return nil, changes, err
		}
		live, err := getOptional(ctx, r.Client, client.ObjectKeyFromObject(dcd), &v1alpha1.DynamoComponentDeployment{})
		if err != nil {
			return nil, changes, err
		}
		kept, err := r.prepareComponent(ctx, s, dcd, live, hold[dcd.Spec.ServiceName])
		if err != nil {
			return nil, changes, err
		}
		applyFn := r.Applier.Apply
		if kept {
			applyFn = r.Applier.ApplyKept
		}
		outcome, err := applyFn(ctx, dcd, asObject(live))
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

// prepareComponent readies a desired component for its apply: the content
// another renderer wrote kept, a spec change held back for the rolling
// update (held), the restart annotation, the record of who rendered it for
// which input, and the replicas a scaling adapter or whoever scaled it
// owns. It reports whether the content is kept.
func (r *GraphReconciler) prepareComponent(ctx context.Context, s *graphState, dcd, live *v1alpha1.DynamoComponentDeployment,
	held bool) (bool, error) {
	service := dcd.Spec.ServiceName
	input := serviceInput(s.dgd, service)
	kept := keepContent(asObject(live), r.Renderer, input)
	if kept {
		keepComponent(dcd, live)
	} else if held && live != nil {
		// Its spec change waits for the stage before it (rolling_update.go).
		input, kept = holdBack(dcd, live), true
	}
	// After keepComponent: a restart reaches kept content too.
	setRestartAt(dcd, s.restart.restartValue(service, s.live[service]))
	stamp(dcd, asObject(live), r.Renderer, input, kept)
	if a := s.adapters[service]; a != nil {
		if err := r.adapterReplicas(ctx, dcd, live, a); err != nil {
			return kept, err
		}
	} else if yieldReplicas(dcd, live, r.Applier.FieldOwner) {
		ctrl.LoggerFrom(ctx).V(2).Info("leaving the component's replicas to whoever scaled it",
			"component", klog.KObj(dcd), "replicas", live.Spec.Replicas)
	}
	return kept, nil
}

// takeExistingNames renames each desired component to the component that
// already runs its service, when one does under another name: Dynamo's
// operator names workers' components <graph>-<service>-<8-hex hash>. The
// existing component is adopted in place; a second one beside it would
// start a second workload holding the same GPUs. It returns the existing
// components by service name.
func (r *GraphReconciler) takeExistingNames(ctx context.Context, dgd *v1alpha1.DynamoGraphDeployment,
	desired []*v1alpha1.DynamoComponentDeployment) (map[string]*v1alpha1.DynamoComponentDeployment, error) {
	list, err := componentsOf(ctx, r.Client, r.indexed, dgd.Namespace, dgd.Name)
	if err != nil {
		return nil, err
	}
	existing := map[string]*v1alpha1.DynamoComponentDeployment{}
	for i := range list.Items {
		dcd := &list.Items[i]
		if metav1.IsControlledBy(dcd, dgd) && dcd.DeletionTimestamp.IsZero() && dcd.Spec.ServiceName != "" {
			// Our own name wins when both exist.
			if _, ok := existing[dcd.Spec.ServiceName]; !ok || dcd.Name == render.ComponentName(dgd.Name, dcd.Spec.ServiceName) {
				existing[dcd.Spec.ServiceName] = dcd
			}
		}
	}
	for _, dcd := range desired {
		if live, ok := existing[dcd.Spec.ServiceName]; ok && live.Name != dcd.Name {
			dcd.Name = live.Name
			dcd.Labels[render.LabelComponent] = live.Name
		}
	}
	return existing, nil
}

// releaseClaims takes the graph's owner reference off claims another
// operator created owned by it (Dynamo's does), and labels them as this
// operator labels the claims it keeps: model caches outlive the graph. The
// look is uncached (such claims lack the cache's label) and made once per
// graph per process.
func (r *GraphReconciler) releaseClaims(ctx context.Context, dgd *v1alpha1.DynamoGraphDeployment, changes *changeSet) error {
	if r.Reader == nil {
		return nil
	}
	if _, done := r.released.Load(dgd.UID); done {
		return nil
	}
	var claims corev1.PersistentVolumeClaimList
	if err := r.Reader.List(ctx, &claims, client.InNamespace(dgd.Namespace)); err != nil {
		return err
	}
	for i := range claims.Items {
		pvc := &claims.Items[i]
		if !metav1.IsControlledBy(pvc, dgd) {
			continue
		}
		before := pvc.DeepCopy()
		var refs []metav1.OwnerReference
		for _, ref := range pvc.OwnerReferences {
			if ref.UID != dgd.UID {
				refs = append(refs, ref)
			}
		}
		pvc.OwnerReferences = refs
		if pvc.Labels == nil {
			pvc.Labels = map[string]string{}
		}
		pvc.Labels[render.LabelPVCRetained] = "true"
		if err := r.Client.Patch(ctx, pvc, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}),
			client.FieldOwner(r.Applier.FieldOwner)); err != nil {
			return fmt.Errorf("releasing PersistentVolumeClaim %s from the graph: %w", pvc.Name, err)
		}
		ctrl.LoggerFrom(ctx).V(1).Info("claim released from the graph: it is kept when the graph is deleted",
			"claim", klog.KObj(pvc))
		changes.updated = append(changes.updated, "PersistentVolumeClaim/"+pvc.Name)
	}
	r.released.Store(dgd.UID, struct{}{})
	return nil
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
	list, err := componentsOf(ctx, r.Client, r.indexed, dgd.Namespace, dgd.Name)
	if err != nil {
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

// add appends o's changes to c's.
func (c *changeSet) add(o changeSet) {
	c.created = append(c.created, o.created...)
	c.updated = append(c.updated, o.updated...)
	c.deleted = append(c.deleted, o.deleted...)
	c.assumed = c.assumed || o.assumed
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
