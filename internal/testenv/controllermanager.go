package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// controllerManager is a kube-controller-manager running only the
// controllers a test cluster needs for API semantics to hold: the garbage
// collector (owner references, foreground and background cascading
// deletion) and the namespace controller (namespace deletion empties and
// removes the namespace), and the HorizontalPodAutoscaler controller, which
// scales through scale subresources (the operator's components have one).
// Workload controllers stay off: tests drive Deployment status themselves,
// and the simulator runs the full set.
type controllerManager struct {
	cmd  *exec.Cmd
	dir  string
	done chan error
}

// gangFeatureGates are Kubernetes 1.36's alpha gang scheduling gates.
const gangFeatureGates = "GenericWorkload=true,GangScheduling=true"

func startControllerManager(e *Env, assets string, gang bool) (*controllerManager, error) {
	dir, err := os.MkdirTemp("", "testenv-kcm-")
	if err != nil {
		return nil, err
	}
	kubeconfig, err := e.AdminKubeConfig()
	if err != nil {
		return nil, err
	}
	kcPath := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kcPath, kubeconfig, 0o600); err != nil {
		return nil, err
	}
	logFile, err := os.Create(filepath.Join(dir, "kube-controller-manager.log"))
	if err != nil {
		return nil, err
	}
	controllers, gates := "garbagecollector,namespace,clusterrole-aggregation,horizontalpodautoscaling", "GenericWorkload=false"
	if gang {
		// podgroup-protection removes the finalizer the API server puts on
		// every PodGroup once no pod names it; without it no PodGroup is
		// ever deleted.
		controllers, gates = controllers+",podgroup-protection-controller", gangFeatureGates
	}
	cmd := exec.Command(filepath.Join(assets, "kube-controller-manager"),
		"--kubeconfig="+kcPath,
		"--controllers="+controllers,
		"--feature-gates="+gates,
		// No metrics server here: an HPA acts on its min and max replicas
		// alone, within a second rather than the default 15 s.
		"--horizontal-pod-autoscaler-sync-period=1s",
		"--leader-elect=false",
		"--secure-port=0",
		"--concurrent-gc-syncs=20",
		"--concurrent-namespace-syncs=10",
	)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// If the test binary dies without cleaning up, take the controller
	// manager with it rather than leaving it orphaned.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("starting kube-controller-manager: %w", err)
	}
	m := &controllerManager{cmd: cmd, dir: dir, done: make(chan error, 1)}
	go func() {
		m.done <- cmd.Wait()
		_ = logFile.Close()
	}()
	return m, nil
}

func (m *controllerManager) stop() error {
	_ = m.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-m.done:
	case <-time.After(10 * time.Second):
		_ = m.cmd.Process.Kill()
		<-m.done
	}
	return os.RemoveAll(m.dir)
}
