package workers

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dynamoctl/dynamo-operator/internal/await"
	"github.com/dynamoctl/dynamo-operator/sim/cluster"
	"github.com/dynamoctl/dynamo-operator/sim/command"
)

func TestMain(m *testing.M) { os.Exit(cluster.TestMainInNamespace(m)) }

func do(t *testing.T, h http.Handler, method, path, body string) (int, string) {
	t.Helper()
	rr := httptest.NewRecorder()
	h.ServeHTTP(rr, httptest.NewRequest(method, path, strings.NewReader(body)))
	return rr.Code, rr.Body.String()
}

func TestWorkerLoRALifecycle(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	rec := NewRecorder(clk)
	w := NewWorker("ns/pod-a", "10.244.0.9:9090", rec)

	if code, _ := do(t, w, "GET", "/health", ""); code != 200 {
		t.Errorf("/health: %d", code)
	}
	if code, body := do(t, w, "POST", "/v1/loras", `{"lora_name":"sql","source":{"uri":"hf://org/sql"}}`); code != 200 || !strings.Contains(body, "loaded") {
		t.Errorf("load: %d %s", code, body)
	}
	if code, body := do(t, w, "POST", "/v1/loras", `{"lora_name":"x"}`); code != 400 || !strings.Contains(body, "source.uri") {
		t.Errorf("load without a source: %d %s", code, body)
	}
	if _, body := do(t, w, "GET", "/v1/loras", ""); !strings.Contains(body, `"lora_name":"sql"`) {
		t.Errorf("list after load: %s", body)
	}
	if code, _ := do(t, w, "DELETE", "/v1/loras/sql", ""); code != 200 {
		t.Errorf("unload: %d", code)
	}
	if code, _ := do(t, w, "DELETE", "/v1/loras/sql", ""); code != 404 {
		t.Errorf("second unload: %d, want 404", code)
	}
	if _, body := do(t, w, "GET", "/v1/loras", ""); strings.Contains(body, "sql") {
		t.Errorf("list after unload: %s", body)
	}
	calls := rec.Calls()
	if len(calls) != 7 {
		t.Fatalf("recorded %d calls, want 7", len(calls))
	}
	if c := calls[1]; c.Method != "POST" || c.Path != "/v1/loras" || c.Pod != "ns/pod-a" || !strings.Contains(c.Body, "hf://org/sql") || !c.Time.Equal(clk.Now()) {
		t.Errorf("second call recorded as %+v", c)
	}
}

// TestWorkerServesOnPodAddress needs the simulator's namespace, where the
// pod CIDR is local: a worker binds a pod address and answers there, and
// stops answering when its pod is marked down.
func TestWorkerServesOnPodAddress(t *testing.T) {
	m := NewManager(NewRecorder(clocktesting.NewFakeClock(time.Now())))
	defer m.stopAll()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Env: []corev1.EnvVar{
			{Name: "DYN_SYSTEM_ENABLED", Value: "true"}, {Name: "DYN_SYSTEM_PORT", Value: "9090"},
		}}}},
		Status: corev1.PodStatus{PodIP: "10.244.7.9"},
	}
	if err := m.start(pod); err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Timeout: 2 * time.Second}
	var resp *http.Response
	await.New(t).Eventually(func() (err error) {
		resp, err = hc.Get("http://10.244.7.9:9090/live")
		return err
	}).WithPolling(20*time.Millisecond).Should(gomega.Succeed(), "the worker answering")
	_ = resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("/live: %d", resp.StatusCode)
	}
	m.SetDown("ns/p", true)
	if _, err := hc.Get("http://10.244.7.9:9090/live"); err == nil {
		t.Error("a worker marked down still answers")
	}
}

