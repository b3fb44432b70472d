package controllers

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/metrics"
	"github.com/dynamoctl/dynamo-operator/operator/render"
	"github.com/dynamoctl/dynamo-operator/operator/scope"
)

// ModelFinalizer holds a lora DynamoModel until its adapter is unloaded
// from every endpoint (or the unload timeout passes).
const ModelFinalizer = "nvidia.com/dynamo-model-unload"

// Model controller defaults; see ModelReconciler.
const (
	DefaultModelCheckInterval = 30 * time.Second
	DefaultModelUnloadTimeout = 2 * time.Minute
	DefaultModelCallsInFlight = 8
	modelNoEndpointsRecheck   = 0 // pods' events wake the model; nothing to poll
	modelUnloadRetryCeiling   = 5 * time.Second
	modelEventLoaded          = "Loaded"
	modelEventLoadFailed      = "LoadFailed"
	modelEventUnloaded        = "Unloaded"
	modelEventUnloadAbandoned = "UnloadAbandoned"
)

// ModelReconciler keeps a DynamoModel's adapter loaded on every Ready pod
// of its base model (pods labelled render.LabelBaseModelHash), reports the
// endpoints, and unloads the adapter when the model is deleted. base and
// adapter models are discovered and reported only: Dynamo's runtime has no
// call for them.
type ModelReconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
	Clock    clock.PassiveClock
	// HTTP reaches the workers' system servers; tests inject one that
	// dials in-process fake workers.
	HTTP *http.Client
	// CheckInterval is how often a worker that has the adapter is asked
	// (GET /v1/loras) whether it still has it.
	CheckInterval time.Duration
	// UnloadTimeout bounds how long a deleted model waits for its workers
	// to unload the adapter, from its deletionTimestamp.
	UnloadTimeout time.Duration
	// CallsInFlight bounds the concurrent calls of one reconcile.
	CallsInFlight int

	mu sync.Mutex
	// states holds, per model and pod name, what each endpoint has loaded
	// and when it is next due.
	states map[types.NamespacedName]map[string]*endpointState
}

// SetupWithManager registers the controller: models, and the pods of the
// base models they name.
func (r *ModelReconciler) SetupWithManager(mgr manager.Manager, workers int, gate *scope.Gate) error {
	if r.CheckInterval <= 0 {
		r.CheckInterval = DefaultModelCheckInterval
	}
	if r.UnloadTimeout <= 0 {
		r.UnloadTimeout = DefaultModelUnloadTimeout
	}
	if r.CallsInFlight <= 0 {
		r.CallsInFlight = DefaultModelCallsInFlight
	}
	if r.HTTP == nil {
		r.HTTP = &http.Client{}
	}
	r.states = map[types.NamespacedName]map[string]*endpointState{}
	hasModelHash := predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetLabels()[render.LabelBaseModelHash] != ""
	})
	return builder.ControllerManagedBy(mgr).
		Named("dynamomodel").
		For(&v1alpha1.DynamoModel{}, builder.WithPredicates(specOrMetadataChanged())).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(r.modelsOfPod), builder.WithPredicates(hasModelHash)).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		Complete(owned{gate: gate, next: metrics.Instrument("DynamoModel", r)})
}

// modelsOfPod maps a pod to the models of its namespace whose base model
// hashes to the pod's label.
func (r *ModelReconciler) modelsOfPod(ctx context.Context, obj client.Object) []reconcile.Request {
	hash := obj.GetLabels()[render.LabelBaseModelHash]
	var list v1alpha1.DynamoModelList
	if err := r.Client.List(ctx, &list, client.InNamespace(obj.GetNamespace())); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing models for a pod", "pod", klog.KObj(obj))
		return nil
	}
	var out []reconcile.Request
	for _, m := range list.Items {
		if render.BaseModelHash(m.Spec.BaseModelName) == hash {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&m)})
		}
	}
	return out
}

// Reconcile loads, checks or unloads the model's adapter where due.
func (r *ModelReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	return quietWhenTerminating(r.reconcile(ctx, req))
}

// modelState is what one reconcile of a model learns, step by step.
type modelState struct {
	req reconcile.Request
	m   *v1alpha1.DynamoModel
	// lora: the model is a LoRA adapter the workers load.
	lora bool
}

func (r *ModelReconciler) reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	return runSteps(ctx, &modelState{req: req},
		r.loadModel,
		r.keepUnloadFinalizer,
		r.loadAdapters,
	)
}

