package testenv

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// StartDeploymentDriver stands in for the Deployment controller and the
// kubelets that envtest lacks: it moves every Deployment's status the way
// a real rollout does, one step per stepDelay. A new Deployment becomes
// fully available after one step. A changed pod template first shows the
// new generation observed with no replica updated and a surge replica (old
// pods still serving), then one more replica updated per step, then the
// old replicas gone. A replica change converges in one step.
// Pods stand for the kubelets' verdicts: envtest runs none, so a test
// creates a pod matching a Deployment's selector with the status a kubelet
// or the scheduler would report; while such a pod is not ready, that many
// replicas of the Deployment are unavailable (the rest of its status moves
// as above). Nodes stand for the scheduler's verdict on node labels: a pod
// template whose required node affinity asks for labels that no Node
// carries (Exists), in every term, has none of its replicas available, as
// its pods would all wait unscheduled; a Node joining with them lets the
// rollout finish. The driver stops when ctx ends.
func (e *Env) StartDeploymentDriver(ctx context.Context, stepDelay time.Duration) error {
	mgr, err := manager.New(e.Config, manager.Options{
		Scheme:                 e.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		return err
	}
	d := &deploymentDriver{client: mgr.GetClient(), step: stepDelay}
	// As many workers as the Deployment controller runs by default, and a
	// few more for the kubelets.
	if err := builder.ControllerManagedBy(mgr).Named("test-deployment-driver").
		WithOptions(controller.Options{MaxConcurrentReconciles: 16, SkipNameValidation: ptr.To(true)}).
		For(&appsv1.Deployment{}).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(d.deploymentsOfPod)).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(d.allDeployments)).
		Complete(d); err != nil {
		return err
	}
	go func() {
		if err := mgr.Start(ctx); err != nil {
			fmt.Printf("testenv: deployment driver stopped: %v\n", err)
		}
	}()
	return nil
}

type deploymentDriver struct {
	client client.Client
	step   time.Duration
	// templates remembers the pod template each Deployment last rolled out,
	// as the Deployment controller remembers it in ReplicaSets.
	templates sync.Map // UID -> template hash
	// stepped remembers when each Deployment last moved, so that the
	// driver's own status writes, which trigger it again at once, do not
	// rush a rollout through.
	stepped sync.Map // UID -> time.Time
}

func (d *deploymentDriver) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	deploy := &appsv1.Deployment{}
	if err := d.client.Get(ctx, req.NamespacedName, deploy); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !deploy.DeletionTimestamp.IsZero() {
		d.templates.Delete(deploy.UID)
		d.stepped.Delete(deploy.UID)
		return reconcile.Result{}, nil
	}
	if last, ok := d.stepped.Load(deploy.UID); ok && deploy.Status.ObservedGeneration == deploy.Generation {
		if wait := d.step - time.Since(last.(time.Time)); wait > 0 {
			return reconcile.Result{RequeueAfter: wait}, nil
		}
	}
	d.stepped.Store(deploy.UID, time.Now())
	orig := deploy.DeepCopy()
	stuck, err := d.notReadyPods(ctx, deploy)
	if err != nil {
		return reconcile.Result{}, err
	}
	placeable, err := d.nodeLabelsExist(ctx, deploy)
	if err != nil {
		return reconcile.Result{}, err
	}
	if !placeable {
		stuck = ptr.Deref(deploy.Spec.Replicas, 1)
	}
	next, done := d.nextStatus(deploy)
	if done && stuck > 0 {
		desired := ptr.Deref(deploy.Spec.Replicas, 1)
		next.AvailableReplicas = max(0, desired-stuck)
		next.ReadyReplicas, next.UnavailableReplicas = next.AvailableReplicas, desired-next.AvailableReplicas
	}
	deploy.Status = next
	if err := d.client.Status().Patch(ctx, deploy, client.MergeFrom(orig)); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if done {
		return reconcile.Result{}, nil
	}
	return reconcile.Result{RequeueAfter: d.step}, nil
}

