package controllers

import (
	"context"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/apply"
	"github.com/dynamoctl/dynamo-operator/operator/children"
	"github.com/dynamoctl/dynamo-operator/operator/metrics"
	"github.com/dynamoctl/dynamo-operator/operator/render"
	"github.com/dynamoctl/dynamo-operator/operator/scope"
)

// ComponentReconciler turns a DynamoComponentDeployment into its workload,
// its Service, a headless model Service when it serves a model, and an
// Ingress when enabled, and reports whether the component is available.
type ComponentReconciler struct {
	Client   client.Client
	Applier  *apply.Applier
	Recorder events.EventRecorder
	Clock    clock.PassiveClock
	Render   render.Options
	// Reader reads from the API server what the cache does not hold:
	// workloads and Services another operator made lack the label the
	// cache selects on, and must be found before one is applied over them.
	Reader client.Reader
	// Renderer identifies this operator's rendering (RendererID); see
	// adoption.go for what it decides.
	Renderer string
	// indexed: Client reads from the manager's cache, which has the
	// field indexes (indexes.go).
	indexed bool

	// onceServed watch the children whose API a cluster may lack
	// (multinode.go, gang.go), by group and kind.
	onceServed map[schema.GroupKind]*lazyWatch
	// podGroupAPI remembers whether the PodGroup API is served (gang.go).
	podGroupAPI apiProbe
	// virtualServiceAPI remembers whether Istio's VirtualService API is
	// served (virtualservice.go).
	virtualServiceAPI apiProbe
	// written remembers this controller's latest status write of each
	// component until the cache shows it (statusWrites).
	written statusWrites
	// first holds back the first report of a rollout (firstReportDelay).
	first firstReports
}

// SetupWithManager registers the controller.
// Only namespaces the gate allows are reconciled; resync brings back those
// handed over by another operator.
func (r *ComponentReconciler) SetupWithManager(mgr manager.Manager, workers int, gate *scope.Gate, resync *Resync) error {
	b := builder.ControllerManagedBy(mgr).
		For(&v1alpha1.DynamoComponentDeployment{}, builder.WithPredicates(specOrMetadataChanged())).
		// A component's volumeMounts name its graph's spec.pvcs, which
		// live on the graph, not on the component.
		Watches(&v1alpha1.DynamoGraphDeployment{}, handler.EnqueueRequestsFromMapFunc(r.componentsOfGraph),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(podsToComponent)).
		Watches(&v1alpha1.DynamoComponent{}, handler.EnqueueRequestsFromMapFunc(r.componentsOfDynamoComponent))
	// Its workloads, Services, Ingresses, and the discovery objects of a
	// component that stands alone (the children table).
	c, err := ownChildren(b, children.OwnedByComponent).
		WatchesRawSource(resync.componentSource()).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		Build(owned{gate: gate, next: metrics.Instrument("DynamoComponentDeployment", r)})
	if err != nil {
		return err
	}
	// LeaderWorkerSets and PodGroups are watched once their API is found
	// (multinode.go, gang.go).
	r.onceServed = watchesOnceServed(c, mgr.GetCache(), children.OwnedByComponent)
	return nil
}

// Reconcile brings one component's children in line with its spec.
func (r *ComponentReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	return quietWhenTerminating(r.reconcile(ctx, req))
}

// componentState is what one reconcile of a component learns, step by step.
type componentState struct {
	req       reconcile.Request
	dcd       *v1alpha1.DynamoComponentDeployment
	graphPVCs []v1alpha1.GraphPVC
	// input is what the workload is rendered from (workloadInput).
	input string
	// deploy is the desired Deployment, liveDeploy the stored one (nil
	// when there is none).
	deploy, liveDeploy *appsv1.Deployment
	// pending is the WorkloadPending condition of a kept earlier multinode
	// Deployment, or of a kept Deployment without the engine features its
	// spec sets (keptWithoutEngineFeatures); nil otherwise.
	pending *metav1.Condition
	// kept: the workload's content is kept from liveDeploy (keepContent).
	kept bool
	// virtualService is the VirtualService condition (nil when not asked
	// for); virtualServiceRecheck says to look for its API again.
	virtualService        *metav1.Condition
	virtualServiceRecheck bool
	changes               changeSet
}

func (r *ComponentReconciler) reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	return runSteps(ctx, &componentState{req: req},
		r.loadComponent,
		r.resolveComponentImage,
		r.refuseForeignWorkload,
		r.desiredWorkload,
		r.keepLiveWorkload,
		r.applyComponentChildren,
		r.reportComponentStatus,
	)
}

