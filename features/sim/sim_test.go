// Package sim runs the feature files against the simulator: a real control
// plane with kube-controller-manager, kube-scheduler and KWOK GPU nodes, and
// the operator installed with the chart (helm install dynamo-platform, as
// chart/README.md says), its pods running the operator image under the chart's
// ServiceAccount and RBAC, so Deployments, ReplicaSets, scheduling,
// EndpointSlices and the operator's rights are the real thing.
// e2e-framework owns the environment: it starts the simulator (bin/dynamo-sim
// up --install helm) before the suite and stops it after, or uses a running
// cluster when DYNAMO_FEATURES_KUBECONFIG (or DYNAMO_SIM_KUBECONFIG) names
// its kubeconfig.
//
// It runs only when DYNAMO_SIM_FEATURES=1 (make features-sim). GODOG_TAGS
// and GODOG_PATHS narrow it as for make features; scenarios tagged
// @envtest-only are left out. DYNAMO_FEATURES_INSTALL=process runs the
// operator as a process of the simulator instead of the chart.
//
// On a kind cluster (make features-kind: DYNAMO_FEATURES_KUBECONFIG and
// DYNAMO_FEATURES_KIND, the cluster's name) the faults the steps inject
// are kind's (features/kind), and DYNAMO_FEATURES_AUDIT_LOG names the API
// server's audit log the operator's writes are counted from.
//
// After the run the suite fails if any operator pod's log (logs/pods/)
// quotes RBAC refusing it a request (logcheck): the chart's RBAC must be all
// the operator needs.
package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cucumber/godog"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/env"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/dynamoctl/dynamo-operator/features/kind"
	"github.com/dynamoctl/dynamo-operator/features/sim/logcheck"
	"github.com/dynamoctl/dynamo-operator/features/sim/parts"
	"github.com/dynamoctl/dynamo-operator/features/steps"
	"github.com/dynamoctl/dynamo-operator/internal/await"
	"github.com/dynamoctl/dynamo-operator/internal/builders"
	"github.com/dynamoctl/dynamo-operator/internal/testenv"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1beta1"
	"github.com/dynamoctl/dynamo-operator/scenarios/harness"
	"github.com/dynamoctl/dynamo-operator/sim/cluster"
	"github.com/dynamoctl/dynamo-operator/sim/daemon"
	"github.com/dynamoctl/dynamo-operator/sim/faults"
	"github.com/dynamoctl/dynamo-operator/sim/workers"
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
	kubeconfig := os.Getenv("DYNAMO_FEATURES_KUBECONFIG")
	if kubeconfig == "" {
		kubeconfig = os.Getenv("DYNAMO_SIM_KUBECONFIG")
	}
	if kubeconfig != "" {
		stateDir = filepath.Dir(kubeconfig)
		testEnv = env.NewWithKubeConfig(kubeconfig)
		os.Exit(checkPodLogs(testEnv.Run(m)))
	}
	if stateDir, err = os.MkdirTemp("", "features-sim-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testEnv = env.NewWithKubeConfig(cluster.HostKubeconfig(stateDir))
	testEnv.Setup(simUp)
	testEnv.Finish(simDown)
	code := checkPodLogs(testEnv.Run(m))
	if code == 0 {
		_ = os.RemoveAll(stateDir)
	} else {
		fmt.Printf("features/sim: failed; the simulator's state and logs are kept in %s\n", stateDir)
	}
	os.Exit(code)
}

// isSimulator says whether the suite's cluster is a simulator (its control
// socket is beside the kubeconfig) rather than another cluster.
func isSimulator() bool {
	_, err := os.Stat(daemon.SocketPath(stateDir))
	return err == nil
}

// auditLog is the API server's audit log the operator's writes are counted
// from: DYNAMO_FEATURES_AUDIT_LOG (make kind's), else logs/audit.log beside
// the kubeconfig (the simulator's).
func auditLog() string {
	if l := os.Getenv("DYNAMO_FEATURES_AUDIT_LOG"); l != "" {
		return l
	}
	return filepath.Join(stateDir, "logs", "audit.log")
}