// A worker whose address cannot be bound yet (in the simulator: the address
// of a pod its kubelet ran a moment ago, whose route goes until the kernel
// has destroyed that pod's network namespace) is started again once it can:
// here the port is held by another listener, then released.
func TestWorkerBindIsRetried(t *testing.T) {
	const addr = "10.244.7.10:9090"
	blocker, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	m := NewManager(NewRecorder(clocktesting.NewFakeClock(time.Now())))
	defer m.stopAll()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "q"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Env: []corev1.EnvVar{
			{Name: "DYN_SYSTEM_PORT", Value: "9090"},
		}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.244.7.10"},
	}
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	if err := store.Add(pod); err != nil {
		t.Fatal(err)
	}
	m.pods = store
	m.sync(pod)
	if got := m.Serving()["ns/q"]; got != "" {
		t.Fatalf("serving at %q while the address is held", got)
	}
	_ = blocker.Close()
	await.New(t).Eventually(func() string { return m.Serving()["ns/q"] }).WithTimeout(5*time.Second).
		ShouldNot(gomega.BeEmpty(), "the worker started again once its address is free")
	resp, err := (&http.Client{Timeout: 2 * time.Second}).Get("http://" + addr + "/live")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
}

// /live answers at once, /health only once the simulated model load is
// done; a model that never loads never gets healthy.
func TestModelLoad(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	rec := NewRecorder(clk)
	w := NewLoadingWorker("ns/w", "10.244.0.9:9090", rec, 3*time.Second, false)
	if code, _ := do(t, w, "GET", "/live", ""); code != 200 {
		t.Errorf("/live while loading: %d", code)
	}
	if code, _ := do(t, w, "GET", "/health", ""); code != 503 {
		t.Errorf("/health while loading: %d, want 503", code)
	}
	clk.Step(3 * time.Second)
	if code, _ := do(t, w, "GET", "/health", ""); code != 200 {
		t.Errorf("/health after the load: %d", code)
	}
	never := NewLoadingWorker("ns/n", "10.244.0.10:9090", rec, 0, true)
	clk.Step(time.Hour)
	if code, _ := do(t, never, "GET", "/health", ""); code != 503 {
		t.Errorf("/health of a model that never loads: %d", code)
	}
}

func TestEndpointsFromEnv(t *testing.T) {
	mk := func(labels map[string]string, env ...corev1.EnvVar) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Env: env}}}}
	}
	enabled := corev1.EnvVar{Name: "DYN_SYSTEM_ENABLED", Value: "true"}
	cases := []struct {
		name string
		pod  *corev1.Pod
		want Endpoints
	}{
		{"no system server without DYN_SYSTEM_ENABLED or DYN_SYSTEM_PORT", mk(nil, corev1.EnvVar{Name: "DYN_LOG", Value: "debug"}), Endpoints{}},
		{"system server from DYN_SYSTEM_PORT alone (current runtimes)", mk(nil, corev1.EnvVar{Name: "DYN_SYSTEM_PORT", Value: "9345"}), Endpoints{SystemPort: 9345}},
		{"no system server on a disabled port", mk(nil, corev1.EnvVar{Name: "DYN_SYSTEM_PORT", Value: "-1"}), Endpoints{}},
		{"system port from env", mk(nil, enabled, corev1.EnvVar{Name: "DYN_SYSTEM_PORT", Value: "9345"}), Endpoints{SystemPort: 9345}},
		{"system port default", mk(nil, enabled), Endpoints{SystemPort: 9090}},
		{"frontend default port", mk(map[string]string{ComponentTypeLabel: "frontend"}, enabled), Endpoints{SystemPort: 9090, HTTPPort: 8000}},
		{"frontend port from env", mk(map[string]string{ComponentTypeLabel: "frontend"}, corev1.EnvVar{Name: "DYN_HTTP_PORT", Value: "8787"}), Endpoints{HTTPPort: 8787}},
	}
	sshd := mk(nil, enabled)
	sshd.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "ssh", ContainerPort: 2222}}
	sshd.Spec.Containers[0].ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("ssh")}}}
	sshd.Spec.Containers[0].LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(2222)}}}
	onSystem := mk(nil, enabled)
	onSystem.Spec.Containers[0].ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(9090)}}}
	cases = append(cases,
		struct {
			name string
			pod  *corev1.Pod
			want Endpoints
		}{"a TCP-probed port (an MPI worker's sshd) is listened on, once", sshd, Endpoints{SystemPort: 9090, ListenPorts: []int{2222}}},
		struct {
			name string
			pod  *corev1.Pod
			want Endpoints
		}{"a TCP probe of the system port adds nothing", onSystem, Endpoints{SystemPort: 9090}},
	)
	for _, c := range cases {
		if diff := cmp.Diff(c.want, EndpointsOf(c.pod)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, diff)
		}
	}
}

