// Package cluster runs a real Kubernetes control plane for the simulator:
// etcd, kube-apiserver, kube-controller-manager and kube-scheduler from the
// tools/ cache, with generated certificates and kubeconfigs, tuned for
// speed. It is meant to run inside the simulator's own network namespace
// (see NamespaceAttr and SetupNetwork), so its fixed ports collide with
// nothing on the host.
package cluster

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/dynamoctl/dynamo-operator/internal/await"
)

// Ports inside the namespace.
const (
	APIServerPort = 6443
	etcdPort      = 2379
	etcdPeerPort  = 2380
	kcmPort       = 10257
	schedPort     = 10259
)

// Users with client certificates. The operator has a user of its own so
// that the audit log tells its writes apart.
const (
	AdminUser    = "dynamo-sim-admin"
	OperatorUser = "dynamo-operator"
	// LocalOperatorUser authenticates namespace-scoped operators, so the
	// audit log tells their writes from the cluster-wide operator's.
	LocalOperatorUser = "dynamo-operator-local"
	// ChartOperatorUser is the cluster-wide operator installed as the
	// chart/README.md says (helm install dynamo-platform ... --namespace
	// dynamo-system): the chart's ServiceAccount <release>-dynamo-operator,
	// as the API server names it in the audit log.
	ChartOperatorUser = "system:serviceaccount:dynamo-system:dynamo-platform-dynamo-operator"
)

// Config says where the cluster lives.
type Config struct {
	// Dir holds pki/, etcd/, logs/ and the kubeconfigs.
	Dir string
	// BinDir holds etcd, kube-apiserver, kube-controller-manager and
	// kube-scheduler (tools/build-k8s.sh prints it).
	BinDir string
	// HostPort is the loopback port on the host forwarded to the API server;
	// the host kubeconfig points there. 0 writes no host kubeconfig.
	HostPort int
	// Progress, when set, is told about each step.
	Progress func(string)
}

// Cluster is a running control plane.
type Cluster struct {
	cfg   Config
	pki   string
	logs  string
	admin *rest.Config

	mu    sync.Mutex
	procs map[string]*Process
	// apiArgs are kept so RestartAPIServer starts the same server again.
	apiArgs []string
}

// Paths of files a Cluster writes.
func (c *Cluster) AdminKubeconfig() string    { return filepath.Join(c.cfg.Dir, "admin.kubeconfig") }
func (c *Cluster) OperatorKubeconfig() string { return filepath.Join(c.cfg.Dir, "operator.kubeconfig") }

// LocalOperatorKubeconfig is OperatorKubeconfig for namespace-scoped
// operators (user LocalOperatorUser).
func (c *Cluster) LocalOperatorKubeconfig() string {
	return filepath.Join(c.cfg.Dir, "operator-local.kubeconfig")
}
func (c *Cluster) AuditLog() string { return filepath.Join(c.logs, "audit.log") }
func (c *Cluster) LogDir() string   { return c.logs }

// HostKubeconfig is the kubeconfig for programs on the host: it reaches the
// API server through the forwarded loopback port.
func HostKubeconfig(dir string) string { return filepath.Join(dir, "kubeconfig") }

// AdminConfig reaches the API server from inside the namespace as an
// administrator.
func (c *Cluster) AdminConfig() *rest.Config { return rest.CopyConfig(c.admin) }

