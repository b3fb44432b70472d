package kubelet

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/dynamoctl/dynamo-operator/internal/await"
	"github.com/dynamoctl/dynamo-operator/internal/testenv"
	"github.com/dynamoctl/dynamo-operator/sim/cluster"
	"github.com/dynamoctl/dynamo-operator/sim/nodes"
	"github.com/dynamoctl/dynamo-operator/sim/probes"
	"github.com/dynamoctl/dynamo-operator/sim/workers"
)

// crdWait is how long a CRD install waits to be served (envtest's default,
// 10 s, is too short on a loaded machine).
const crdWait = 90 * time.Second

func TestMain(m *testing.M) {
	// envtest.InstallCRDs logs through controller-runtime.
	ctrllog.SetLogger(logr.Discard())
	os.Exit(cluster.TestMainInNamespace(m))
}

// operatorImage is mapped to the operator binary built for the test.
const operatorImage = "ghcr.io/dynamoctl/dynamo-operator"

// sim is a control plane with one KWOK node, fake workers, the prober and
// the runner: what the simulator's daemon runs, minus its CLI.
type sim struct {
	cs      kubernetes.Interface
	admin   *rest.Config
	dir     string
	node    string
	rec     *workers.Recorder
	workers *workers.Manager
	prober  *probes.Manager
	admit   *Admitter
	runner  *Runner
}

func startSim(t *testing.T, ctx context.Context) *sim {
	t.Helper()
	bin, err := cluster.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	op := buildOperator(t)
	dir := t.TempDir()
	// The pods run as a non-root user (as the chart's): the state
	// directory must be passable for it, as .cache/sim is.
	passable(t, dir)
	c, err := cluster.Start(ctx, cluster.Config{Dir: dir, BinDir: bin})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	kctx, stop := context.WithCancel(ctx)
	if err := nodes.StartKWOK(kctx, nodes.KWOKOptions{Kubeconfig: c.AdminKubeconfig(), PodReadyDelay: 100 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(c.AdminConfig())
	pool := nodes.Pool{Name: "gpu", Count: 1, GPUs: 8, Product: "NVIDIA-H100-80GB-HBM3", MemoryMiB: 81559}
	if err := nodes.CreatePools(ctx, cs, []nodes.Pool{pool}); err != nil {
		t.Fatal(err)
	}
	if err := nodes.WarmIPPool(ctx, cs, pool.NodeName(0)); err != nil {
		t.Fatal(err)
	}
	if _, err := envtest.InstallCRDs(c.AdminConfig(), envtest.CRDInstallOptions{Paths: []string{"../../crds"}, ErrorIfPathMissing: true, MaxTime: crdWait}); err != nil {
		t.Fatal(err)
	}
	s := &sim{cs: cs, admin: c.AdminConfig(), dir: dir, node: pool.NodeName(0), rec: workers.NewRecorder(clock.RealClock{})}
	s.workers = workers.NewManager(s.rec)
	s.workers.Log = t.Logf
	if err := s.workers.Run(kctx, cs); err != nil {
		t.Fatal(err)
	}
	s.admit = &Admitter{Client: cs, Log: t.Logf, RetryInterval: 500 * time.Millisecond}
	if err := s.admit.Run(kctx); err != nil {
		t.Fatal(err)
	}
	r, err := New(Config{Client: cs, Images: []ImageMapping{{Repo: operatorImage, Path: op}}, Dir: dir,
		APIServerHost: cluster.NodeIP, APIServerPort: cluster.APIServerPort, Log: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Run(kctx); err != nil {
		t.Fatal(err)
	}
	s.runner = r
	s.prober = &probes.Manager{Client: cs, Log: t.Logf, Restart: func(pod *corev1.Pod, container string) bool {
		if r.Restart(pod, container) {
			return true
		}
		s.workers.Restart(pod.Namespace + "/" + pod.Name)
		return false
	}}
	if err := s.prober.Run(kctx); err != nil {
		t.Fatal(err)
	}
	// Stop the pods' processes before the API server goes.
	t.Cleanup(func() { stop(); r.Wait() })
	return s
}

// buildOperator builds bin/dynamo-operator for the test.
func buildOperator(t *testing.T) string {
	t.Helper()
	tmp := t.TempDir()
	passable(t, tmp)
	out := filepath.Join(tmp, "dynamo-operator")
	cmd := testenv.GoBuild(context.Background(), "", out, "github.com/dynamoctl/dynamo-operator/operator/cmd/manager", "")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the operator: %v\n%s", err, b)
	}
	return out
}

// passable opens a t.TempDir (and its per-test parent, both 0700) to
// other users.
func passable(t *testing.T, dir string) {
	t.Helper()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func httpProbe(path string, port int, period, failures int32) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromInt(port)}},
		PeriodSeconds: period, FailureThreshold: failures, TimeoutSeconds: 1,
	}
}