func TestWorkerFailsLoadsAndForgets(t *testing.T) {
	rec := NewRecorder(clocktesting.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)))
	w := NewWorker("ns/pod-a", "10.244.0.9:9090", rec)
	w.SetFailLoads(true)
	if code, body := do(t, w, "POST", "/v1/loras", `{"lora_name":"org/sql","source":{"uri":"s3://b/sql"}}`); code != 500 || !strings.Contains(body, "simulated failure") {
		t.Errorf("load on a failing worker: %d %s", code, body)
	}
	if got := w.LoRAs(); len(got) != 0 {
		t.Errorf("a failed load left %v loaded", got)
	}
	w.SetFailLoads(false)
	if code, _ := do(t, w, "POST", "/v1/loras", `{"lora_name":"org/sql","source":{"uri":"s3://b/sql"}}`); code != 200 {
		t.Errorf("load once failures stop: %d", code)
	}
	if got := w.LoRAs(); len(got) != 1 || got[0] != "org/sql" {
		t.Errorf("loaded %v, want [org/sql]", got)
	}
	w.Forget()
	if got := w.LoRAs(); len(got) != 0 {
		t.Errorf("after Forget: %v", got)
	}
	// A name with a slash, escaped into one path segment as the operator
	// sends it, is the adapter's name.
	do(t, w, "POST", "/v1/loras", `{"lora_name":"org/sql","source":{"uri":"s3://b/sql"}}`)
	rr := httptest.NewRecorder()
	w.ServeHTTP(rr, httptest.NewRequest("DELETE", "/v1/loras/org%2Fsql", nil))
	if rr.Code != 200 || len(w.LoRAs()) != 0 {
		t.Errorf("DELETE /v1/loras/org%%2Fsql: %d, left %v", rr.Code, w.LoRAs())
	}
}