// loadComponent reads the component, fresh from the API server while the
// cache may not show our latest status write, and ends the reconcile of a
// component gone or being deleted.
func (r *ComponentReconciler) loadComponent(ctx context.Context, s *componentState) (reconcile.Result, bool, error) {
	dcd := &v1alpha1.DynamoComponentDeployment{}
	if err := r.Client.Get(ctx, s.req.NamespacedName, dcd); err != nil {
		if apierrors.IsNotFound(err) {
			r.first.reported(s.req.NamespacedName)
		}
		return stop(reconcile.Result{}, client.IgnoreNotFound(err))
	}
	if r.Reader != nil && r.written.unseen(s.req.NamespacedName, dcd.ResourceVersion, r.Clock.Now()) {
		// The cache does not show our latest status write yet. A status
		// compared with the cached one could look written already and
		// never be written: a Deployment that caught up while the cache
		// still held the status before ours would leave the component
		// "not yet observed" for good. Read it from the API server.
		dcd = &v1alpha1.DynamoComponentDeployment{}
		if err := r.Reader.Get(ctx, s.req.NamespacedName, dcd); err != nil {
			return stop(reconcile.Result{}, client.IgnoreNotFound(err))
		}
	}
	if _, err := dropDynamoFinalizer(ctx, r.Client, dcd); err != nil {
		return stop(reconcile.Result{}, err)
	}
	if !dcd.DeletionTimestamp.IsZero() {
		return stop(reconcile.Result{}, nil)
	}
	s.dcd = dcd
	return proceed()
}

// resolveComponentImage puts the image its DynamoComponent built in the
// component's spec, or waits for the build.
func (r *ComponentReconciler) resolveComponentImage(ctx context.Context, s *componentState) (reconcile.Result, bool, error) {
	withImage, wait, err := r.withImage(ctx, s.dcd)
	if err != nil {
		return stop(reconcile.Result{}, err)
	}
	if wait != nil {
		return stop(reconcile.Result{}, r.waitForImage(ctx, s.dcd, wait))
	}
	s.dcd = withImage
	return proceed()
}

// refuseForeignWorkload reads the graph's claims, and refuses a component
// whose workload another operator made of a kind that cannot be adopted.
func (r *ComponentReconciler) refuseForeignWorkload(ctx context.Context, s *componentState) (reconcile.Result, bool, error) {
	graphPVCs, err := r.graphPVCs(ctx, s.dcd)
	if err != nil {
		return stop(reconcile.Result{}, err)
	}
	kind, err := r.foreignWorkload(ctx, s.dcd)
	if err != nil {
		return stop(reconcile.Result{}, err)
	}
	if kind != "" {
		// Rendering a Deployment beside another operator's workload would
		// run the service twice on the same GPUs.
		return stop(reconcile.Result{}, r.failWith(ctx, s.dcd, ReasonNotAdoptable, fmt.Errorf(
			"its %s %s was created by another operator and cannot be adopted in place; see docs/tasks/migration.md",
			kind, s.dcd.Status.Service.ComponentName)))
	}
	s.graphPVCs, s.input = graphPVCs, workloadInput(s.dcd, graphPVCs)
	return proceed()
}

// desiredWorkload renders the component's Deployment and reads the stored
// one. A multinode component runs as a LeaderWorkerSet (reconcileMultinode)
// unless the Deployment an earlier version rendered for it is kept.
func (r *ComponentReconciler) desiredWorkload(ctx context.Context, s *componentState) (reconcile.Result, bool, error) {
	var err error
	if !render.IsMultinode(s.dcd) {
		if s.deploy, err = render.Deployment(s.dcd, s.graphPVCs, r.Render); err != nil {
			return stop(reconcile.Result{}, r.fail(ctx, s.dcd, err))
		}
		if s.liveDeploy, err = lookup(ctx, r.Client, r.Reader, client.ObjectKeyFromObject(s.deploy), &appsv1.Deployment{}); err != nil {
			return stop(reconcile.Result{}, err)
		}
		return proceed()
	}
	if s.liveDeploy, err = r.previousMultinodeDeployment(ctx, s.dcd, s.input); err != nil {
		return stop(reconcile.Result{}, err)
	}
	if s.liveDeploy == nil {
		return stop(r.reconcileMultinode(ctx, s.dcd, s.graphPVCs))
	}
	// Our previous version's rendering, kept until the spec changes
	// (render/doc.go): see previousMultinodeDeployment.
	s.deploy, s.pending = keptMultinodeDeployment(s.dcd, s.liveDeploy, r.Clock.Now())
	return proceed()
}

