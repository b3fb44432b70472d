package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/dynamoctl/dynamo-operator/sim/cluster"
)

// cmdHelm runs the pinned helm CLI (make helm builds it into .cache/bin)
// against the simulator: dynamo-sim helm -- install dynamo-platform chart/...
// Helm runs on the host and reaches the API server through the forwarded
// port, as it would reach any cluster; the pods it creates run in the
// simulator (the operator's image as the real binary, sim/kubelet).
func cmdHelm(args []string) error {
	fs := flag.NewFlagSet("helm", flag.ContinueOnError)
	dir := stateDirFlag(fs)
	helm := fs.String("helm", envOr("HELM", filepath.Join(repoRoot(), ".cache", "bin", "helm")), "helm binary (make helm builds the pinned one)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := requireUp(*dir); err != nil {
		return err
	}
	if _, err := os.Stat(*helm); err != nil {
		return fmt.Errorf("helm binary: %w (run make helm, or pass --helm)", err)
	}
	env := append(os.Environ(), "KUBECONFIG="+cluster.HostKubeconfig(*dir))
	return syscall.Exec(*helm, append([]string{"helm"}, fs.Args()...), env)
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// Seeds' install: release and namespace of the cluster-wide operator.
const (
	releaseName      = "dynamo-platform"
	releaseNamespace = "dynamo-system"
)

// helmInstall installs the chart as the seeds do (helm install
// dynamo-platform CHART --namespace dynamo-system --create-namespace),
// then waits until the operator's Deployment is available: its pods run
// the operator binary (sim/kubelet) and the prober found them ready.
func helmInstall(ctx context.Context, dir, helm, chart, tag string) error {
	args := []string{"install", releaseName, chart, "--namespace", releaseNamespace, "--create-namespace", "--wait", "--timeout", "3m"}
	if tag != "" {
		// A string whatever it looks like: git describe of a clone with no
		// tags may be all digits, a number to --set, which the schema refuses.
		args = append(args, "--set-string", "dynamo-operator.controllerManager.manager.image.tag="+tag)
	}
	start := time.Now()
	fmt.Printf("dynamo-sim: helm %s\n", strings.Join(args, " "))
	cmd := exec.CommandContext(ctx, helm, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+cluster.HostKubeconfig(dir))
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("helm install: %w (operator pod logs: %s)", err, filepath.Join(dir, "logs", "pods"))
	}
	fmt.Printf("dynamo-sim: operator installed with helm and Ready %.1fs after helm install\n", time.Since(start).Seconds())
	return nil
}