// loadModel reads the model, forgets one gone, and unloads a deleted one.
func (r *ModelReconciler) loadModel(ctx context.Context, s *modelState) (reconcile.Result, bool, error) {
	m := &v1alpha1.DynamoModel{}
	if err := r.Client.Get(ctx, s.req.NamespacedName, m); err != nil {
		if client.IgnoreNotFound(err) == nil {
			r.forget(s.req.NamespacedName)
		}
		return stop(reconcile.Result{}, client.IgnoreNotFound(err))
	}
	if !m.DeletionTimestamp.IsZero() {
		return stop(r.unload(ctx, m))
	}
	s.m, s.lora = m, m.Spec.ModelType == v1alpha1.ModelTypeLoRA
	return proceed()
}

// keepUnloadFinalizer makes a LoRA model carry the finalizer its unload
// needs, and another type not.
func (r *ModelReconciler) keepUnloadFinalizer(ctx context.Context, s *modelState) (reconcile.Result, bool, error) {
	m := s.m
	if s.lora && !controllerutil.ContainsFinalizer(m, ModelFinalizer) {
		patch := client.MergeFromWithOptions(m.DeepCopy(), client.MergeFromWithOptimisticLock{})
		controllerutil.AddFinalizer(m, ModelFinalizer)
		if err := r.Client.Patch(ctx, m, patch, client.FieldOwner(FieldOwner)); err != nil {
			return stop(reconcile.Result{}, err)
		}
		ctrl.LoggerFrom(ctx).V(levelChild).Info("finalizer added: the adapter is unloaded from every worker before the model goes",
			"model", klog.KObj(m))
	}
	if !s.lora && controllerutil.ContainsFinalizer(m, ModelFinalizer) {
		// The type changed from lora: nothing to unload on deletion (the
		// adapter stays until the workers restart; the user changed the type).
		patch := client.MergeFromWithOptions(m.DeepCopy(), client.MergeFromWithOptimisticLock{})
		controllerutil.RemoveFinalizer(m, ModelFinalizer)
		if err := r.Client.Patch(ctx, m, patch, client.FieldOwner(FieldOwner)); err != nil {
			return stop(reconcile.Result{}, err)
		}
	}
	return proceed()
}

// loadAdapters loads a LoRA model's adapter on the serving pods where it is
// due, and writes the model's status.
func (r *ModelReconciler) loadAdapters(ctx context.Context, s *modelState) (reconcile.Result, bool, error) {
	m := s.m
	pods, err := r.servingPods(ctx, m)
	if err != nil {
		return stop(reconcile.Result{}, err)
	}
	states := r.statesOf(s.req.NamespacedName, pods)
	var requeue time.Duration
	if s.lora {
		requeue = r.loadWhereDue(ctx, m, pods, states)
	}
	now := r.Clock.Now()
	before := m.Status.DeepCopy()
	wrote, err := patchStatus(ctx, r.Client, m, func(m *v1alpha1.DynamoModel) {
		m.Status = modelStatus(m, pods, states, metav1.NewTime(now))
	})
	if err != nil {
		return stop(reconcile.Result{}, err)
	}
	r.reportChanges(ctx, m, before, wrote)
	return stop(reconcile.Result{RequeueAfter: requeue}, nil)
}

// servingPods lists the model's endpoints from the cache.
func (r *ModelReconciler) servingPods(ctx context.Context, m *v1alpha1.DynamoModel) ([]servingPod, error) {
	var pods corev1.PodList
	if err := r.Client.List(ctx, &pods, client.InNamespace(m.Namespace),
		client.MatchingLabels{render.LabelBaseModelHash: render.BaseModelHash(m.Spec.BaseModelName)}); err != nil {
		return nil, fmt.Errorf("listing the pods of base model %s: %w", m.Spec.BaseModelName, err)
	}
	return servingPods(pods.Items), nil
}

// statesOf returns the model's endpoint states, one per serving pod, each
// brought in line with its pod; states of pods that no longer serve go.
func (r *ModelReconciler) statesOf(key types.NamespacedName, pods []servingPod) map[string]*endpointState {
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.states[key]
	states := make(map[string]*endpointState, len(pods))
	for _, p := range pods {
		s := old[p.Name]
		if s == nil {
			s = &endpointState{uid: p.UID, restarts: p.Restarts}
		}
		s.observe(p)
		states[p.Name] = s
	}
	r.states[key] = states
	return states
}

func (r *ModelReconciler) forget(key types.NamespacedName) {
	r.mu.Lock()
	delete(r.states, key)
	r.mu.Unlock()
}