// keepLiveWorkload keeps of the stored workload what is to stay: its pod
// template when another renderer wrote it for this spec, its selector
// always; and stamps the desired one with its renderer and input.
func (r *ComponentReconciler) keepLiveWorkload(ctx context.Context, s *componentState) (reconcile.Result, bool, error) {
	s.kept = keepContent(asObject(s.liveDeploy), r.Renderer, s.input)
	log := ctrl.LoggerFrom(ctx)
	switch {
	case s.pending != nil:
		log.V(2).Info("keeping the Deployment an earlier version rendered for this multinode service until its spec changes",
			"deployment", klog.KObj(s.liveDeploy), "renderer", s.liveDeploy.Annotations[AnnotationRenderer])
	case s.kept:
		keepWorkload(s.deploy, s.liveDeploy)
		s.pending = keptWithoutEngineFeatures(s.dcd, s.liveDeploy, r.Clock.Now())
		if s.liveDeploy.Annotations[AnnotationRenderedFor] == "" {
			log.Info("adopting a workload another operator rendered; its pod template is kept until the component's spec changes",
				"deployment", klog.KObj(s.liveDeploy), "renderer", s.liveDeploy.Annotations[AnnotationRenderer])
		} else {
			log.V(2).Info("keeping the pod template another operator version rendered for this spec",
				"deployment", klog.KObj(s.liveDeploy), "renderer", s.liveDeploy.Annotations[AnnotationRenderer])
		}
	case s.liveDeploy != nil:
		keepSelector(s.deploy, s.liveDeploy)
	}
	stamp(s.deploy, asObject(s.liveDeploy), r.Renderer, s.input, s.kept)
	return proceed()
}

// applyComponentChildren applies the discovery objects, the GPU memory
// service's claim template, the endpoint picker's ConfigMap, the workload, the Services and the Ingress,
// deleting those the spec no longer asks for.
func (r *ComponentReconciler) applyComponentChildren(ctx context.Context, s *componentState) (reconcile.Result, bool, error) {
	dcd, changes := s.dcd, &s.changes
	if err := applyDiscovery(ctx, r.Client, r.Applier, dcd, render.ComponentDiscoveryRBAC(dcd), changes); err != nil {
		return stop(reconcile.Result{}, err)
	}
	// The claim template and the picker's ConfigMap are what the pod
	// template names: while another renderer's template is kept, so is
	// what stands beside it (nothing new is created beside a kept workload).
	if !s.kept {
		if err := r.applyGMSClaimTemplate(ctx, dcd, changes); err != nil {
			return stop(reconcile.Result{}, err)
		}
		if err := r.applyEPPConfigMap(ctx, dcd, changes); err != nil {
			return stop(reconcile.Result{}, err)
		}
	}
	if err := r.applyChildOver(ctx, dcd, s.deploy, asObject(s.liveDeploy), s.kept, changes); err != nil {
		if isUserError(err) {
			return stop(reconcile.Result{}, r.fail(ctx, dcd, err))
		}
		return stop(reconcile.Result{}, err)
	}
	// The Services select the workload's pods by its own selector, which a
	// workload another operator made keeps.
	svc := render.Service(dcd)
	svc.Spec.Selector = s.deploy.Spec.Selector.MatchLabels
	if s.kept {
		svc.Spec.Ports = portsServed(svc.Spec.Ports, &s.deploy.Spec.Template.Spec)
	}
	if err := r.applyChild(ctx, dcd, svc, &corev1.Service{}, changes); err != nil {
		return stop(reconcile.Result{}, err)
	}
	modelSvc := render.ModelService(dcd)
	if modelSvc != nil {
		modelSvc.Spec.Selector = s.deploy.Spec.Selector.MatchLabels
	}
	if err := r.applyOrDelete(ctx, dcd, modelSvc, render.ModelServiceName(dcd.Name), &corev1.Service{}, changes); err != nil {
		return stop(reconcile.Result{}, err)
	}
	var err error
	if s.virtualService, s.virtualServiceRecheck, err = r.applyExposure(ctx, dcd, s.kept, changes); err != nil {
		return stop(reconcile.Result{}, err)
	}
	changes.emit(r.Recorder, dcd)
	logChanges(ctx, dcd, *changes)
	return proceed()
}

