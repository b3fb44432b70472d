package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/dynamoctl/dynamo-operator/internal/await"
	"github.com/dynamoctl/dynamo-operator/operator/crdinstall"
	"github.com/dynamoctl/dynamo-operator/sim/cluster"
	"github.com/dynamoctl/dynamo-operator/sim/kubelet"
	"github.com/dynamoctl/dynamo-operator/sim/metricsapi"
	"github.com/dynamoctl/dynamo-operator/sim/nodes"
	"github.com/dynamoctl/dynamo-operator/sim/probes"
	"github.com/dynamoctl/dynamo-operator/sim/storage"
	"github.com/dynamoctl/dynamo-operator/sim/workers"
)

// crdWait is how long a CRD install waits for the API server to serve it:
// envtest's default, 10 s, is too short on a loaded machine.
const crdWait = 90 * time.Second

// Options configure a simulator run.
type Options struct {
	// Dir is the state directory: cluster files, logs, the control socket.
	Dir    string
	BinDir string
	// CRDDir holds the CRDs to install (crds/ of the repository).
	CRDDir string
	// LWS is the LeaderWorkerSet controller binary (make lws), LWSCRDDir
	// its CRDs; empty runs none, so the cluster serves no LeaderWorkerSet
	// API.
	LWS, LWSCRDDir string
	// Operator is the operator binary; empty runs no operator.
	Operator string
	// OperatorArgs are extra flags for the operator.
	OperatorArgs []string
	// Mode is cluster-wide or namespace:<ns>.
	Mode          string
	Pools         []nodes.Pool
	PodReadyDelay time.Duration
	// HostListener is a listener on the host's loopback (made before the
	// daemon entered its namespace) forwarded to the API server.
	HostListener net.Listener
	HostPort     int
	// SystemNamespace is where the operator runs; it holds its leader
	// election and webhook certificate.
	SystemNamespace string
	// WatchPid, when set, stops the simulator when that process is gone:
	// a test that started it and was killed does not leave it behind.
	WatchPid int
	// RunImages map container images to programs the simulator runs as a
	// kubelet would (sim/kubelet); the operator's image maps to Operator
	// unless a mapping names it.
	RunImages []kubelet.ImageMapping
	// ModelLoadDelay is the fake workers' simulated model load time.
	ModelLoadDelay time.Duration
	// NoOperatorProcess starts no operator process: the operator is
	// installed as pods (helm install of the chart), and Operator is only
	// the program its image runs.
	NoOperatorProcess bool
}

// OperatorImage is the operator's image repository; pods of any tag of it
// run the operator binary unless --run-image says otherwise.
const OperatorImage = "ghcr.io/dynamoctl/dynamo-operator"

// Daemon is a running simulator.
type Daemon struct {
	o       Options
	clock   clock.Clock
	cluster *cluster.Cluster
	client  kubernetes.Interface
	// op is the primary operator; ops holds every operator by name.
	op      *operatorProc
	opsMu   sync.Mutex
	ops     map[string]*operatorProc
	workers *workers.Manager
	kubelet *kubelet.Runner
	prober  *probes.Manager
	admit   *kubelet.Admitter
	log     io.Writer

	mu    sync.Mutex
	state State
}

// Run starts everything, serves until ctx ends, then stops everything.
func Run(ctx context.Context, o Options, log io.Writer) error {
	if o.SystemNamespace == "" {
		o.SystemNamespace = "dynamo"
	}
	d := &Daemon{o: o, clock: clock.RealClock{}, log: log}
	d.state = State{Pid: os.Getpid(), Phase: PhaseStarting, HostPort: o.HostPort, Kubeconfig: cluster.HostKubeconfig(o.Dir), Mode: o.Mode, StartedAt: time.Now()}

	_ = os.Remove(SocketPath(o.Dir))
	sock, err := net.Listen("unix", SocketPath(o.Dir))
	if err != nil {
		return fmt.Errorf("control socket: %w", err)
	}
	ctrl := &http.Server{Handler: d.routes(ctx), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = ctrl.Serve(sock) }()
	defer func() { _ = ctrl.Close(); _ = os.Remove(SocketPath(o.Dir)) }()

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	err = d.start(runCtx)
	if err != nil {
		d.setState(func(s *State) { s.Phase, s.Error = PhaseFailed, err.Error() })
		fmt.Fprintf(log, "dynamo-sim: %v\n", err)
	} else {
		d.setState(func(s *State) { s.Phase, s.Step, s.ReadyAt = PhaseReady, "", time.Since(s.StartedAt) })
		fmt.Fprintf(log, "dynamo-sim: ready after %s\n", d.snapshot().ReadyAt.Round(time.Millisecond))
		select {
		case <-ctx.Done():
		case <-watchPid(runCtx, o.WatchPid):
			fmt.Fprintf(log, "dynamo-sim: process %d is gone; stopping\n", o.WatchPid)
		case err = <-d.watchFailures(runCtx):
			d.setState(func(s *State) { s.Phase, s.Error = PhaseFailed, err.Error() })
			fmt.Fprintf(log, "dynamo-sim: %v\n", err)
		}
	}
	d.setState(func(s *State) { s.Phase = PhaseStopping })
	d.opsMu.Lock()
	ops := d.ops
	d.opsMu.Unlock()
	for _, op := range ops {
		op.stop(false)
	}
	cancel()
	if d.kubelet != nil {
		// Pods' processes end before the API server they talk to.
		d.kubelet.Wait()
	}
	if d.cluster != nil {
		d.cluster.Stop()
	}
	return err
}