// loadWhereDue calls every endpoint that is due, concurrently and bounded,
// and returns how soon the next one is due (0: none).
func (r *ModelReconciler) loadWhereDue(ctx context.Context, m *v1alpha1.DynamoModel, pods []servingPod, states map[string]*endpointState) time.Duration {
	want := loraSpecOf(m)
	api := loraAPI{http: r.HTTP}
	now := r.Clock.Now()
	log := ctrl.LoggerFrom(ctx)
	var wg sync.WaitGroup
	sem := make(chan struct{}, r.CallsInFlight)
	for _, p := range pods {
		s := states[p.Name]
		if !s.due(want, now, r.CheckInterval) {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			hadIt := s.loaded != nil && *s.loaded == want
			prevErr := s.lastErr
			loaded, err := api.ensure(ctx, p.Address, want)
			done := r.Clock.Now()
			if err != nil {
				s.failed(err, done)
				if s.lastErr != prevErr {
					log.Info("loading the adapter failed; retried with backoff", "model", klog.KObj(m),
						"pod", klog.KRef(m.Namespace, p.Name), "address", p.Address, "error", s.lastErr)
					r.Recorder.Eventf(m, nil, corev1.EventTypeWarning, modelEventLoadFailed, "Load",
						"adapter %s on pod %s (%s): %s", want.Name, p.Name, p.Address, s.lastErr)
				}
				return
			}
			s.succeeded(want, done)
			if loaded || !hadIt {
				why := "new endpoint"
				if hadIt {
					why = "the worker had lost it"
				}
				if loaded {
					log.V(levelChild).Info("adapter loaded", "model", klog.KObj(m), "pod", klog.KRef(m.Namespace, p.Name), "why", why)
					r.Recorder.Eventf(m, nil, corev1.EventTypeNormal, modelEventLoaded, "Load",
						"adapter %s loaded on pod %s (%s): %s", want.Name, p.Name, p.Address, why)
				}
			}
		}()
	}
	wg.Wait()
	var next time.Time
	for _, p := range pods {
		if t := states[p.Name].next(want, r.CheckInterval); next.IsZero() || t.Before(next) {
			next = t
		}
	}
	if next.IsZero() {
		return modelNoEndpointsRecheck
	}
	// A due time already passed (a failure with no backoff left) still
	// waits a moment: the queue's own rate limit is not for this.
	return max(next.Sub(r.Clock.Now()), 100*time.Millisecond)
}

// reportChanges logs and records changes of the Ready condition only: a
// reconcile that changed nothing, or only re-confirmed, says nothing.
func (r *ModelReconciler) reportChanges(ctx context.Context, m *v1alpha1.DynamoModel, before *v1alpha1.DynamoModelStatus, wrote bool) {
	log := ctrl.LoggerFrom(ctx)
	if !wrote {
		log.V(levelNothing).Info("nothing to do", "model", klog.KObj(m))
		return
	}
	was := meta.FindStatusCondition(before.Conditions, v1alpha1.ConditionReady)
	now := meta.FindStatusCondition(m.Status.Conditions, v1alpha1.ConditionReady)
	if now == nil || (was != nil && was.Status == now.Status && was.Reason == now.Reason) {
		return
	}
	log.Info("model readiness changed", "model", klog.KObj(m), "ready", now.Status, "reason", now.Reason, "message", now.Message)
	kind := corev1.EventTypeNormal
	if now.Reason == ReasonModelLoadFailed {
		kind = corev1.EventTypeWarning
	}
	r.Recorder.Eventf(m, nil, kind, now.Reason, "Reconcile", "%s", now.Message)
}