// hasAuditLog says whether the cluster records the operator's writes: the
// simulator does; another cluster when its audit log exists (the operator
// renews its leader Lease every few seconds, a write, so the log exists
// once it runs).
func hasAuditLog() bool {
	if isSimulator() {
		return true
	}
	_, err := os.Stat(auditLog())
	return err == nil
}

// serves says whether the cluster serves an API group version: the
// LeaderWorkerSet API multinode graphs run on, the external metrics API
// HorizontalPodAutoscalers read (the simulator serves both; make kind
// neither).
func serves(rc *rest.Config, groupVersion string) bool {
	dc, err := discovery.NewDiscoveryClientForConfig(rc)
	if err != nil {
		return false
	}
	_, err = dc.ServerResourcesForGroupVersion(groupVersion)
	return err == nil
}

// chartInstall says whether the suite runs on the chart-installed operator
// (the default) rather than an operator process of the simulator.
func chartInstall() bool { return os.Getenv("DYNAMO_FEATURES_INSTALL") != "process" }

func helmBin() string {
	if h := os.Getenv("HELM"); h != "" {
		return h
	}
	return filepath.Join(root, ".cache", "bin", "helm")
}

// checkPodLogs fails the run (code 1) when an operator pod's log quotes RBAC
// refusing a request (logcheck.RBACRefusal): one the chart's RBAC does not
// allow. The simulator
// keeps every pod's log in logs/pods/ (scenarios tear namespaces down while
// the operator works in them, so a write refused because the namespace is
// terminating is not counted); other clusters have no such directory and
// are not checked here. Lines a pod logged after a "helm uninstall" step
// began removing it are listed but do not fail the run: helm deletes the
// Deployment and the RBAC in one pass, so the terminating pod loses its
// rights before it stops (a known limit of helm uninstall, see the chart
// README).
func checkPodLogs(code int) int {
	logs, _ := filepath.Glob(filepath.Join(stateDir, "logs", "pods", "*.log"))
	var bad, during, settling []string
	for _, l := range logs {
		data, err := os.ReadFile(l)
		if err != nil {
			fmt.Fprintf(os.Stderr, "features/sim: %v\n", err)
			return 1
		}
		ns, pod, _ := strings.Cut(strings.TrimSuffix(filepath.Base(l), ".log"), "_")
		lines := strings.Split(string(data), "\n")
		started := logTime(lines[0])
		for _, line := range lines {
			at := logcheck.RBACRefusal(line)
			if at < 0 {
				continue
			}
			entry := filepath.Base(l) + ": " + logcheck.Excerpt(line, at, 300)
			if at, ok := steps.RemovedAt(ns, pod, started); ok && !logTime(line).Before(at) {
				during = append(during, entry)
				continue
			}
			if t := logTime(line); !started.IsZero() && !t.IsZero() && t.Sub(started) < rbacSettle {
				settling = append(settling, entry)
				continue
			}
			bad = append(bad, entry)
		}
	}
	fmt.Printf("features/sim: %d operator pod logs checked for RBAC refusals\n", len(logs))
	if len(during) > 0 {
		fmt.Printf("features/sim: %d refused while helm uninstall removed the pod (not counted):\n  %s\n", len(during), strings.Join(during, "\n  "))
	}
	if len(settling) > 0 {
		fmt.Printf("features/sim: %d refused in a pod's first %s, before the API server's authorizer had its new release's RBAC (not counted):\n  %s\n",
			len(settling), rbacSettle, strings.Join(settling, "\n  "))
	}
	if len(bad) > 0 {
		fmt.Fprintf(os.Stderr, "features/sim: the operator was refused requests (RBAC):\n  %s\n", strings.Join(bad, "\n  "))
		return 1
	}
	return code
}

// rbacSettle is how long after its start a pod's refusals are not held
// against the chart. helm creates a release's Roles, bindings and
// Deployment in one pass; on a loaded machine the API server's authorizer
// has taken seconds to see the bindings after the pod started. A rule the
// chart truly lacks is refused again after that (every request the
// operator makes is retried, leader election every second), so it still
// fails the run.
const rbacSettle = 10 * time.Second