func (d *Daemon) step(s string) {
	fmt.Fprintf(d.log, "dynamo-sim: %s\n", s)
	d.setState(func(st *State) { st.Step = s })
}

// start brings the simulator up, in order: the control plane, the nodes,
// the CRDs and LeaderWorkerSet, the nodes Ready, then the operators.
func (d *Daemon) start(ctx context.Context) error {
	c, err := d.startControlPlane(ctx)
	if err != nil {
		return err
	}
	logf := func(f string, a ...any) { fmt.Fprintf(d.log, "dynamo-sim: "+f+"\n", a...) }
	if err := d.startNodes(ctx, c, logf); err != nil {
		return err
	}
	if err := d.installAPIs(ctx, c, logf); err != nil {
		return err
	}
	d.step("serving the external metrics API")
	if err := metricsapi.Start(ctx, d.client, dynamic.NewForConfigOrDie(c.AdminConfig()), cluster.NodeIP, metricsPort); err != nil {
		return err
	}
	if err := d.ensureNamespace(ctx, d.o.SystemNamespace); err != nil {
		return err
	}
	d.step("waiting for the nodes to be Ready")
	if err := d.waitNodesReady(ctx); err != nil {
		return err
	}
	if len(d.o.Pools) > 0 && d.o.Pools[0].Count > 0 {
		d.step("warming up the pod IP pool")
		if err := nodes.WarmIPPool(ctx, d.client, d.o.Pools[0].NodeName(0)); err != nil {
			return err
		}
	}
	if d.o.Operator != "" && !d.o.NoOperatorProcess {
		return d.startOperators(ctx)
	}
	return nil
}

// startControlPlane sets up the network namespace, starts the control
// plane and forwards the host listener to its API server.
func (d *Daemon) startControlPlane(ctx context.Context) (*cluster.Cluster, error) {
	d.step("setting up the network namespace")
	if err := cluster.SetupNetwork(); err != nil {
		return nil, err
	}
	c, err := cluster.Start(ctx, cluster.Config{Dir: d.o.Dir, BinDir: d.o.BinDir, HostPort: d.o.HostPort, Progress: d.step})
	if err != nil {
		return nil, err
	}
	d.cluster = c
	d.setState(func(s *State) { s.ClusterHealthy = time.Since(s.StartedAt) })
	if d.o.HostListener != nil {
		go forward(ctx, d.o.HostListener, "127.0.0.1:"+strconv.Itoa(cluster.APIServerPort))
	}
	d.client = kubernetes.NewForConfigOrDie(c.AdminConfig())
	return c, nil
}

// startNodes starts what plays the nodes: KWOK and its GPU nodes, the
// volume provisioner, the fake workers, the kubelet's admission checks and
// the kubelet that runs process pods.
func (d *Daemon) startNodes(ctx context.Context, c *cluster.Cluster, logf func(string, ...any)) error {
	d.step("starting KWOK and creating GPU nodes")
	if err := nodes.StartKWOK(ctx, nodes.KWOKOptions{
		Kubeconfig: c.AdminKubeconfig(), PodReadyDelay: d.o.PodReadyDelay, LeaseDuration: 20 * time.Second, Clock: d.clock, Log: d.log,
	}); err != nil {
		return err
	}
	if err := nodes.CreatePools(ctx, d.client, d.o.Pools); err != nil {
		return err
	}
	if err := storage.Run(ctx, d.client, logf); err != nil {
		return err
	}
	d.workers = workers.NewManager(workers.NewRecorder(d.clock))
	d.workers.Log = logf
	d.workers.ModelLoadDelay = d.o.ModelLoadDelay
	if err := d.workers.Run(ctx, d.client); err != nil {
		return err
	}
	// The kubelet's checks before a Dynamo pod's containers start (image
	// pull, volumes, env sources); KWOK starts the pod once they pass.
	d.admit = &kubelet.Admitter{Client: d.client, Clock: d.clock, Log: logf}
	if err := d.admit.Run(ctx); err != nil {
		return err
	}
	return d.startKubelet(ctx, logf)
}

