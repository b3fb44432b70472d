package kind

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/dynamoctl/dynamo-operator/features/steps"
	"github.com/dynamoctl/dynamo-operator/operator/scope"
	"github.com/dynamoctl/dynamo-operator/sim/cluster"
)

// LocalOperators start namespace-scoped operators as processes on this
// machine, talking to the kind cluster's API server as the user the
// simulator gives its namespace-scoped operators (cluster.LocalOperatorUser,
// in system:masters), so the audit log tells their writes from the
// chart-installed operator's. A process, not a release: scenarios kill one
// abruptly (SIGKILL, no lease release), which deleting a pod cannot do.
type LocalOperators struct {
	// Kubeconfig is the cluster's kubeconfig on this machine (its API
	// server's address); ControlPlane the control-plane node, whose
	// kubeadm signs the local operators' client certificate.
	Kubeconfig, ControlPlane string
	// Bin is the operator binary; Dir holds the processes' kubeconfig and
	// logs; Audit is the API server's audit log, which tells when they
	// renewed and released their marker Leases.
	Bin, Dir, Audit string
	// Docker is the docker binary; empty means "docker" on PATH.
	Docker string

	once       sync.Once
	kubeconfig string
	err        error
}

// Start runs a namespace-scoped operator of namespace with args (its
// version, leases, webhooks) and returns it; Stop or Kill ends it.
func (l *LocalOperators) Start(namespace string, args []string) (steps.LocalOperator, error) {
	l.once.Do(func() { l.kubeconfig, l.err = l.writeKubeconfig() })
	if l.err != nil {
		return nil, l.err
	}
	name := "local-" + namespace
	args = append([]string{
		"--metrics-bind-address=0",
		// Port 0: processes of several scenarios may run at once.
		"--health-probe-bind-address=127.0.0.1:0",
		"--restrict-namespace=" + namespace,
		"--webhook-cert-dir=" + filepath.Join(l.Dir, name+"-certs"),
		"--webhook-cert-secret=dynamo-operator-webhook-cert-" + namespace,
	}, args...)
	p, err := cluster.StartProcess(name, l.Dir, l.Bin, args, []string{"KUBECONFIG=" + l.kubeconfig})
	if err != nil {
		return nil, err
	}
	return localOperator{p: p, audit: l.Audit}, nil
}

// writeKubeconfig has the control plane's kubeadm make a kubeconfig for
// cluster.LocalOperatorUser and points it at the API server's address on
// this machine.
func (l *LocalOperators) writeKubeconfig() (string, error) {
	docker := l.Docker
	if docker == "" {
		docker = "docker"
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out, errOut bytes.Buffer
	cmd := exec.CommandContext(ctx, docker, "exec", l.ControlPlane, "kubeadm", "kubeconfig", "user",
		"--client-name="+cluster.LocalOperatorUser, "--org=system:masters")
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("kubeadm kubeconfig user in %s: %v: %s", l.ControlPlane, err, strings.TrimSpace(errOut.String()))
	}
	cfg, err := clientcmd.Load(out.Bytes())
	if err != nil {
		return "", err
	}
	host, err := clientcmd.LoadFromFile(l.Kubeconfig)
	if err != nil {
		return "", err
	}
	hostCtx, ok := host.Contexts[host.CurrentContext]
	if !ok || host.Clusters[hostCtx.Cluster] == nil {
		return "", fmt.Errorf("%s has no current cluster", l.Kubeconfig)
	}
	for _, c := range cfg.Clusters {
		c.Server = host.Clusters[hostCtx.Cluster].Server
	}
	if err := os.MkdirAll(l.Dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(l.Dir, "operator-local.kubeconfig")
	return path, clientcmd.WriteToFile(*cfg, path)
}

// localOperator is a namespace-scoped operator process.
type localOperator struct {
	p     *cluster.Process
	audit string
}

// LeaseRenewals lists its successful writes (PUT, PATCH) of the Lease name
// in namespace from the audit log: when the API server received each (a
// little after the holder sent it, so a renewal holds a little longer than
// it did) and when it answered.
func (o localOperator) LeaseRenewals(namespace, name string) []scope.Renewal {
	var out []scope.Renewal
	for _, w := range o.leaseWrites(namespace, name, http.MethodPut, http.MethodPatch) {
		out = append(out, scope.Renewal{Sent: w.Received, Landed: w.At})
	}
	return out
}

// LeaseReleased is when the API server received its first successful
// DELETE of the Lease name in namespace, and whether it did.
func (o localOperator) LeaseReleased(namespace, name string) (time.Time, bool) {
	if deletes := o.leaseWrites(namespace, name, http.MethodDelete); len(deletes) > 0 {
		return deletes[0].Received, true
	}
	return time.Time{}, false
}

// leaseWrites are the namespace-scoped operators' successful writes of the
// Lease name in namespace with one of methods, oldest first.
func (o localOperator) leaseWrites(namespace, name string, methods ...string) []cluster.Write {
	ws, err := cluster.WritesBy(o.audit, cluster.LocalOperatorUser)
	if err != nil {
		fmt.Fprintf(os.Stderr, "features/kind: reading the audit log: %v\n", err)
	}
	var out []cluster.Write
	for _, w := range ws {
		method, _, _ := strings.Cut(w.Line, " ")
		if w.Namespace == namespace && w.Resource == "leases" && w.Name == name && w.Code/100 == 2 && slices.Contains(methods, method) {
			out = append(out, w)
		}
	}
	return out
}

// Stop ends it as a clean shutdown does: SIGTERM, and its grace to release
// its Lease.
func (o localOperator) Stop() { o.p.Stop(30 * time.Second) }

// Kill ends it at once, as a crash does.
func (o localOperator) Kill() { o.p.Kill() }
