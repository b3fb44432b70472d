// Command devcluster is `make run`: it starts a local control plane (etcd and
// kube-apiserver from the tools/ cache, with the CRDs installed), writes an
// admin kubeconfig, runs the operator binary against it and stops both on
// Ctrl-C or when the operator exits. The simulator supersedes it for whole
// clusters with nodes and pods.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/dynamoctl/dynamo-operator/internal/testenv"
	"github.com/dynamoctl/dynamo-operator/operator/crdinstall"
)

func main() {
	operator := flag.String("operator", "bin/dynamo-operator", "operator binary to run")
	dir := flag.String("dir", ".cache/run", "directory for the kubeconfig")
	flag.Parse()
	if err := run(*operator, *dir, flag.Args()); err != nil {
		fmt.Fprintf(os.Stderr, "devcluster: %v\n", err)
		os.Exit(1)
	}
}

// webhookPort is where the operator serves its webhooks, conversion
// included.
const webhookPort = "9443"

func run(operator, dir string, operatorArgs []string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	fmt.Fprintln(os.Stderr, "devcluster: starting etcd and kube-apiserver...")
	// The CRDs' conversion webhook is the operator's, as the chart's init
	// container points it at the release's; the operator injects its CA.
	env, err := testenv.StartWith(testenv.Options{Conversion: &crdinstall.Conversion{URL: "https://127.0.0.1:" + webhookPort}})
	if err != nil {
		return err
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "devcluster: stopping control plane: %v\n", err)
		}
	}()

	kubeconfig, err := env.AdminKubeConfig()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	kcPath, err := filepath.Abs(filepath.Join(dir, "kubeconfig"))
	if err != nil {
		return err
	}
	if err := os.WriteFile(kcPath, kubeconfig, 0o600); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "devcluster: API server at %s\ndevcluster: kubectl --kubeconfig %s get dgd -A\n", env.Config.Host, kcPath)

	// Local runs serve plain-HTTP metrics: there is no TokenReview-capable
	// authenticator. The webhooks run as in a cluster, except that the API
	// server calls them by URL on 127.0.0.1 instead of through a Service;
	// their certificate Secret lives in the operator's namespace.
	if err := env.EnsureNamespace(ctx, testenv.OperatorNamespace); err != nil {
		return err
	}
	certDir, err := filepath.Abs(filepath.Join(dir, "webhook-certs"))
	if err != nil {
		return err
	}
	args := append([]string{"--metrics-secure=false", "--metrics-bind-address=127.0.0.1:8080",
		"--health-probe-bind-address=127.0.0.1:8081",
		"--webhook-url-host=127.0.0.1", "--webhook-port=" + webhookPort, "--webhook-cert-dir=" + certDir}, operatorArgs...)
	cmd := exec.CommandContext(ctx, operator, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kcPath)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	fmt.Fprintf(os.Stderr, "devcluster: starting %s (Ctrl-C stops everything)\n", operator)
	err = cmd.Run()
	if ctx.Err() != nil {
		return nil // stopped by the user
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return fmt.Errorf("operator exited with code %d", exit.ExitCode())
	}
	return err
}