// installAPIs installs the CRDs and LeaderWorkerSet (its CRDs and
// controller, now or once built).
func (d *Daemon) installAPIs(ctx context.Context, c *cluster.Cluster, logf func(string, ...any)) error {
	if d.o.CRDDir != "" {
		d.step("installing CRDs from " + d.o.CRDDir)
		if err := installCRDs(ctx, c, d.o.CRDDir); err != nil {
			return fmt.Errorf("installing CRDs: %w", err)
		}
	}
	if d.o.LWS == "" {
		return nil
	}
	if _, err := os.Stat(d.o.LWS); err != nil {
		d.step("the LeaderWorkerSet controller is being built: it starts once built")
		go d.startLWSWhenBuilt(ctx, c, logf)
		return nil
	}
	d.step("installing LeaderWorkerSet's CRDs and starting its controller")
	return d.startLWS(ctx, c)
}

// startOperators starts the operators the mode runs and waits until each
// is ready.
func (d *Daemon) startOperators(ctx context.Context) error {
	plans, err := planOperators(d.o.Mode)
	if err != nil {
		return err
	}
	d.step("starting the operator (" + d.o.Mode + ")")
	var ops []*operatorProc
	for _, p := range plans {
		op, err := d.startOperator(ctx, p.name, p.namespace, d.o.OperatorArgs)
		if err != nil {
			return err
		}
		ops = append(ops, op)
	}
	// Ready means the webhooks answer: a manifest applied right after
	// up is judged, not refused by a webhook still starting.
	d.step("waiting for the operator to be ready")
	for _, op := range ops {
		if err := waitReadyz(ctx, op.args); err != nil {
			return fmt.Errorf("operator %s: %w (log: %s)", op.name, err, op.logDir)
		}
	}
	return nil
}

// installCRDs applies the CRDs in dir as the chart's init container does,
// with their conversion webhook at the first operator the simulator starts
// (webhook port 9443 in every mode, called at 127.0.0.1 like its admission
// webhooks), which then injects its CA.
func installCRDs(ctx context.Context, c *cluster.Cluster, dir string) error {
	all, err := crdinstall.LoadFS(os.DirFS(dir))
	if err != nil {
		return err
	}
	scheme := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		return err
	}
	cl, err := client.New(c.AdminConfig(), client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	conv := crdinstall.Conversion{URL: "https://127.0.0.1:" + strconv.Itoa(webhookPort(0))}
	return crdinstall.ApplyCRDs(ctx, cl, all, crdWait, conv)
}

// webhookPort is the webhook port of the operator in slot (the order the
// simulator starts operators in).
func webhookPort(slot int) int { return 9443 + slot }

// metricsPort is where the external metrics API (sim/metricsapi) listens,
// on the nodes' address.
const metricsPort = 6444

// startKubelet runs the pods of mapped images as processes (sim/kubelet)
// and probes every pod (sim/probes). A failed liveness probe restarts the
// process of a pod the kubelet runs, or else the pod's fake worker.
func (d *Daemon) startKubelet(ctx context.Context, logf func(string, ...any)) error {
	images := append([]kubelet.ImageMapping(nil), d.o.RunImages...)
	if d.o.Operator != "" {
		images = append(images, kubelet.ImageMapping{Repo: OperatorImage, Path: d.o.Operator})
	}
	// Forward routing between pods' veths (pod to pod).
	if err := os.WriteFile("/proc/sys/net/ipv4/ip_forward", []byte("1"), 0o644); err != nil {
		return fmt.Errorf("enabling forwarding in the simulator's namespace: %w", err)
	}
	k, err := kubelet.New(kubelet.Config{
		Client: d.client, Clock: d.clock, Images: images, Dir: d.o.Dir,
		APIServerHost: cluster.NodeIP, APIServerPort: cluster.APIServerPort, Log: logf,
	})
	if err != nil {
		return err
	}
	d.kubelet = k
	if err := k.Run(ctx); err != nil {
		return err
	}
	d.prober = &probes.Manager{Client: d.client, Clock: d.clock, Log: logf, Restart: func(pod *corev1.Pod, container string) bool {
		if k.Restart(pod, container) {
			return true
		}
		d.workers.Restart(pod.Namespace + "/" + pod.Name)
		return false
	}}
	return d.prober.Run(ctx)
}