// notReadyPods counts the pods a test made for deploy that are not ready.
func (d *deploymentDriver) notReadyPods(ctx context.Context, deploy *appsv1.Deployment) (int32, error) {
	if deploy.Spec.Selector == nil {
		return 0, nil
	}
	var pods corev1.PodList
	if err := d.client.List(ctx, &pods, client.InNamespace(deploy.Namespace),
		client.MatchingLabels(deploy.Spec.Selector.MatchLabels)); err != nil {
		return 0, err
	}
	var n int32
	for _, p := range pods.Items {
		ready := false
		for _, c := range p.Status.Conditions {
			ready = ready || (c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue)
		}
		if !ready && p.DeletionTimestamp == nil {
			n++
		}
	}
	return n, nil
}

// nodeLabelsExist says whether some term of the pod template's required
// node affinity asks only for labels (Exists) that some Node carries; true
// when it asks for none. Other operators are not looked at.
func (d *deploymentDriver) nodeLabelsExist(ctx context.Context, deploy *appsv1.Deployment) (bool, error) {
	a := deploy.Spec.Template.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return true, nil
	}
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		sel := labels.NewSelector()
		for _, e := range term.MatchExpressions {
			if e.Operator != corev1.NodeSelectorOpExists {
				continue
			}
			req, err := labels.NewRequirement(e.Key, selection.Exists, nil)
			if err != nil {
				return false, err
			}
			sel = sel.Add(*req)
		}
		var nodes corev1.NodeList
		if err := d.client.List(ctx, &nodes, client.MatchingLabelsSelector{Selector: sel}); err != nil {
			return false, err
		}
		if len(nodes.Items) > 0 {
			return true, nil
		}
	}
	return false, nil
}

// allDeployments maps a Node to every Deployment: one joining may let any
// of them be placed.
func (d *deploymentDriver) allDeployments(ctx context.Context, _ client.Object) []reconcile.Request {
	var list appsv1.DeploymentList
	if err := d.client.List(ctx, &list); err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for _, dep := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&dep)})
	}
	return reqs
}

// deploymentsOfPod maps a pod to the Deployments of its namespace whose
// selector matches it.
func (d *deploymentDriver) deploymentsOfPod(ctx context.Context, obj client.Object) []reconcile.Request {
	var list appsv1.DeploymentList
	if err := d.client.List(ctx, &list, client.InNamespace(obj.GetNamespace())); err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for _, dep := range list.Items {
		if dep.Spec.Selector != nil && labels.SelectorFromSet(dep.Spec.Selector.MatchLabels).Matches(labels.Set(obj.GetLabels())) {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&dep)})
		}
	}
	return reqs
}

// nextStatus is one step of the rollout; done when the status is final.
func (d *deploymentDriver) nextStatus(deploy *appsv1.Deployment) (appsv1.DeploymentStatus, bool) {
	st := *deploy.Status.DeepCopy()
	desired := int32(1)
	if deploy.Spec.Replicas != nil {
		desired = *deploy.Spec.Replicas
	}
	hash := templateHash(deploy)
	prev, seen := d.templates.Load(deploy.UID)
	d.templates.Store(deploy.UID, hash)

	if st.ObservedGeneration != deploy.Generation {
		st.ObservedGeneration = deploy.Generation
		if seen && prev != hash && st.Replicas > 0 {
			// A rollout begins: old pods keep serving, a surge pod starts.
			st.UpdatedReplicas = 0
			st.Replicas = min(st.Replicas, desired) + 1
			st.AvailableReplicas = min(st.AvailableReplicas, desired)
			st.ReadyReplicas = st.AvailableReplicas
			return st, false
		}
		if !seen && st.Replicas == 0 && desired > 0 {
			// A new Deployment: observed now, pods ready one step later.
			return st, false
		}
	}
	if st.UpdatedReplicas < desired && st.Replicas > desired {
		st.UpdatedReplicas++
		return st, false
	}
	st.Replicas, st.UpdatedReplicas, st.ReadyReplicas, st.AvailableReplicas = desired, desired, desired, desired
	st.UnavailableReplicas = 0
	return st, true
}

func templateHash(deploy *appsv1.Deployment) string {
	b, _ := json.Marshal(deploy.Spec.Template)
	sum := sha256.Sum256(b)
	return fmt.Sprintf("%x", sum[:8])
}