// reportComponentStatus writes the component's status, unless its first
// report of a rollout is held back (holdFirstReport).
func (r *ComponentReconciler) reportComponentStatus(ctx context.Context, s *componentState) (reconcile.Result, bool, error) {
	dcd := s.dcd
	why, started, notOverBefore, err := r.explain(ctx, s.deploy)
	if err != nil {
		return stop(reconcile.Result{}, err)
	}
	if deploymentAvailability(s.deploy).Status != metav1.ConditionTrue {
		why = r.topologyBlocker(ctx, dcd, why)
	}
	hadPending := meta.IsStatusConditionTrue(dcd.Status.Conditions, v1alpha1.ConditionWorkloadPending)
	now := r.Clock.Now()
	next := componentStatus(dcd, s.deploy, why, metav1.NewTime(now))
	setWorkloadPending(&next, s.pending, dcd.Generation, metav1.NewTime(now))
	setVirtualServiceCondition(&next, s.virtualService)
	if wait := r.holdFirstReport(s.req.NamespacedName, dcd, &next, started, notOverBefore, now); wait > 0 {
		ctrl.LoggerFrom(ctx).V(2).Info("rollout just started: its first status waits to see whether it is over at once",
			"component", klog.KObj(dcd), "for", wait)
		return stop(soonest(s.changes.result(), wait), nil)
	}
	wrote, err := patchStatus(ctx, r.Client, dcd, func(c *v1alpha1.DynamoComponentDeployment) { c.Status = next })
	if err == nil {
		r.recordComponentReport(s, wrote, now)
	}
	if err == nil && s.pending != nil && !hadPending {
		r.Recorder.Eventf(dcd, s.liveDeploy, corev1.EventTypeNormal, s.pending.Reason, "Upgrade", "%s", s.pending.Message)
	}
	res, err := afterComponentStatus(ctx, dcd, s.changes, wrote, err)
	if s.virtualServiceRecheck && err == nil {
		// Discovery is not watchable: look for the VirtualService API again.
		res = soonest(res, gangAPIRecheck)
	}
	return stop(res, err)
}

// recordComponentReport remembers a status report: the write, until the
// cache shows it, and that the component's first report is made.
func (r *ComponentReconciler) recordComponentReport(s *componentState, wrote bool, now time.Time) {
	if wrote {
		r.written.record(s.req.NamespacedName, s.dcd.ResourceVersion, now)
		if available, _ := componentCurrent(s.dcd); available {
			r.first.rolloutOver(now)
		}
	}
	r.first.reported(s.req.NamespacedName)
}

// afterComponentStatus ends a component's reconcile once its status was
// patched (wrote) or found unchanged, for either workload kind.
func afterComponentStatus(ctx context.Context, dcd *v1alpha1.DynamoComponentDeployment, changes changeSet, wrote bool, err error) (reconcile.Result, error) {
	if !wrote && err == nil && changes.empty() {
		logNothingToDo(ctx, dcd)
	}
	if res := changes.result(); err == nil && wrote && res.RequeueAfter == 0 {
		if available, _ := componentCurrent(dcd); !available {
			// A status still in progress is looked at again: the next
			// one is compared with the cache, which may not show this
			// write yet, and an equal-looking status would not be
			// written; our own status writes wake nothing (predicate).
			return reconcile.Result{RequeueAfter: statusRecheck}, nil
		}
	}
	return changes.result(), err
}

// explain reads the workload's pods from the cache, only when the component
// is not available, and says what blocks its rollout (nil when nothing
// does, or when all is well: then nothing is read), when its pods started
// and when its rollout can be over at the soonest (rolloutStarted).
func (r *ComponentReconciler) explain(ctx context.Context, deploy *appsv1.Deployment) (why *blocker, started, notOverBefore time.Time, err error) {
	if deploymentAvailability(deploy).Status == metav1.ConditionTrue || deploy.Spec.Selector == nil {
		return nil, started, notOverBefore, nil
	}
	var pods corev1.PodList
	if err := r.Client.List(ctx, &pods, append(podsOf(r.indexed, deploy.Spec.Selector.MatchLabels),
		client.InNamespace(deploy.Namespace))...); err != nil {
		return nil, started, notOverBefore, err
	}
	started, notOverBefore = rolloutStarted(deploy, pods.Items)
	return rolloutBlocker(deploy, pods.Items), started, notOverBefore, nil
}