// logTime is the time of a zap JSON log line ("ts": epoch seconds); the
// zero time when it has none, so such a line always counts.
func logTime(line string) time.Time {
	var l struct {
		TS float64 `json:"ts"`
	}
	if json.Unmarshal([]byte(line), &l) != nil || l.TS == 0 {
		return time.Time{}
	}
	sec := int64(l.TS)
	return time.Unix(sec, int64((l.TS-float64(sec))*1e9))
}

func simBin() string {
	if b := os.Getenv("DYNAMO_SIM_BIN"); b != "" {
		return b
	}
	return filepath.Join(root, "bin", "dynamo-sim")
}

// suiteSim is the suite's own simulator, started by simUp.
func suiteSim() *harness.Sim {
	return &harness.Sim{Bin: simBin(), Dir: stateDir, Out: os.Stdout}
}

// simUp starts a simulator of its own for the suite, with the working
// tree's operator (installed by the chart unless DYNAMO_FEATURES_INSTALL
// says otherwise). It dies with this process (--watch-pid) if the suite is
// killed before simDown runs.
func simUp(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
	o := harness.UpOptions{Operator: operatorBin()}
	if chartInstall() {
		o.Helm = helmBin()
	}
	if err := suiteSim().Up(ctx, o); err != nil {
		return ctx, fmt.Errorf("%w (make helm installs helm)", err)
	}
	return ctx, nil
}

// operatorBin is the operator binary the simulator runs, and make kind's
// namespace-scoped operators.
func operatorBin() string { return filepath.Join(root, "bin", "dynamo-operator") }

func simDown(ctx context.Context, _ *envconf.Config) (context.Context, error) {
	return ctx, suiteSim().Down(ctx)
}

// simOperator restarts the cluster-wide operator and counts its writes
// from the API server's audit log (audit). With the chart (c set) the
// operator is the release dynamo-platform's pod, authenticated as its
// ServiceAccount; otherwise a process of the simulator with a client
// certificate user.
type simOperator struct {
	dir, audit string
	c          client.Client
	// local starts namespace-scoped operators on another cluster (kind's);
	// nil on the simulator, whose processes they are.
	local *kind.LocalOperators
}

func (o simOperator) user() string {
	if o.c != nil {
		return cluster.ChartOperatorUser
	}
	return cluster.OperatorUser
}

// Restart deletes the operator pod as a user would and waits until its
// replacement is Ready and holds the leader election Lease, so the steps
// after it watch an operator that has started over with empty caches.
func (o simOperator) Restart(ctx context.Context) error {
	if o.c == nil {
		_, err := daemon.NewClient(o.dir).Fault(ctx, faults.Request{Kind: "operator-restart"})
		return err
	}
	return steps.RestartOperatorPods(ctx, o.c, steps.ClusterRelease, steps.ClusterNamespace, 2*time.Minute)
}

func (o simOperator) writes() []string {
	ws, err := cluster.WritesBy(o.audit, o.user())
	if err != nil {
		fmt.Fprintf(os.Stderr, "features/sim: reading the audit log: %v\n", err)
	}
	out := make([]string, 0, len(ws))
	for _, w := range ws {
		out = append(out, w.Line)
	}
	return out
}

func (o simOperator) Writes() int64 { return int64(len(o.writes())) }

// WritesIn lists the cluster-wide operator's writes in namespace the API
// server received in [from, to), from the audit log (the operator had
// decided to write by then, however long the write then took).
func (o simOperator) WritesIn(namespace string, from, to time.Time) []string {
	ws, err := cluster.WritesBy(o.audit, o.user())
	if err != nil {
		fmt.Fprintf(os.Stderr, "features/sim: reading the audit log: %v\n", err)
	}
	var out []string
	for _, w := range ws {
		if w.Namespace == namespace && !w.Received.Before(from) && w.Received.Before(to) {
			out = append(out, w.Line+" received at "+w.Received.Format(time.RFC3339Nano))
		}
	}
	return out
}