// operatorPod runs the operator as the chart's Deployment would: its own
// ServiceAccount, POD_NAMESPACE from the downward API, probes on /readyz.
func (s *sim) operatorPod(ns, name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": "op"}},
		Spec: corev1.PodSpec{
			NodeName:                      s.node,
			ServiceAccountName:            "op",
			TerminationGracePeriodSeconds: ptr.To[int64](10),
			Containers: []corev1.Container{{
				Name: "manager", Image: operatorImage + ":test",
				Command:         []string{"/dynamo-operator"},
				Args:            []string{"--enable-webhooks=false", "--metrics-bind-address=0", "--health-probe-bind-address=:8081"},
				Env:             []corev1.EnvVar{{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}},
				ReadinessProbe:  httpProbe("/readyz", 8081, 1, 2),
				SecurityContext: &corev1.SecurityContext{RunAsUser: ptr.To[int64](65532), RunAsGroup: ptr.To[int64](65532)},
			}},
		},
	}
}

// waitFor waits up to timeout for ok to say done; the last error ok
// returned is reported if it never does.
func waitFor(t *testing.T, what string, timeout time.Duration, ok func() (bool, error)) {
	t.Helper()
	await.New(t).Eventually(func() error {
		done, err := ok()
		if done {
			return nil
		}
		if err != nil {
			return err
		}
		return await.ErrNotYet
	}).WithTimeout(timeout).Should(gomega.Succeed(), what)
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func (s *sim) pod(ctx context.Context, ns, name string) (*corev1.Pod, error) {
	return s.cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
}

func pidOf(p *corev1.Pod) int {
	for _, st := range p.Status.ContainerStatuses {
		if n, err := strconv.Atoi(strings.TrimPrefix(st.ContainerID, "sim://")); err == nil && st.State.Running != nil {
			return n
		}
	}
	return 0
}

// TestOperatorPods runs the real operator binary as pods: it authenticates
// as its ServiceAccount (the pod's bound token; what RBAC does not grant is
// forbidden), its readiness follows /readyz, two replicas on one node
// coexist (both bind :8081 in their own network namespace), and deleting
// a pod stops its process.
func TestOperatorPods(t *testing.T) {
	testenv.Long(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	s := startSim(t, ctx)
	const ns = "dynamo-system"
	if _, err := s.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "op"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Read-only everywhere: enough for the operator's caches, nothing more.
	if _, err := s.cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "op-view"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "op-read"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "op", Namespace: ns}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "op-read"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	created := time.Now()
	for _, name := range []string{"op-a", "op-b"} {
		if _, err := s.cs.CoreV1().Pods(ns).Create(ctx, s.operatorPod(ns, name), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Both replicas on the one node become Ready: each answers /readyz on
	// its own pod IP.
	for _, name := range []string{"op-a", "op-b"} {
		waitFor(t, name+" Ready", 2*time.Minute, func() (bool, error) {
			p, err := s.pod(ctx, ns, name)
			return err == nil && podReady(p), err
		})
	}
	t.Logf("two operator pods Ready %s after creation", time.Since(created).Round(time.Millisecond))
	a, _ := s.pod(ctx, ns, "op-a")
	b, _ := s.pod(ctx, ns, "op-b")
	if a.Status.PodIP == b.Status.PodIP || a.Spec.NodeName != b.Spec.NodeName {
		t.Fatalf("pods at %s (%s) and %s (%s): want two addresses on one node", a.Status.PodIP, a.Spec.NodeName, b.Status.PodIP, b.Spec.NodeName)
	}
	for _, p := range []*corev1.Pod{a, b} {
		resp, err := http.Get("http://" + p.Status.PodIP + ":8081/readyz")
		if err != nil {
			t.Fatalf("%s /readyz: %v", p.Name, err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("%s /readyz: %d", p.Name, resp.StatusCode)
		}
	}

	// The token in the pod's projected volume is its ServiceAccount's,
	// bound to the pod; with it, what RBAC does not grant is forbidden.
	tokens, _ := filepath.Glob(filepath.Join(s.dir, "pods", ns+"_op-a", "volumes", "*", "token"))
	if len(tokens) != 1 {
		t.Fatalf("token files of op-a: %v", tokens)
	}
	token, err := os.ReadFile(tokens[0])
	if err != nil {
		t.Fatal(err)
	}
	asPod := rest.AnonymousClientConfig(s.admin)
	asPod.BearerToken = string(token)
	podClient := kubernetes.NewForConfigOrDie(asPod)
	review, err := podClient.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if u := review.Status.UserInfo; u.Username != "system:serviceaccount:"+ns+":op" || fmt.Sprint(u.Extra["authentication.kubernetes.io/pod-name"]) != "[op-a]" {
		t.Errorf("the pod's token authenticates as %s (extra %v), want the ServiceAccount bound to pod op-a", u.Username, u.Extra)
	}
	_, err = podClient.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("creating a ConfigMap with the pod's token: %v, want forbidden", err)
	}
	if _, err := podClient.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("listing pods with the pod's token (granted): %v", err)
	}

	// Readiness follows /readyz: a stopped process stops answering and the
	// pod goes unready; resumed, it is Ready again.
	pid := pidOf(a)
	if pid == 0 {
		t.Fatalf("op-a has no running container: %+v", a.Status.ContainerStatuses)
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "op-a unready while its process is stopped", time.Minute, func() (bool, error) {
		p, err := s.pod(ctx, ns, "op-a")
		return err == nil && !podReady(p), err
	})
	_ = syscall.Kill(pid, syscall.SIGCONT)
	waitFor(t, "op-a Ready again", time.Minute, func() (bool, error) {
		p, err := s.pod(ctx, ns, "op-a")
		return err == nil && podReady(p), err
	})

	// The process's log is where a kubelet keeps it.
	logs, err := os.ReadFile(filepath.Join(s.dir, "logs", "pods", ns+"_op-a.log"))
	if err != nil || !bytes.Contains(logs, []byte("Starting")) {
		t.Errorf("op-a log (%v):\n%s", err, logs)
	}

	// Deleting the pod stops its process.
	if err := s.cs.CoreV1().Pods(ns).Delete(ctx, "op-a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, fmt.Sprintf("op-a's process %d gone", pid), 30*time.Second, func() (bool, error) {
		_, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
		return os.IsNotExist(err), nil
	})
	// The other replica is untouched.
	if p, err := s.pod(ctx, ns, "op-b"); err != nil || !podReady(p) || pidOf(p) != pidOf(b) {
		t.Errorf("op-b after op-a's deletion: err=%v", err)
	}

	// Its node lost, op-b's process dies with the machine and nothing
	// restarts it; no kubelet is left to say so, so its status stays
	// Running and Ready (the node lifecycle controller's to change).
	pidB := pidOf(b)
	s.prober.SetNodeLost(s.node, true)
	if lost := s.runner.LoseNode(s.node); fmt.Sprint(lost) != "["+ns+"/op-b]" {
		t.Errorf("LoseNode stopped %v, want [%s/op-b]", lost, ns)
	}
	waitFor(t, fmt.Sprintf("op-b's process %d gone", pidB), 30*time.Second, func() (bool, error) {
		_, err := os.Stat(fmt.Sprintf("/proc/%d", pidB))
		return os.IsNotExist(err), nil
	})
	await.New(t).Consistently(func() error {
		p, err := s.pod(ctx, ns, "op-b")
		if err != nil {
			return err
		}
		if !podReady(p) || pidOf(p) != pidB || restarts(p) != restarts(b) {
			return fmt.Errorf("op-b's status changed on a lost node: %+v", p.Status.ContainerStatuses)
		}
		return nil
	}).WithTimeout(5 * time.Second).Should(gomega.Succeed())
	if running := s.runner.Running(); len(running) != 0 {
		t.Errorf("the runner still runs %v", running)
	}
}

func restarts(p *corev1.Pod) int32 {
	var n int32
	for _, st := range p.Status.ContainerStatuses {
		n += st.RestartCount
	}
	return n
}

// workerPod is a Dynamo worker pod as the operator renders it, with probes
// on the system port.
func (s *sim) workerPod(ns, name string, annotations map[string]string, readiness, liveness *corev1.Probe) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: annotations,
			Labels: map[string]string{workers.ComponentLabel: "worker", workers.ComponentTypeLabel: "worker"}},
		Spec: corev1.PodSpec{
			NodeName:                      s.node,
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			Containers: []corev1.Container{{
				Name: "main", Image: "nvcr.io/nvidia/ai-dynamo/vllm-runtime:0.4.0",
				Env:            []corev1.EnvVar{{Name: "DYN_SYSTEM_ENABLED", Value: "true"}, {Name: "DYN_SYSTEM_PORT", Value: "9090"}},
				ReadinessProbe: readiness, LivenessProbe: liveness,
			}},
		},
	}
}

