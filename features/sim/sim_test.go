// Package sim runs the feature files against the simulator: a real control
// plane with kube-controller-manager, kube-scheduler and KWOK GPU nodes, and
// the operator as a process, so Deployments, ReplicaSets, scheduling and
// EndpointSlices are the real thing rather than a status driver. e2e-framework
// owns the environment: it starts the simulator (bin/dynamo-sim up) before
// the suite and stops it after, or uses a running one when
// DYNAMO_SIM_KUBECONFIG names its kubeconfig.
//
// It runs only when DYNAMO_SIM_FEATURES=1 (make features-sim). GODOG_TAGS
// and GODOG_PATHS narrow it as for make features; scenarios tagged
// @envtest-only are left out.
package sim

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cucumber/godog"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/env"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/dynamoctl/dynamo-operator/features/steps"
	"github.com/dynamoctl/dynamo-operator/internal/testenv"
	"github.com/dynamoctl/dynamo-operator/sim/cluster"
	"github.com/dynamoctl/dynamo-operator/sim/daemon"
	"github.com/dynamoctl/dynamo-operator/sim/faults"
)

var (
	testEnv  env.Environment
	stateDir string
	root     string
)

func TestMain(m *testing.M) {
	if os.Getenv("DYNAMO_SIM_FEATURES") != "1" {
		fmt.Println("features/sim: skipped; DYNAMO_SIM_FEATURES=1 runs it (make features-sim)")
		os.Exit(0)
	}
	var err error
	if root, err = testenv.RepoRoot(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	kubeconfig := os.Getenv("DYNAMO_SIM_KUBECONFIG")
	if kubeconfig != "" {
		stateDir = filepath.Dir(kubeconfig)
		testEnv = env.NewWithKubeConfig(kubeconfig)
		os.Exit(testEnv.Run(m))
	}
	if stateDir, err = os.MkdirTemp("", "features-sim-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testEnv = env.NewWithKubeConfig(cluster.HostKubeconfig(stateDir))
	testEnv.Setup(simUp)
	testEnv.Finish(simDown)
	code := testEnv.Run(m)
	_ = os.RemoveAll(stateDir)
	os.Exit(code)
}

func simBin() string {
	if b := os.Getenv("DYNAMO_SIM_BIN"); b != "" {
		return b
	}
	return filepath.Join(root, "bin", "dynamo-sim")
}

// simUp starts a simulator of its own for the suite. It dies with this
// process (--watch-pid) if the suite is killed before simDown runs.
func simUp(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
	args := []string{"up", "--state-dir=" + stateDir, "--watch-pid=" + strconv.Itoa(os.Getpid()),
		"--pod-ready-delay=1s", "--operator=" + filepath.Join(root, "bin", "dynamo-operator")}
	cmd := exec.CommandContext(ctx, simBin(), args...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return ctx, fmt.Errorf("%s up: %w (build it with make sim-build)", simBin(), err)
	}
	return ctx, nil
}

func simDown(ctx context.Context, _ *envconf.Config) (context.Context, error) {
	cmd := exec.CommandContext(ctx, simBin(), "down", "--state-dir="+stateDir)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	return ctx, cmd.Run()
}

// simOperator restarts the operator process through the simulator and
// counts its writes from the API server's audit log.
type simOperator struct{ dir string }

func (o simOperator) Restart(ctx context.Context) error {
	_, err := daemon.NewClient(o.dir).Fault(ctx, faults.Request{Kind: "operator-restart"})
	return err
}

func (o simOperator) writes() []string {
	w, err := cluster.OperatorWrites(filepath.Join(o.dir, "logs", "audit.log"))
	if err != nil {
		fmt.Fprintf(os.Stderr, "features/sim: reading the audit log: %v\n", err)
	}
	return w
}

func (o simOperator) Writes() int64 { return int64(len(o.writes())) }

// WritesIn lists the cluster-wide operator's writes in namespace completed
// in [from, to), from the audit log.
func (o simOperator) WritesIn(namespace string, from, to time.Time) []string {
	ws, err := cluster.WritesBy(filepath.Join(o.dir, "logs", "audit.log"), cluster.OperatorUser)
	if err != nil {
		fmt.Fprintf(os.Stderr, "features/sim: reading the audit log: %v\n", err)
	}
	var out []string
	for _, w := range ws {
		if w.Namespace == namespace && !w.At.Before(from) && w.At.Before(to) {
			out = append(out, w.Line+" at "+w.At.Format(time.RFC3339Nano))
		}
	}
	return out
}

// StartLocal runs a namespace-scoped operator process in the simulator,
// with lease timings short enough for scenarios to watch a lease expire.
// It runs without webhooks, as in the envtest suite: a killed operator's
// webhook (failurePolicy Fail) would refuse every change in its namespace.
func (o simOperator) StartLocal(ctx context.Context, namespace, version string) (steps.LocalOperator, error) {
	name := "local-" + namespace
	_, err := daemon.NewClient(o.dir).StartOperator(ctx, daemon.OperatorRequest{
		Name: name, Namespace: namespace,
		Args: []string{
			"--operator-version=" + version, "--enable-webhooks=false",
			"--namespace-lease-duration=2s", "--namespace-lease-renew-interval=500ms",
		},
	})
	if err != nil {
		return nil, err
	}
	return localOperator{dir: o.dir, name: name}, nil
}

// localOperator is a namespace-scoped operator process of the simulator.
type localOperator struct{ dir, name string }

func (l localOperator) Stop() { l.stop(false) }
func (l localOperator) Kill() { l.stop(true) }

func (l localOperator) stop(kill bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := daemon.NewClient(l.dir).StopOperator(ctx, l.name, kill); err != nil {
		fmt.Fprintf(os.Stderr, "features/sim: stopping %s: %v\n", l.name, err)
	}
}

func (o simOperator) WritesSince(n int64) []string {
	w := o.writes()
	if n >= int64(len(w)) {
		return nil
	}
	return w[n:]
}

func TestFeatures(t *testing.T) {
	cfg := testEnv.EnvConf()
	rc, err := clientcmd.BuildConfigFromFlags("", cfg.KubeconfigFile())
	if err != nil {
		t.Fatal(err)
	}
	rc.QPS, rc.Burst = 200, 400
	c, err := client.New(rc, client.Options{Scheme: testenv.NewScheme()})
	if err != nil {
		t.Fatal(err)
	}
	strict := client.WithFieldValidation(c, metav1.FieldValidationStrict)
	cl := &steps.Cluster{
		Client: strict,
		Config: rc,
		CreateNamespace: func(ctx context.Context, prefix string) (string, error) {
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: testenv.NamespacePrefix(prefix) + "-"}}
			if err := strict.Create(ctx, ns); err != nil {
				return "", err
			}
			return ns.Name, nil
		},
		DeleteNamespace: func(ctx context.Context, ns string) {
			err := strict.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
			if err != nil && !apierrors.IsNotFound(err) {
				t.Logf("deleting namespace %s: %v", ns, err)
			}
		},
		RepoRoot: root,
		// Real rollouts: scheduling, the pod-ready delay, ReplicaSet
		// surges one pod at a time.
		EventualTimeout: 90 * time.Second,
		Operator:        simOperator{dir: stateDir},
	}
	paths := []string{filepath.Join(root, "features")}
	if p := os.Getenv("GODOG_PATHS"); p != "" {
		paths = nil
		for _, s := range strings.Split(p, ",") {
			paths = append(paths, filepath.Join(root, "features", s))
		}
	}
	tags := "~@envtest-only"
	if t := os.Getenv("GODOG_TAGS"); t != "" {
		tags = t + " && ~@envtest-only"
	}
	suite := godog.TestSuite{
		Name:                "features-sim",
		ScenarioInitializer: cl.InitializeScenario,
		Options: &godog.Options{
			Format:   "pretty",
			Paths:    paths,
			Tags:     tags,
			Strict:   true,
			TestingT: t,
		},
	}
	if suite.Run() != 0 {
		t.Fatal("feature scenarios failed on the simulator")
	}
}
