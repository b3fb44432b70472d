package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

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