// StartLocal runs a namespace-scoped operator process in the simulator,
// with lease timings short enough for scenarios to watch a lease expire.
// It stays a process, not a namespace-scoped release, even on the chart:
// modes.feature kills it abruptly (SIGKILL, no lease release) and stops it
// cleanly at a moment of its choosing, and needs 2 s leases; deleting a
// pod always sends SIGTERM first, and its Deployment would start another.
// install.feature covers namespace-scoped releases.
// It runs without webhooks, as in the envtest suite: a killed operator's
// webhook (failurePolicy Fail) would refuse every change in its namespace.
func (o simOperator) StartLocal(ctx context.Context, namespace, version string) (steps.LocalOperator, error) {
	args := []string{
		"--operator-version=" + version, "--enable-webhooks=false",
		"--namespace-lease-duration=2s", "--namespace-lease-renew-interval=500ms",
	}
	if o.local != nil {
		return o.local.Start(namespace, args)
	}
	name := "local-" + namespace
	_, err := daemon.NewClient(o.dir).StartOperator(ctx, daemon.OperatorRequest{
		Name: name, Namespace: namespace, Args: args,
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

// simWorkers are the simulator's fake workers, reached through its
// control socket; restarts and forgetting are its faults.
type simWorkers struct{ c *daemon.Client }

func (simWorkers) Serve(context.Context, string) error { return nil } // the simulator runs every pod

func (w simWorkers) Calls(ctx context.Context) ([]workers.Call, error) { return w.c.WorkerCalls(ctx) }

func (w simWorkers) LoRAs(ctx context.Context) (map[string][]string, error) {
	return w.c.WorkerLoRAs(ctx)
}

func (w simWorkers) Restart(ctx context.Context, pod string) error {
	_, err := w.c.Fault(ctx, faults.Request{Kind: "worker-restart", Pod: pod})
	return err
}

func (w simWorkers) Forget(ctx context.Context, pod string) error {
	_, err := w.c.Fault(ctx, faults.Request{Kind: "lora-forget", Pod: pod})
	return err
}

// waitForConversion waits until the API server trusts the chart-installed
// operator's conversion webhook: the operator writes its CA into the CRDs
// once it runs, after helm's --wait may have returned, and a first scenario
// writing v1beta1 would meet "certificate signed by unknown authority".
func waitForConversion(t *testing.T, c client.Client) {
	t.Helper()
	probe := builders.MakeBetaGraph("conversion-probe", "default").
		Component(builders.MakeBetaComponent("Frontend").Type(v1beta1.ComponentTypeFrontend)).Obj()
	if err := await.Until(context.Background(), "the conversion webhook trusted", func() error {
		return c.Create(context.Background(), probe.DeepCopy(), client.DryRunAll)
	}, await.Within(await.Long)); err != nil {
		t.Fatal(err)
	}
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
		// kube-controller-manager's Job controller, and KWOK stages that
		// end Jobs' pods (sim/nodes.AnnotationJobOutcome).
		RunsJobs:   true,
		Operator:   simOperator{dir: stateDir, audit: auditLog()},
		Kubeconfig: cfg.KubeconfigFile(),
		Helm:       helmBin(),
		// The operator runs with the default --model-check-interval.
		ModelCheckInterval: 30 * time.Second,
	}
	if isSimulator() {
		cl.Fault = func(ctx context.Context, f steps.Fault) (string, error) {
			return daemon.NewClient(stateDir).Fault(ctx, faults.Request{Kind: f.Kind, Pod: f.Pod, Image: f.Image, Node: f.Node})
		}
		cl.Workers = simWorkers{daemon.NewClient(stateDir)}
	}
	var local *kind.LocalOperators
	if name := os.Getenv("DYNAMO_FEATURES_KIND"); name != "" && !isSimulator() {
		cs, err := kubernetes.NewForConfig(rc)
		if err != nil {
			t.Fatal(err)
		}
		nodes := kind.Nodes{Client: c}
		cl.Fault = nodes.Fault
		cl.Workers = &kind.Workers{Client: c, Clientset: cs, Nodes: nodes}
		local = &kind.LocalOperators{
			Kubeconfig: cfg.KubeconfigFile(), ControlPlane: name + "-control-plane",
			Bin: operatorBin(), Dir: filepath.Join(stateDir, name+"-operators"), Audit: auditLog(),
		}
	}
	if chartInstall() {
		cl.Operator = simOperator{dir: stateDir, audit: auditLog(), c: c, local: local}
		cl.WebhookCertSecret = types.NamespacedName{Namespace: steps.ClusterNamespace, Name: "dynamo-platform-dynamo-operator-webhook-cert"}
		waitForConversion(t, c)
	}
	paths := []string{filepath.Join(root, "features")}
	if p := os.Getenv("GODOG_PATHS"); p != "" {
		paths = nil
		for _, s := range strings.Split(p, ",") {
			paths = append(paths, filepath.Join(root, "features", s))
		}
	} else if p := runPart(t); p.Of > 1 {
		paths = nil
		for _, f := range p.Items(featureFiles(t)) {
			if f != parts.Docs {
				paths = append(paths, filepath.Join(root, "features", f))
			}
		}
		t.Logf("part %s of the feature files: %v", p, paths)
	}
	tags := "~@envtest-only"
	if !chartInstall() {
		tags += " && ~@install" // they act on the chart-installed operator
	}
	if !isSimulator() {
		// Another cluster (kind, a real one): not the simulator's control
		// of its fake workers, no kubelet that writes the pod status a
		// fault asks for at once, ends a build pod as asked or runs any
		// image; an audit log to count the operator's
		// writes only where it names one (make kind's); namespace-scoped
		// operator processes and fake workers to ask only on kind
		// (features/kind); the LeaderWorkerSet and external metrics APIs
		// only where installed.
		tags += " && ~@sim-control && ~@sim-kubelet"
		if !hasAuditLog() {
			tags += " && ~@audit"
		}
		if local == nil || !hasAuditLog() {
			tags += " && ~@local-operator"
		}
		if cl.Workers == nil {
			tags += " && ~@fake-workers"
		}
		if !serves(rc, "leaderworkerset.x-k8s.io/v1") {
			tags += " && ~@lws"
		}
		if !serves(rc, "external.metrics.k8s.io/v1beta1") {
			tags += " && ~@external-metrics"
		}
	}
	if t := os.Getenv("GODOG_TAGS"); t != "" {
		tags = t + " && " + tags
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

// runPart is the part of the suite this run runs (DYNAMO_FEATURES_PART,
// make features-sim PART=k/n): all of it unless set.
func runPart(t *testing.T) parts.Part {
	t.Helper()
	p, err := parts.Parse(os.Getenv("DYNAMO_FEATURES_PART"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// featureFiles are what the parts split: the feature files' names and the
// documentation's commands.
func featureFiles(t *testing.T) []string {
	t.Helper()
	all, err := parts.All(filepath.Join(root, "features"))
	if err != nil {
		t.Fatal(err)
	}
	return all
}

// TestDocs runs the user documentation's shell blocks on the suite's
// cluster (doccheck: those not marked skip), after TestFeatures: go test
// runs a package's tests in the order they are declared, and the pages
// uninstall and install the operator. Not on another cluster, whose
// operator the pages would uninstall, nor with the operator as a process.
func TestDocs(t *testing.T) {
	if !isSimulator() || !chartInstall() {
		t.Skip("the documentation's commands run on the suite's own simulator with the chart-installed operator")
	}
	if os.Getenv("GODOG_TAGS") != "" || os.Getenv("GODOG_PATHS") != "" {
		t.Skip("a run narrowed to some features leaves the documentation out (make docs-sim runs it alone)")
	}
	if p := runPart(t); !slices.Contains(p.Items(featureFiles(t)), parts.Docs) {
		t.Skipf("the documentation's commands run in another part than %s (DYNAMO_FEATURES_PART)", p)
	}
	cfg := testEnv.EnvConf()
	rc, err := clientcmd.BuildConfigFromFlags("", cfg.KubeconfigFile())
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(rc, client.Options{Scheme: testenv.NewScheme()})
	if err != nil {
		t.Fatal(err)
	}
	runDocs(t, c, cfg.KubeconfigFile())
}