// podsToComponent maps a pod that is not ready to its component, so that a
// pod turning unschedulable or crash-looping, which does not always change
// its Deployment's status, is explained. Ready pods change nothing the
// Deployment's status does not already say.
func podsToComponent(_ context.Context, obj client.Object) []reconcile.Request {
	pod, ok := obj.(*corev1.Pod)
	name := obj.GetLabels()[render.LabelComponent]
	if adopted := obj.GetLabels()[dynamoSelectorLabel]; adopted != "" {
		// Pods of a workload Dynamo's operator made carry the service's
		// name in LabelComponent, and the component's in its selector.
		name = adopted
	}
	if !ok || name == "" || podReady(pod) {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: pod.Namespace, Name: name}}}
}

// dynamoSelectorLabel selects the pods of workloads Dynamo's operator
// rendered; its value is the component's (and the workload's) name.
const dynamoSelectorLabel = "nvidia.com/selector"

// statusWrites remembers the resourceVersion of the latest status write of
// each component, for as long as the cache may lag behind it
// (apply.CacheLag): the cache is the truth again afterwards.
type statusWrites struct {
	mu sync.Mutex
	m  map[types.NamespacedName]statusWrite
}

type statusWrite struct {
	resourceVersion string
	at              time.Time
}

func (s *statusWrites) record(key types.NamespacedName, rv string, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[types.NamespacedName]statusWrite{}
	}
	s.m[key] = statusWrite{resourceVersion: rv, at: now}
}

// unseen reports whether the component read with resourceVersion cached
// may predate our latest status write of it: it is another version, read
// within apply.CacheLag of the write. Seen or aged writes are forgotten.
func (s *statusWrites) unseen(key types.NamespacedName, cached string, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, ok := s.m[key]
	if !ok {
		return false
	}
	if w.resourceVersion == cached || now.Sub(w.at) >= apply.CacheLag {
		delete(s.m, key)
		return false
	}
	return true
}

// statusRecheck is how soon a component whose status this controller just
// wrote as not yet available is reconciled again.
const statusRecheck = 2 * time.Second