func TestEndpointsFromCommand(t *testing.T) {
	mk := func(componentType string, command, args []string, env ...corev1.EnvVar) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{ComponentLabel: "c", ComponentTypeLabel: componentType}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Command: command, Args: args, Env: env}}},
		}
	}
	sh := []string{"/bin/sh", "-c"}
	systemPort := corev1.EnvVar{Name: "DYN_SYSTEM_PORT", Value: "9090"}
	cases := map[string]struct {
		pod  *corev1.Pod
		want Endpoints
	}{
		"a main component running the frontend serves its HTTP port (Dynamo's planner graphs)": {
			pod:  mk("main", sh, []string{"python3 -m dynamo.frontend --http-port 8000 --router-mode kv"}),
			want: Endpoints{HTTPPort: 8000},
		},
		"the frontend's --http-port, whatever DYN_HTTP_PORT says": {
			pod:  mk("frontend", []string{"python3"}, []string{"-m", "dynamo.frontend", "--http-port=8123"}, corev1.EnvVar{Name: "DYN_HTTP_PORT", Value: "8000"}),
			want: Endpoints{HTTPPort: 8123},
		},
		"the frontend as the operator renders it, with a system port": {
			pod:  mk("frontend", []string{"python3"}, []string{"-m", "dynamo.frontend"}, corev1.EnvVar{Name: "DYN_HTTP_PORT", Value: "8000"}, systemPort),
			want: Endpoints{SystemPort: 9090, HTTPPort: 8000},
		},
		"a pod labelled frontend whose command is an engine serves no HTTP port": {
			pod:  mk("frontend", []string{"python3", "-m", "dynamo.vllm"}, nil, systemPort),
			want: Endpoints{SystemPort: 9090},
		},
		"$(VAR) in args, as the kubelet substitutes it": {
			pod:  mk("frontend", []string{"python3", "-m", "dynamo.frontend"}, []string{"--http-port=$(FRONTEND_PORT)"}, corev1.EnvVar{Name: "FRONTEND_PORT", Value: "8123"}),
			want: Endpoints{HTTPPort: 8123},
		},
		"a worker: the system port from env": {
			pod:  mk("worker", sh, []string{"python3 -m dynamo.vllm --model m 2>&1 | tee /tmp/vllm.log"}, systemPort),
			want: Endpoints{SystemPort: 9090},
		},
		"the system port set in the script": {
			pod:  mk("worker", sh, []string{"DYN_SYSTEM_PORT=9345 python3 -m dynamo.sglang --model-path m"}),
			want: Endpoints{SystemPort: 9345},
		},
		"the planner's metrics port": {
			pod:  mk("planner", sh, []string{"python3 -m planner_sla --environment=kubernetes --prometheus-port=9085"}),
			want: Endpoints{MetricsPort: 9085},
		},
		"no command: the frontend label, as before": {
			pod:  mk("frontend", nil, nil, corev1.EnvVar{Name: "DYN_HTTP_PORT", Value: "8787"}),
			want: Endpoints{HTTPPort: 8787},
		},
		"a command starting no Python module: env and label, as before": {
			pod:  mk("frontend", sh, []string{"sleep infinity"}, systemPort),
			want: Endpoints{SystemPort: 9090, HTTPPort: 8000},
		},
	}
	for name, c := range cases {
		if diff := cmp.Diff(c.want, EndpointsOf(c.pod)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
}

// Failover's engines each serve their own system server, the standby's a
// worker of its own; the endpoint picker serves the gRPC health service its
// probes call.
func TestEndpointsOfEnginesAndPicker(t *testing.T) {
	engine := func(name, port string) corev1.Container {
		return corev1.Container{Name: name, Command: []string{"python3", "-m", "dynamo.vllm"},
			Env: []corev1.EnvVar{{Name: "DYN_SYSTEM_PORT", Value: port}}}
	}
	grpcProbe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 9003}}}
	cases := map[string]struct {
		containers []corev1.Container
		want       Endpoints
	}{
		"failover's active and standby engines": {
			containers: []corev1.Container{engine("engine-0", "9090"), engine("engine-1", "9091")},
			want:       Endpoints{SystemPort: 9090, StandbySystemPorts: []int{9091}},
		},
		"the endpoint picker, probed over gRPC": {
			containers: []corev1.Container{{Name: "main", Args: []string{"-grpc-health-port", "9003"},
				Env: []corev1.EnvVar{{Name: "DYN_SYSTEM_PORT", Value: "9090"}}, StartupProbe: grpcProbe, ReadinessProbe: grpcProbe}},
			want: Endpoints{SystemPort: 9090, GRPCHealthPorts: []int{9003}},
		},
	}
	for name, c := range cases {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{ComponentLabel: "c"}},
			Spec:       corev1.PodSpec{Containers: c.containers},
		}
		if diff := cmp.Diff(c.want, EndpointsOf(pod)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
}

// On a pod address, a componentType main pod whose shell starts the frontend
// serves its HTTP port, and the exec readiness probe of Dynamo's planner
// graphs, run as the prober runs it, passes against it.
func TestMainComponentFrontendPassesItsExecProbe(t *testing.T) {
	m := NewManager(NewRecorder(clocktesting.NewFakeClock(time.Now())))
	defer m.stopAll()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "fe", Labels: map[string]string{ComponentLabel: "fe", ComponentTypeLabel: "main"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main",
			Command: []string{"/bin/sh", "-c"}, Args: []string{"python3 -m dynamo.frontend --http-port 8000 --router-mode kv"}}}},
		Status: corev1.PodStatus{PodIP: "10.244.7.11"},
	}
	if err := m.start(pod); err != nil {
		t.Fatal(err)
	}
	probe := []string{"/bin/sh", "-c", `curl -s http://localhost:8000/health | jq -e ".status == \"healthy\""`}
	r := &command.Runner{Host: pod.Status.PodIP}
	await.New(t).Eventually(func() (int, error) {
		res, err := r.Exec(context.Background(), probe)
		return res.Code, err
	}).WithPolling(20*time.Millisecond).Should(gomega.Equal(0), "the readiness probe passing")
	m.SetDown("ns/fe", true)
	if res, err := r.Exec(context.Background(), probe); err != nil || res.Code == 0 {
		t.Errorf("the probe of a stopped frontend: exit %d, %v; want a failure", res.Code, err)
	}
}