// unload DELETEs the adapter from every pod of the base model that has an
// address, retrying failures with backoff until UnloadTimeout after the
// deletion began; then it lets the model go, with an event naming the
// endpoints that may keep the adapter.
func (r *ModelReconciler) unload(ctx context.Context, m *v1alpha1.DynamoModel) (reconcile.Result, error) {
	key := client.ObjectKeyFromObject(m)
	if !controllerutil.ContainsFinalizer(m, ModelFinalizer) {
		r.forget(key)
		return reconcile.Result{}, nil
	}
	var pods corev1.PodList
	if err := r.Client.List(ctx, &pods, client.InNamespace(m.Namespace),
		client.MatchingLabels{render.LabelBaseModelHash: render.BaseModelHash(m.Spec.BaseModelName)}); err != nil {
		return reconcile.Result{}, err
	}
	states := r.modelStates(key)
	failing := r.unloadFromWorkers(ctx, m, pods.Items, states)
	deadline := m.DeletionTimestamp.Add(r.UnloadTimeout)
	if len(failing) > 0 && r.Clock.Now().Before(deadline) {
		return reconcile.Result{RequeueAfter: r.nextUnloadRetry(states, deadline)}, nil
	}
	r.reportUnload(ctx, m, failing)
	patch := client.MergeFromWithOptions(m.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(m, ModelFinalizer)
	if err := r.Client.Patch(ctx, m, patch, client.FieldOwner(FieldOwner)); client.IgnoreNotFound(err) != nil {
		return reconcile.Result{}, err
	}
	r.forget(key)
	return reconcile.Result{}, nil
}

// modelStates is what the controller remembers of each endpoint of the
// model key, made empty the first time.
func (r *ModelReconciler) modelStates(key client.ObjectKey) map[string]*endpointState {
	r.mu.Lock()
	defer r.mu.Unlock()
	states := r.states[key]
	if states == nil {
		states = map[string]*endpointState{}
		r.states[key] = states
	}
	return states
}

// unloadFromWorkers unloads m's adapter from each running pod it was not
// unloaded from yet, at most CallsInFlight at a time, and returns the pods
// it could not be unloaded from (those waiting for their retry included).
func (r *ModelReconciler) unloadFromWorkers(ctx context.Context, m *v1alpha1.DynamoModel, pods []corev1.Pod,
	states map[string]*endpointState) []string {
	log := ctrl.LoggerFrom(ctx)
	api := loraAPI{http: r.HTTP}
	now := r.Clock.Now()
	var mu sync.Mutex
	var failing []string
	fail := func(p *corev1.Pod, addr string, s *endpointState) {
		mu.Lock()
		failing = append(failing, fmt.Sprintf("%s (%s): %s", p.Name, addr, s.lastErr))
		mu.Unlock()
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, r.CallsInFlight)
	for i := range pods {
		p := &pods[i]
		if p.Status.PodIP == "" || p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
			continue // nothing runs there to unload from
		}
		s := states["unload/"+p.Name]
		if s == nil {
			s = &endpointState{}
			states["unload/"+p.Name] = s
		}
		if s.loaded != nil { // unloaded already
			continue
		}
		addr := systemAddress(p)
		if now.Before(s.retryAt) {
			fail(p, addr, s)
			continue
		}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			if err := api.unload(ctx, addr, m.Spec.ModelName); err != nil {
				s.failed(err, r.Clock.Now())
				s.retryAt = now.Add(min(loadBackoff(s.failures), modelUnloadRetryCeiling))
				fail(p, addr, s)
				return
			}
			s.succeeded(loraSpec{}, r.Clock.Now())
			log.V(levelChild).Info("adapter unloaded", "model", klog.KObj(m), "pod", klog.KObj(p))
		})
	}
	wg.Wait()
	return failing
}

// nextUnloadRetry is how soon the unload is tried again: at the soonest
// retry of an endpoint not unloaded yet, by the deadline at the latest.
func (r *ModelReconciler) nextUnloadRetry(states map[string]*endpointState, deadline time.Time) time.Duration {
	var next time.Time
	for _, s := range states {
		if s.loaded == nil && (next.IsZero() || s.retryAt.Before(next)) {
			next = s.retryAt
		}
	}
	return max(min(next.Sub(r.Clock.Now()), deadline.Sub(r.Clock.Now())), 100*time.Millisecond)
}

// reportUnload says the adapter was unloaded from every worker, or, past
// the unload timeout, from which workers it was not.
func (r *ModelReconciler) reportUnload(ctx context.Context, m *v1alpha1.DynamoModel, failing []string) {
	if len(failing) == 0 {
		r.Recorder.Eventf(m, nil, corev1.EventTypeNormal, modelEventUnloaded, "Unload",
			"adapter %s unloaded from every worker", m.Spec.ModelName)
		return
	}
	ctrl.LoggerFrom(ctx).Info("the adapter could not be unloaded from every worker within the unload timeout; letting the model go",
		"model", klog.KObj(m), "timeout", r.UnloadTimeout, "failing", strings.Join(failing, "; "))
	r.Recorder.Eventf(m, nil, corev1.EventTypeWarning, modelEventUnloadAbandoned, "Unload",
		"adapter %s not unloaded within %s from: %s", m.Spec.ModelName, r.UnloadTimeout, strings.Join(failing, "; "))
}