// componentsOfGraph maps a graph to the components it owns.
func (r *ComponentReconciler) componentsOfGraph(ctx context.Context, obj client.Object) []reconcile.Request {
	list, err := componentsOf(ctx, r.Client, r.indexed, obj.GetNamespace(), obj.GetName())
	if err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		if metav1.IsControlledBy(&list.Items[i], obj) {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return reqs
}

// graphPVCs returns the claims of the graph that owns dcd, which its
// volumeMounts name; nil for a component without a graph.
func (r *ComponentReconciler) graphPVCs(ctx context.Context, dcd *v1alpha1.DynamoComponentDeployment) ([]v1alpha1.GraphPVC, error) {
	owner := metav1.GetControllerOf(dcd)
	if owner == nil || owner.Kind != "DynamoGraphDeployment" || owner.APIVersion != v1alpha1.GroupVersion.String() {
		return nil, nil
	}
	dgd, err := getOptional(ctx, r.Client, types.NamespacedName{Namespace: dcd.Namespace, Name: owner.Name}, &v1alpha1.DynamoGraphDeployment{})
	if err != nil || dgd == nil {
		return nil, err
	}
	return dgd.Spec.PVCs, nil
}

// applyChild applies desired, owned by dcd. On return desired holds the
// object as stored (also when nothing needed writing).
func (r *ComponentReconciler) applyChild(ctx context.Context, dcd *v1alpha1.DynamoComponentDeployment,
	desired, live client.Object, changes *changeSet) error {
	current, err := lookup(ctx, r.Client, r.Reader, client.ObjectKeyFromObject(desired), live)
	if err != nil {
		return err
	}
	return r.applyChildOver(ctx, dcd, desired, asObject(current), false, changes)
}

// applyChildOver is applyChild with the live object already read (nil when
// there is none). kept says desired's content was kept from current
// (keepContent): then only a missing field is a reason to write.
func (r *ComponentReconciler) applyChildOver(ctx context.Context, dcd *v1alpha1.DynamoComponentDeployment,
	desired, current client.Object, kept bool, changes *changeSet) error {
	applyFn := r.Applier.Apply
	if kept {
		applyFn = r.Applier.ApplyKept
	}
	return applyOwned(ctx, r.Client, dcd, desired, asObject(current), applyFn, changes)
}

// applyOrDelete applies desired when the spec asks for the object, and
// deletes the object this component owns under name when it no longer does.
func (r *ComponentReconciler) applyOrDelete(ctx context.Context, dcd *v1alpha1.DynamoComponentDeployment,
	desired client.Object, name string, live client.Object, changes *changeSet) error {
	if asObject(desired) != nil {
		return r.applyChild(ctx, dcd, desired, live, changes)
	}
	current, err := getOptional(ctx, r.Client, types.NamespacedName{Namespace: dcd.Namespace, Name: name}, live)
	if err != nil || asObject(current) == nil || !metav1.IsControlledBy(current, dcd) {
		return err
	}
	if err := r.Client.Delete(ctx, current); client.IgnoreNotFound(err) != nil {
		return err
	}
	r.Applier.Forget(current)
	gvk, _ := r.Client.GroupVersionKindFor(current)
	changes.deleted = append(changes.deleted, gvk.Kind+"/"+name)
	return nil
}

// fail records a spec the user must fix; see GraphReconciler.fail.
func (r *ComponentReconciler) fail(ctx context.Context, dcd *v1alpha1.DynamoComponentDeployment, cause error) error {
	return r.failWith(ctx, dcd, ReasonInvalidSpec, cause)
}

// failWith is fail with the condition's reason.
func (r *ComponentReconciler) failWith(ctx context.Context, dcd *v1alpha1.DynamoComponentDeployment, reason string, cause error) error {
	var changed bool
	_, err := patchStatus(ctx, r.Client, dcd, func(c *v1alpha1.DynamoComponentDeployment) {
		before := c.Status.DeepCopy()
		c.Status = invalidComponentStatus(c, reason, cause, metav1.NewTime(r.Clock.Now()))
		changed = !conditionsEqual(before.Conditions, c.Status.Conditions)
	})
	if changed {
		r.Recorder.Eventf(dcd, nil, corev1.EventTypeWarning, "Failed", "Reconcile", "%v", cause)
	}
	if err == nil {
		logRefused(ctx, dcd, cause, changed)
	}
	return err
}

// holdFirstReport says how long the status next may wait before it is
// written (firstReports.holdPast: for a component never reported on, while
// its pods have not started or behind a backlog of ours; firstReportDelay
// after they did, extended past notOverBefore): only while the
// stored status does not yet describe the component's current spec, claims
// no availability (Available for an older spec, with old pods serving, is
// withdrawn at once), and next merely reports a rollout under way, with
// nothing blocking it.
func (r *ComponentReconciler) holdFirstReport(key types.NamespacedName, dcd *v1alpha1.DynamoComponentDeployment,
	next *v1alpha1.DynamoComponentDeploymentStatus, started, notOverBefore, now time.Time) time.Duration {
	if dcd.Status.ObservedGeneration == dcd.Generation ||
		meta.IsStatusConditionTrue(dcd.Status.Conditions, v1alpha1.ConditionAvailable) {
		return 0
	}
	cond := meta.FindStatusCondition(next.Conditions, v1alpha1.ConditionAvailable)
	if cond == nil || cond.Status == metav1.ConditionTrue || cond.Reason != ReasonRolloutInProgress ||
		meta.FindStatusCondition(next.Conditions, v1alpha1.ConditionStalled) != nil {
		return 0
	}
	fresh := dcd.Status.ObservedGeneration == 0 && len(dcd.Status.Conditions) == 0
	return r.first.holdPast(key, dcd.Generation, now, started, notOverBefore, fresh)
}

// soonest is res, or a requeue after wait when that comes sooner.
func soonest(res reconcile.Result, wait time.Duration) reconcile.Result {
	if res.RequeueAfter == 0 || wait < res.RequeueAfter {
		res.RequeueAfter = wait
	}
	return res
}

// portsServed keeps of ports those a pod of spec serves: a port whose
// target is a name the pod's containers do not declare is left out. A
// kept workload (another renderer's pod template) is exposed as that
// renderer's pods serve it, not with the ports this renderer's would add.
func portsServed(ports []corev1.ServicePort, spec *corev1.PodSpec) []corev1.ServicePort {
	named := map[string]bool{}
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for _, c := range cs {
			for _, p := range c.Ports {
				if p.Name != "" {
					named[p.Name] = true
				}
			}
		}
	}
	var out []corev1.ServicePort
	for _, p := range ports {
		if p.TargetPort.Type == intstr.String && !named[p.TargetPort.StrVal] {
			continue
		}
		out = append(out, p)
	}
	return out
}
