package testenv

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
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
// The driver stops when ctx ends.
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
		For(&appsv1.Deployment{}).Complete(d); err != nil {
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
	next, done := d.nextStatus(deploy)
	deploy.Status = next
	if err := d.client.Status().Patch(ctx, deploy, client.MergeFrom(orig)); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if done {
		return reconcile.Result{}, nil
	}
	return reconcile.Result{RequeueAfter: d.step}, nil
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