// Start brings the control plane up and returns once all four components
// are healthy. On error everything started is stopped again.
func Start(ctx context.Context, cfg Config) (_ *Cluster, err error) {
	if cfg.Progress == nil {
		cfg.Progress = func(string) {}
	}
	c := &Cluster{cfg: cfg, pki: filepath.Join(cfg.Dir, "pki"), logs: filepath.Join(cfg.Dir, "logs"), procs: map[string]*Process{}}
	for _, d := range []string{c.pki, c.logs} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	defer func() {
		if err != nil {
			c.Stop()
		}
	}()
	cfg.Progress("generating certificates and kubeconfigs")
	if err := c.writePKI(); err != nil {
		return nil, fmt.Errorf("writing certificates: %w", err)
	}
	if c.admin, err = clientcmd.BuildConfigFromFlags("", c.AdminKubeconfig()); err != nil {
		return nil, err
	}
	c.admin.QPS, c.admin.Burst = 1000, 2000

	cfg.Progress("starting etcd")
	if err := c.start("etcd", c.etcdArgs()); err != nil {
		return nil, err
	}
	cfg.Progress("starting kube-apiserver")
	c.apiArgs = c.apiServerArgs()
	if err := c.start("kube-apiserver", c.apiArgs); err != nil {
		return nil, err
	}
	if err := c.waitAPIServer(ctx); err != nil {
		return nil, err
	}
	// Only now: both load RBAC defaults the API server creates at start.
	cfg.Progress("starting kube-controller-manager and kube-scheduler")
	if err := c.start("kube-controller-manager", c.kcmArgs()); err != nil {
		return nil, err
	}
	if err := c.start("kube-scheduler", c.schedulerArgs()); err != nil {
		return nil, err
	}
	for name, port := range map[string]int{"kube-controller-manager": kcmPort, "kube-scheduler": schedPort} {
		if err := c.waitHealthy(ctx, name, port); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Stop ends every component, the API server's clients first.
func (c *Cluster) Stop() {
	for _, name := range []string{lwsProcess, "kube-scheduler", "kube-controller-manager", "kube-apiserver", "etcd"} {
		c.mu.Lock()
		p := c.procs[name]
		c.mu.Unlock()
		if p != nil {
			p.Stop(10 * time.Second)
		}
	}
}

// RestartAPIServer stops the API server and starts it again with the same
// settings, returning once it is ready.
func (c *Cluster) RestartAPIServer(ctx context.Context, down time.Duration) error {
	c.mu.Lock()
	p := c.procs["kube-apiserver"]
	c.mu.Unlock()
	if p != nil {
		p.Stop(10 * time.Second)
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(down):
	}
	if err := c.start("kube-apiserver", c.apiArgs); err != nil {
		return err
	}
	return c.waitAPIServer(ctx)
}

// Failed reports the first component that has exited, or nil.
func (c *Cluster) Failed() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.procs {
		if err := p.ExitError(); err != nil {
			return err
		}
	}
	return nil
}

func (c *Cluster) start(name string, args []string) error {
	p, err := StartProcess(name, c.logs, filepath.Join(c.cfg.BinDir, name), args, nil)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.procs[name] = p
	c.mu.Unlock()
	return nil
}

func (c *Cluster) path(name string) string { return filepath.Join(c.pki, name) }

func (c *Cluster) etcdArgs() []string {
	return []string{
		"--name=sim",
		"--data-dir=" + filepath.Join(c.cfg.Dir, "etcd"),
		"--listen-client-urls=http://127.0.0.1:" + strconv.Itoa(etcdPort),
		"--advertise-client-urls=http://127.0.0.1:" + strconv.Itoa(etcdPort),
		"--listen-peer-urls=http://127.0.0.1:" + strconv.Itoa(etcdPeerPort),
		"--initial-advertise-peer-urls=http://127.0.0.1:" + strconv.Itoa(etcdPeerPort),
		"--initial-cluster=sim=http://127.0.0.1:" + strconv.Itoa(etcdPeerPort),
		// A simulator's data is disposable: trade durability for speed.
		"--unsafe-no-fsync",
		"--quota-backend-bytes=8589934592",
		"--log-level=warn",
	}
}

func (c *Cluster) apiServerArgs() []string {
	return []string{
		"--etcd-servers=http://127.0.0.1:" + strconv.Itoa(etcdPort),
		"--bind-address=0.0.0.0",
		"--secure-port=" + strconv.Itoa(APIServerPort),
		// Without it the kubernetes Service points at an address nobody
		// listens on.
		"--advertise-address=" + NodeIP,
		"--tls-cert-file=" + c.path("apiserver.crt"),
		"--tls-private-key-file=" + c.path("apiserver.key"),
		"--client-ca-file=" + c.path("ca.crt"),
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + c.path("sa.pub"),
		"--service-account-signing-key-file=" + c.path("sa.key"),
		"--service-cluster-ip-range=" + ServiceCIDR,
		"--authorization-mode=Node,RBAC",
		"--allow-privileged=true",
		// Webhooks and aggregated APIs are called at endpoint (pod) addresses:
		// there is no kube-proxy for ClusterIPs.
		"--enable-aggregator-routing=true",
		// Evict from lost nodes in seconds, not five minutes.
		"--default-not-ready-toleration-seconds=10",
		"--default-unreachable-toleration-seconds=10",
		"--max-requests-inflight=2000",
		"--max-mutating-requests-inflight=1000",
		"--audit-policy-file=" + c.path("audit-policy.yaml"),
		"--audit-log-path=" + c.AuditLog(),
		"--audit-log-format=json",
		"--audit-log-mode=blocking",
		"--profiling=false",
		// Gang scheduling (all-or-nothing placement of a multinode group):
		// the PodGroup API and the pod's schedulingGroup field.
		"--runtime-config=" + gangRuntimeConfig,
		"--feature-gates=" + gangFeatureGates,
	}
}

// Kubernetes 1.36's gang scheduling is alpha: the scheduling.k8s.io/v1alpha2
// API (PodGroup, Workload) is off unless enabled, GenericWorkload gates that API,
// the pod's spec.schedulingGroup field and the bootstrap RBAC that lets
// kube-scheduler read PodGroups (kube-apiserver), GangScheduling adds the
// scheduler's GangScheduling plugin (kube-scheduler, which needs
// GenericWorkload too). kube-controller-manager gets the same gates so that
// every component agrees on what the API is.
const (
	gangRuntimeConfig = "scheduling.k8s.io/v1alpha2=true"
	gangFeatureGates  = "GenericWorkload=true,GangScheduling=true"
)

func (c *Cluster) kcmArgs() []string {
	kc := filepath.Join(c.cfg.Dir, "kube-controller-manager.kubeconfig")
	return []string{
		"--kubeconfig=" + kc,
		"--authentication-kubeconfig=" + kc,
		"--authorization-kubeconfig=" + kc,
		// Without it the Deployment and ReplicaSet controllers act as the
		// controller manager's own user, which has no rights to them, and
		// Deployments never progress.
		"--use-service-account-credentials=true",
		"--service-account-private-key-file=" + c.path("sa.key"),
		"--root-ca-file=" + c.path("ca.crt"),
		"--cluster-signing-cert-file=" + c.path("ca.crt"),
		"--cluster-signing-key-file=" + c.path("ca.key"),
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(kcmPort),
		"--kube-api-qps=500",
		"--kube-api-burst=1000",
		"--concurrent-deployment-syncs=20",
		"--concurrent-replicaset-syncs=20",
		"--concurrent-service-endpoint-syncs=20",
		"--concurrent-gc-syncs=20",
		"--concurrent-namespace-syncs=10",
		"--node-monitor-period=2s",
		"--node-monitor-grace-period=20s",
		"--feature-gates=" + gangFeatureGates,
	}
}

func (c *Cluster) schedulerArgs() []string {
	kc := filepath.Join(c.cfg.Dir, "kube-scheduler.kubeconfig")
	return []string{
		"--config=" + filepath.Join(c.cfg.Dir, "kube-scheduler.yaml"),
		"--authentication-kubeconfig=" + kc,
		"--authorization-kubeconfig=" + kc,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(schedPort),
		"--feature-gates=" + gangFeatureGates,
	}
}

// schedulerConfig raises the client rate: the default 50 QPS would bind
// 50 pods a second.
const schedulerConfig = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: %s
  qps: 1000
  burst: 2000
leaderElection:
  leaderElect: false
`

func (c *Cluster) waitAPIServer(ctx context.Context) error {
	rt, err := rest.TransportFor(c.admin)
	if err != nil {
		return err
	}
	url := fmt.Sprintf("https://127.0.0.1:%d/readyz", APIServerPort)
	return c.poll(ctx, "kube-apiserver", func() bool { return get(ctx, &http.Client{Transport: rt}, url) })
}

func (c *Cluster) waitHealthy(ctx context.Context, name string, port int) error {
	// The component serves a self-signed certificate of its own, on the
	// namespace's loopback.
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec
	url := fmt.Sprintf("https://127.0.0.1:%d/healthz", port)
	return c.poll(ctx, name, func() bool { return get(ctx, hc, url) })
}

// poll waits up to a minute for ok, and stops at once when the process
// name exits.
func (c *Cluster) poll(ctx context.Context, name string, ok func() bool) error {
	c.mu.Lock()
	p := c.procs[name]
	c.mu.Unlock()
	var exited error
	err := await.Until(ctx, name+" healthy", func() error {
		if ok() {
			return nil
		}
		if exited = p.ExitError(); exited != nil {
			return gomega.StopTrying("exited")
		}
		return fmt.Errorf("not healthy yet; see %s", p.Log)
	}, await.Within(60*time.Second), await.Every(50*time.Millisecond))
	if exited != nil {
		return exited
	}
	return err
}

func get(ctx context.Context, hc *http.Client, url string) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := hc.Do(req)
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}
