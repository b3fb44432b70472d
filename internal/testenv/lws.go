package testenv

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"
)

// crdWait is how long a CRD install waits for the API server to serve it:
// envtest's default, 10 s, is too short on a loaded machine.
const crdWait = 90 * time.Second

// LWSCRDFile is the LeaderWorkerSet CRD of the sigs.k8s.io/lws version
// go.mod pins (the API types the operator renders), read from the module
// cache, so that tests install the API exactly as that release defines it.
func LWSCRDFile() (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/lws")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("locating sigs.k8s.io/lws in the module cache: %w", err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), "config", "crd", "bases", "leaderworkerset.x-k8s.io_leaderworkersets.yaml"), nil
}

// StartLWSDriver installs the LeaderWorkerSet CRD and stands in for its
// controller, which envtest lacks: every LeaderWorkerSet's status reports
// all its groups updated and ready for its current generation, as the real
// controller does once every pod of every group is ready. It stops when
// ctx ends. Scenarios about groups that are not ready run on the simulator,
// which runs the real controller.
func (e *Env) StartLWSDriver(ctx context.Context) error {
	file, err := LWSCRDFile()
	if err != nil {
		return err
	}
	if _, err := envtest.InstallCRDs(e.Config, envtest.CRDInstallOptions{Paths: []string{file}, ErrorIfPathMissing: true, MaxTime: crdWait}); err != nil {
		return fmt.Errorf("installing the LeaderWorkerSet CRD: %w", err)
	}
	mgr, err := manager.New(e.Config, manager.Options{
		Scheme:                 e.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		return err
	}
	if err := builder.ControllerManagedBy(mgr).Named("test-lws-driver").
		WithOptions(controller.Options{SkipNameValidation: ptr.To(true)}).
		For(&lwsv1.LeaderWorkerSet{}).
		Complete(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			lws := &lwsv1.LeaderWorkerSet{}
			if err := mgr.GetClient().Get(ctx, req.NamespacedName, lws); err != nil {
				return reconcile.Result{}, client.IgnoreNotFound(err)
			}
			groups := ptr.Deref(lws.Spec.Replicas, 1)
			want := lwsv1.LeaderWorkerSetStatus{ObservedGeneration: lws.Generation, Replicas: groups, ReadyReplicas: groups, UpdatedReplicas: groups}
			if lws.Status.ObservedGeneration == want.ObservedGeneration && lws.Status.Replicas == groups &&
				lws.Status.ReadyReplicas == groups && lws.Status.UpdatedReplicas == groups {
				return reconcile.Result{}, nil
			}
			patch := client.MergeFrom(lws.DeepCopy())
			lws.Status.ObservedGeneration, lws.Status.Replicas, lws.Status.ReadyReplicas, lws.Status.UpdatedReplicas =
				want.ObservedGeneration, want.Replicas, want.ReadyReplicas, want.UpdatedReplicas
			return reconcile.Result{}, mgr.GetClient().Status().Patch(ctx, lws, patch)
		})); err != nil {
		return err
	}
	go func() {
		if err := mgr.Start(ctx); err != nil {
			fmt.Printf("testenv: LeaderWorkerSet driver stopped: %v\n", err)
		}
	}()
	return nil
}
