package benchmarks

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/dynamoctl/dynamo-operator/internal/audit"
	"github.com/dynamoctl/dynamo-operator/internal/testenv"
	"github.com/dynamoctl/dynamo-operator/sim/cluster"
	"github.com/dynamoctl/dynamo-operator/sim/kubelet"
	"github.com/dynamoctl/dynamo-operator/sim/nodes"
	"github.com/dynamoctl/dynamo-operator/sim/probes"
	simworkers "github.com/dynamoctl/dynamo-operator/sim/workers"
)

var (
	onSim    = flag.Bool("sim", false, "run on the simulator's control plane (controller-manager, scheduler, KWOK GPU nodes) instead of envtest")
	simNodes = flag.Int("sim-nodes", 0, "KWOK nodes of 8 GPUs on the simulator; 0: enough for every worker and a fifth more")
)

// TestMain moves the process into a network namespace of its own when the
// benchmark runs on the simulator, whose control plane listens there.
func TestMain(m *testing.M) {
	flag.Parse()
	if *onSim {
		os.Exit(cluster.TestMainInNamespace(m))
	}
	os.Exit(m.Run())
}

// benchCluster is the control plane a benchmark runs on: envtest (an API
// server; a driver stands in for the Deployment controller) or the
// simulator (kube-controller-manager, kube-scheduler and KWOK nodes whose
// pods become Ready).
type benchCluster struct {
	Client client.Client
	Config *rest.Config
	Scheme *runtime.Scheme

	env        *testenv.Env
	sim        *cluster.Cluster
	auditLog   string
	kubeconfig func() ([]byte, error)
	stop       func()
}

func startCluster(ctx context.Context, b *testing.B) *benchCluster {
	if *onSim {
		return startSim(ctx, b)
	}
	env, err := testenv.StartWith(testenv.Options{Audit: true})
	if err != nil {
		b.Fatal(err)
	}
	return &benchCluster{Client: env.Client, Config: env.Config, Scheme: env.Scheme, env: env,
		kubeconfig: func() ([]byte, error) {
			return env.KubeConfigFor(envtest.User{Name: operatorUser, Groups: []string{"system:masters"}})
		},
		stop: func() { _ = env.Stop() }}
}

func startSim(ctx context.Context, b *testing.B) *benchCluster {
	bin, err := cluster.BinDir()
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	c, err := cluster.Start(ctx, cluster.Config{Dir: dir, BinDir: bin})
	if err != nil {
		b.Fatal(err)
	}
	bc := &benchCluster{Config: c.AdminConfig(), Scheme: testenv.NewScheme(), sim: c, auditLog: c.AuditLog(),
		kubeconfig: func() ([]byte, error) { return os.ReadFile(c.OperatorKubeconfig()) }, stop: c.Stop}
	if bc.Client, err = client.New(bc.Config, client.Options{Scheme: bc.Scheme}); err != nil {
		c.Stop()
		b.Fatal(err)
	}
	// Pods become Ready a moment after they are scheduled: the benchmark
	// measures the operator, not model loads.
	if err := nodes.StartKWOK(ctx, nodes.KWOKOptions{Kubeconfig: c.AdminKubeconfig(), PodReadyDelay: 100 * time.Millisecond,
		LeaseDuration: 40 * time.Second}); err != nil {
		c.Stop()
		b.Fatal(err)
	}
	count := *simNodes
	if count == 0 {
		workers := *graphs * ((*services + 2) / 4) * 2 // two of every four services ask for a GPU
		count = (workers*6/5 + 7) / 8
	}
	cs := kubernetes.NewForConfigOrDie(bc.Config)
	pool := nodes.Pool{Name: "gpu", Count: count, GPUs: 8, Product: "NVIDIA-H100-80GB-HBM3", MemoryMiB: 81559}
	if err := nodes.CreatePools(ctx, cs, []nodes.Pool{pool}); err != nil {
		c.Stop()
		b.Fatal(err)
	}
	if err := nodes.WarmIPPool(ctx, cs, pool.NodeName(0)); err != nil {
		c.Stop()
		b.Fatal(err)
	}
	// The kubelet's checks before a Dynamo pod starts (image, env sources):
	// KWOK starts a component's pod only once they pass, as in the simulator.
	if err := (&kubelet.Admitter{Client: cs}).Run(ctx); err != nil {
		c.Stop()
		b.Fatal(err)
	}
	// Fake Dynamo workers answer the pods' probes, which the simulator's
	// prober runs as kubelets would: a pod is Ready when its probe passes.
	if err := simworkers.NewManager(simworkers.NewRecorder(clock.RealClock{})).Run(ctx, cs); err != nil {
		c.Stop()
		b.Fatal(err)
	}
	if err := (&probes.Manager{Client: cs, Log: func(string, ...any) {}}).Run(ctx); err != nil {
		c.Stop()
		b.Fatal(err)
	}
	// The operator's CRDs, as its chart's init container applies them.
	root, err := testenv.RepoRoot()
	if err != nil {
		b.Fatal(err)
	}
	ours, err := testenv.ReadCRDs(filepath.Join(root, "crds"))
	if err != nil {
		c.Stop()
		b.Fatal(err)
	}
	// No conversion webhook runs here (testenv.WithoutConversionWebhook).
	crds, err := envtest.InstallCRDs(bc.Config, envtest.CRDInstallOptions{CRDs: testenv.WithoutConversionWebhook(ours)})
	if err != nil || len(crds) == 0 {
		c.Stop()
		b.Fatalf("installing the CRDs: %v", err)
	}
	b.Logf("simulator: %d KWOK nodes of 8 GPUs", count)
	return bc
}

// StartDeploymentDriver stands in for the Deployment controller and the
// kubelets on envtest; the simulator has the real ones.
func (c *benchCluster) StartDeploymentDriver(ctx context.Context, step time.Duration) error {
	if c.env == nil {
		return nil
	}
	return c.env.StartDeploymentDriver(ctx, step)
}

func (c *benchCluster) AuditEvents() ([]testenv.AuditEvent, error) {
	if c.env != nil {
		return c.env.AuditEvents()
	}
	return audit.Read(c.auditLog)
}

func (c *benchCluster) CreateNamespace(ctx context.Context, prefix string) (string, error) {
	if c.env != nil {
		return c.env.CreateNamespace(ctx, prefix)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	if err := c.Client.Create(ctx, ns); err != nil {
		return "", err
	}
	return ns.Name, nil
}

func (c *benchCluster) DeleteNamespace(ctx context.Context, ns string) {
	err := c.Client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	if err != nil && !apierrors.IsNotFound(err) {
		fmt.Fprintf(os.Stderr, "deleting namespace %s: %v\n", ns, err)
	}
}

func (c *benchCluster) Stop() { c.stop() }