// waitReadyz polls the operator's /readyz on its health probe address.
func waitReadyz(ctx context.Context, args []string) error {
	addr := ""
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--health-probe-bind-address="); ok {
			addr = v
		}
	}
	if addr == "" || addr == "0" {
		return nil // no probe to ask
	}
	return await.Until(ctx, "the operator's /readyz", func() error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/readyz", nil)
		if err != nil {
			return gomega.StopTrying("a bad address").Wrap(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/readyz answered %s", resp.Status)
		}
		return nil
	}, await.Within(2*time.Minute))
}

// opPlan is one operator a mode runs.
type opPlan struct{ name, namespace string }

// planOperators turns a mode into operators: cluster-wide, namespace:<ns>
// (namespace-scoped), or hybrid:<ns> (a cluster-wide operator and a
// namespace-scoped one in ns; docs/concepts/install-modes.md).
func planOperators(mode string) ([]opPlan, error) {
	switch {
	case mode == "" || mode == "cluster-wide":
		return []opPlan{{PrimaryOperator, ""}}, nil
	case strings.HasPrefix(mode, "namespace:") && len(mode) > len("namespace:"):
		return []opPlan{{PrimaryOperator, strings.TrimPrefix(mode, "namespace:")}}, nil
	case strings.HasPrefix(mode, "hybrid:") && len(mode) > len("hybrid:"):
		ns := strings.TrimPrefix(mode, "hybrid:")
		return []opPlan{{PrimaryOperator, ""}, {PrimaryOperator + "-" + ns, ns}}, nil
	default:
		return nil, fmt.Errorf("unknown mode %q: use cluster-wide, namespace:<name> or hybrid:<name>", mode)
	}
}

// PrimaryOperator names the operator every mode runs first.
const PrimaryOperator = "operator"

// startOperator runs another operator process; namespace "" is cluster-wide.
// Each gets its own health and webhook ports, as pods would have their own
// addresses.
func (d *Daemon) startOperator(ctx context.Context, name, namespace string, extra []string) (*operatorProc, error) {
	if d.o.Operator == "" {
		return nil, fmt.Errorf("the simulator runs without an operator binary (--operator)")
	}
	if namespace != "" {
		if err := d.ensureNamespace(ctx, namespace); err != nil {
			return nil, err
		}
	}
	d.opsMu.Lock()
	if d.ops == nil {
		d.ops = map[string]*operatorProc{}
	}
	if _, ok := d.ops[name]; ok {
		d.opsMu.Unlock()
		return nil, fmt.Errorf("an operator named %s exists already", name)
	}
	slot := len(d.ops)
	args := operatorArgs(namespace, slot, filepath.Join(d.o.Dir, "webhook-certs", name), extra)
	kubeconfig := d.cluster.OperatorKubeconfig()
	if namespace != "" {
		kubeconfig = d.cluster.LocalOperatorKubeconfig()
	}
	op := &operatorProc{name: name, bin: d.o.Operator, logDir: d.cluster.LogDir(), kubeconfig: kubeconfig, args: args, log: d.log}
	d.ops[name] = op
	d.opsMu.Unlock()
	if err := op.start(); err != nil {
		return nil, err
	}
	if name == PrimaryOperator {
		d.op = op
	}
	return op, nil
}

// operator finds an operator by name ("" is the primary one).
func (d *Daemon) operator(name string) (*operatorProc, error) {
	if name == "" {
		name = PrimaryOperator
	}
	d.opsMu.Lock()
	defer d.opsMu.Unlock()
	op, ok := d.ops[name]
	if !ok {
		return nil, fmt.Errorf("no operator named %q runs in the simulator", name)
	}
	return op, nil
}

// operatorArgs are the flags the simulator runs an operator with: no
// metrics server (nothing scrapes it), health probes and the webhook server
// on a port per operator, admission webhooks on as in a real install but
// called at 127.0.0.1 (the operator runs as a process beside the API
// server, not behind a Service), with a certificate directory and Secret of
// its own; namespace-scoped when namespace is set; then the user's flags,
// which win.
func operatorArgs(namespace string, slot int, certDir string, extra []string) []string {
	secret := "dynamo-operator-webhook-cert"
	if namespace != "" {
		secret += "-" + namespace
	}
	args := []string{
		"--metrics-bind-address=0",
		"--health-probe-bind-address=127.0.0.1:" + strconv.Itoa(8081+slot),
		"--webhook-port=" + strconv.Itoa(webhookPort(slot)),
		"--enable-webhooks=true",
		"--webhook-url-host=127.0.0.1",
		"--webhook-cert-dir=" + certDir,
		"--webhook-cert-secret=" + secret,
	}
	if namespace != "" {
		args = append(args, "--restrict-namespace="+namespace)
	}
	return append(args, extra...)
}