func (s *sim) calls(pod, path string, status int) int {
	n := 0
	for _, c := range s.rec.Calls() {
		if c.Pod == pod && c.Path == path && c.Status == status {
			n++
		}
	}
	return n
}

// TestFakeWorkerProbes: a worker whose model never loads is probed and
// never Ready; one whose model loads in 2 s becomes Ready after that; a
// failing liveness probe restarts the worker (restartCount, LoRAs gone).
func TestFakeWorkerProbes(t *testing.T) {
	testenv.Long(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s := startSim(t, ctx)
	const ns = "default"
	pods := s.cs.CoreV1().Pods(ns)
	never := s.workerPod(ns, "never", map[string]string{workers.ModelLoadDelayAnnotation: "never"}, httpProbe("/health", 9090, 1, 1), nil)
	slow := s.workerPod(ns, "slow", map[string]string{workers.ModelLoadDelayAnnotation: "2s"}, httpProbe("/health", 9090, 1, 1), nil)
	for _, p := range []*corev1.Pod{never, slow} {
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	created := time.Now()
	waitFor(t, "slow Ready", time.Minute, func() (bool, error) {
		p, err := s.pod(ctx, ns, "slow")
		return err == nil && podReady(p), err
	})
	if d := time.Since(created); d < 2*time.Second {
		t.Errorf("slow Ready after %s, before its 2 s model load", d)
	}
	// Over a window in which the prober demonstrably probed it (503s
	// recorded), the never-loading worker stayed unready.
	waitFor(t, "never probed 5 times", time.Minute, func() (bool, error) { return s.calls(ns+"/never", "/health", 503) >= 5, nil })
	p, err := s.pod(ctx, ns, "never")
	if err != nil {
		t.Fatal(err)
	}
	if podReady(p) || p.Status.ContainerStatuses[0].Ready {
		t.Errorf("a worker whose model never loads is Ready: %+v", p.Status.Conditions)
	}

	// Liveness on a path the worker does not serve: restarts.
	live := s.workerPod(ns, "dying", nil, nil, httpProbe("/not-served", 9090, 1, 2))
	live.Spec.Containers[0].LivenessProbe.InitialDelaySeconds = 2
	if _, err := pods.Create(ctx, live, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var addr string
	waitFor(t, "dying's worker serving", time.Minute, func() (bool, error) {
		addr = s.workers.Serving()[ns+"/dying"]
		return addr != "", nil
	})
	resp, err := http.Post("http://"+addr+"/v1/loras", "application/json", strings.NewReader(`{"lora_name":"sql","source":{"uri":"hf://org/sql"}}`))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	waitFor(t, "dying restarted", time.Minute, func() (bool, error) {
		p, err := s.pod(ctx, ns, "dying")
		return err == nil && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].RestartCount >= 1, err
	})
	p, _ = s.pod(ctx, ns, "dying")
	if st := p.Status.ContainerStatuses[0]; st.LastTerminationState.Terminated == nil {
		t.Errorf("restarted container has no last state: %+v", st)
	}
	// The worker keeps restarting (its liveness never passes): ask until
	// one run answers.
	var body bytes.Buffer
	waitFor(t, "the restarted worker answering", 30*time.Second, func() (bool, error) {
		r, err := http.Get("http://" + addr + "/v1/loras")
		if err != nil {
			return false, err
		}
		body.Reset()
		_, _ = body.ReadFrom(r.Body)
		_ = r.Body.Close()
		return r.StatusCode == 200, nil
	})
	if strings.Contains(body.String(), "sql") {
		t.Errorf("the restarted worker still has its LoRA: %s", body.String())
	}
}

// TestAdmitterReportsAsTheKubelet: a Dynamo pod whose image cannot be
// pulled, whose env names a Secret that does not exist, or whose Secret
// volume does not exist stays Pending with the kubelet's reasons and
// messages, and starts once the cause is gone; a pod with none of these
// starts (the control that the checks ran and let it through).
func TestAdmitterReportsAsTheKubelet(t *testing.T) {
	testenv.Long(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s := startSim(t, ctx)
	const ns = "default"
	pods := s.cs.CoreV1().Pods(ns)
	const bad = "nvcr.io/nvidia/ai-dynamo/vllm-runtime:9.9"
	s.admit.SetImagePullFailure(bad, true)
	pull := s.workerPod(ns, "pull", nil, nil, nil)
	pull.Spec.Containers[0].Image = bad
	env := s.workerPod(ns, "env", nil, nil, nil)
	env.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "hf-token"}}}}
	vol := s.workerPod(ns, "vol", nil, nil, nil)
	vol.Spec.Volumes = []corev1.Volume{{Name: "certs", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "tls"}}}}
	ok := s.workerPod(ns, "ok", nil, nil, nil)
	for _, p := range []*corev1.Pod{pull, env, vol, ok} {
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waiting := func(name, reason, message string) {
		t.Helper()
		waitFor(t, name+" waiting in "+reason, time.Minute, func() (bool, error) {
			p, err := s.pod(ctx, ns, name)
			if err != nil || len(p.Status.ContainerStatuses) != 1 {
				return false, err
			}
			w := p.Status.ContainerStatuses[0].State.Waiting
			return p.Status.Phase == corev1.PodPending && w != nil && w.Reason == reason && w.Message == message && !podReady(p), nil
		})
	}
	waitFor(t, "ok Ready", time.Minute, func() (bool, error) {
		p, err := s.pod(ctx, ns, "ok")
		return err == nil && podReady(p), err
	})
	waiting("pull", "ImagePullBackOff", `Back-off pulling image "`+bad+`"`)
	waiting("env", "CreateContainerConfigError", `secret "hf-token" not found`)
	waiting("vol", "ContainerCreating", "")
	waitFor(t, "a FailedMount event", time.Minute, func() (bool, error) {
		evs, err := s.cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=vol,reason=FailedMount"})
		return err == nil && len(evs.Items) == 1 && evs.Items[0].Message == `MountVolume.SetUp failed for volume "certs" : secret "tls" not found`, err
	})

	s.admit.SetImagePullFailure(bad, false)
	for _, sec := range []string{"hf-token", "tls"} {
		if _, err := s.cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: sec}, StringData: map[string]string{"k": "v"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"pull", "env", "vol"} {
		waitFor(t, name+" Ready once its cause is gone", time.Minute, func() (bool, error) {
			p, err := s.pod(ctx, ns, name)
			return err == nil && podReady(p) && p.Status.Phase == corev1.PodRunning, err
		})
	}
}