func (d *Daemon) ensureNamespace(ctx context.Context, ns string) error {
	_, err := d.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", ns, err)
	}
	return nil
}

func (d *Daemon) waitNodesReady(ctx context.Context) error {
	want := 0
	for _, p := range d.o.Pools {
		want += p.Count
	}
	return await.Until(ctx, "the nodes Ready", func() error {
		list, err := d.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return err
		}
		ready := 0
		for _, n := range list.Items {
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		d.setState(func(s *State) { s.Step = fmt.Sprintf("waiting for the nodes to be Ready (%d/%d)", ready, want) })
		if ready < want {
			return fmt.Errorf("%d of %d nodes Ready", ready, want)
		}
		return nil
	}, await.Within(5*time.Minute))
}

// watchFailures reports a control plane component that died.
func (d *Daemon) watchFailures(ctx context.Context) <-chan error {
	out := make(chan error, 1)
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if err := d.cluster.Failed(); err != nil && !d.restartingAPIServer() {
					out <- err
					return
				}
			}
		}
	}()
	return out
}

func (d *Daemon) restartingAPIServer() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.state.Step == "restarting kube-apiserver"
}

func (d *Daemon) setState(f func(*State)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	f(&d.state)
}

func (d *Daemon) snapshot() State {
	d.mu.Lock()
	s := d.state
	d.mu.Unlock()
	if d.op != nil {
		s.Operator.Pid, s.Operator.Running, s.Operator.Restarts, s.Operator.Log = d.op.status()
	}
	d.opsMu.Lock()
	for name, op := range d.ops {
		var o OperatorState
		o.Name, o.Args = name, op.args
		o.Pid, o.Running, o.Restarts, o.Log = op.status()
		s.Operators = append(s.Operators, o)
	}
	d.opsMu.Unlock()
	sort.Slice(s.Operators, func(i, j int) bool { return s.Operators[i].Name < s.Operators[j].Name })
	return s
}

// forward copies connections from the host listener to the API server.
func forward(ctx context.Context, ln net.Listener, to string) {
	go func() { <-ctx.Done(); _ = ln.Close() }()
	for {
		conn, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) || ctx.Err() != nil {
				return
			}
			continue
		}
		go func() {
			defer func() { _ = conn.Close() }()
			up, err := net.Dial("tcp", to)
			if err != nil {
				return
			}
			defer func() { _ = up.Close() }()
			done := make(chan struct{}, 2)
			go func() { _, _ = io.Copy(up, conn); done <- struct{}{} }()
			go func() { _, _ = io.Copy(conn, up); done <- struct{}{} }()
			<-done
		}()
	}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// watchPid is closed when process pid no longer exists; never for pid 0.
func watchPid(ctx context.Context, pid int) <-chan struct{} {
	out := make(chan struct{})
	if pid == 0 {
		return out
	}
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
			if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err != nil {
				close(out)
				return
			}
		}
	}()
	return out
}

// startLWS installs LeaderWorkerSet's CRDs and starts its controller.
func (d *Daemon) startLWS(ctx context.Context, c *cluster.Cluster) error {
	if _, err := envtest.InstallCRDs(c.AdminConfig(), envtest.CRDInstallOptions{Paths: []string{d.o.LWSCRDDir}, ErrorIfPathMissing: true, MaxTime: crdWait}); err != nil {
		return fmt.Errorf("installing LeaderWorkerSet's CRDs: %w", err)
	}
	if err := c.StartLWS(ctx, d.o.LWS); err != nil {
		return fmt.Errorf("starting the LeaderWorkerSet controller: %w", err)
	}
	return nil
}

// startLWSWhenBuilt waits for the LeaderWorkerSet controller that up builds
// in the background (its binary appears last, after its CRDs) and starts
// it: the operator picks the new API up without a restart, as on a cluster
// where LeaderWorkerSet is installed after it.
func (d *Daemon) startLWSWhenBuilt(ctx context.Context, c *cluster.Cluster, logf func(string, ...any)) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-d.clock.After(2 * time.Second):
		}
		if _, err := os.Stat(d.o.LWS); err != nil {
			continue
		}
		if err := d.startLWS(ctx, c); err != nil {
			if ctx.Err() == nil {
				logf("the LeaderWorkerSet controller, built, did not start: %v", err)
			}
			return
		}
		logf("the LeaderWorkerSet controller is built and serving: LeaderWorkerSet API installed")
		return
	}
}
