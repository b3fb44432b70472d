package probes

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dynamoctl/dynamo-operator/sim/command"
	"github.com/dynamoctl/dynamo-operator/sim/workers"
)

func execProbeOf(argv ...string) *corev1.Probe {
	return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: argv}}}
}

// Exec probes run their command against the pod's fake worker: the
// frontend readiness probe of Dynamo's planner test graphs passes on a
// frontend and fails where nothing serves; a command the simulator cannot
// evaluate fails, with the reason.
func TestExecProbeRunsItsCommand(t *testing.T) {
	rec := workers.NewRecorder(clocktesting.NewFakeClock(time.Now()))
	fe := httptest.NewServer(workers.NewFrontend("ns/fe", "fe", rec))
	defer fe.Close()
	_, port, _ := net.SplitHostPort(fe.Listener.Addr().String())
	readiness := fmt.Sprintf(`curl -s http://localhost:%s/health | jq -e ".status == \"healthy\""`, port)
	type result struct {
		OK          bool
		Message     string
		Unevaluated bool
	}
	cases := map[string]struct {
		podIP string
		probe *corev1.Probe
		env   []corev1.EnvVar
		want  result
	}{
		"the planner graphs' frontend readiness, on a frontend": {
			podIP: "127.0.0.1", probe: execProbeOf("/bin/sh", "-c", readiness), want: result{OK: true},
		},
		"the same probe where nothing listens": {
			podIP: "127.0.0.2", probe: execProbeOf("/bin/sh", "-c", readiness),
			want: result{Message: fmt.Sprintf("command %q exited with 4: ", []string{"/bin/sh", "-c", readiness})},
		},
		"$(VAR) from the container's env": {
			podIP: "127.0.0.1", probe: execProbeOf("/bin/sh", "-c", "exit $(CODE)"), env: []corev1.EnvVar{{Name: "CODE", Value: "0"}}, want: result{OK: true},
		},
		"exit 0": {podIP: "127.0.0.1", probe: execProbeOf("/bin/sh", "-c", "exit 0"), want: result{OK: true}},
		"a file check the simulator cannot evaluate": {
			podIP: "127.0.0.1", probe: execProbeOf("cat", "/tmp/healthy"),
			want: result{Message: `exec probe not evaluated: cannot be evaluated by the simulator: cat of files: the simulator's pods have no file system`, Unevaluated: true},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			ok, msg, err := Run(context.Background(), c.podIP, &corev1.Container{Name: "main", Env: c.env}, c.probe, 5*time.Second)
			if err != nil && !errors.Is(err, command.ErrUnsupported) {
				t.Fatalf("error %v is not ErrUnsupported", err)
			}
			if diff := cmp.Diff(c.want, result{ok, msg, err != nil}); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// A probe the simulator cannot evaluate is said once per probe of a pod:
// an Unhealthy event on the pod, and the log.
func TestUnevaluatedProbeIsReportedOnce(t *testing.T) {
	cs := fake.NewClientset()
	var logged []string
	m := &Manager{Client: cs, Clock: clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)),
		Log: func(f string, a ...any) { logged = append(logged, fmt.Sprintf(f, a...)) }}
	pp := &podProbes{m: m}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "u1"}, Spec: corev1.PodSpec{NodeName: "n1"}}
	c := &corev1.Container{Name: "main"}
	d := due{container: c, kind: Readiness}
	pp.unevaluated(context.Background(), pod, d, "exec probe not evaluated: X")
	pp.unevaluated(context.Background(), pod, d, "exec probe not evaluated: X")
	pp.unevaluated(context.Background(), pod, due{container: c, kind: Liveness}, "exec probe not evaluated: Y")
	evs, err := cs.CoreV1().Events("ns").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range evs.Items {
		got = append(got, strings.Join([]string{e.Type, e.Reason, e.InvolvedObject.Name, e.InvolvedObject.FieldPath, e.Source.Component, e.Message}, " | "))
	}
	want := []string{
		"Warning | Unhealthy | p | spec.containers{main} | kubelet | Readiness probe failed: exec probe not evaluated: X",
		"Warning | Unhealthy | p | spec.containers{main} | kubelet | Liveness probe failed: exec probe not evaluated: Y",
	}
	if diff := cmp.Diff(want, got, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if len(logged) != 2 {
		t.Errorf("logged %q, want one line per probe", logged)
	}
}

// A gRPC probe calls the gRPC health service, as the kubelet's: SERVING
// passes, any other status or nothing listening fails, saying why.
func TestGRPCProbeChecksHealth(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := health.NewServer()
	hs.SetServingStatus("inference-extension", healthpb.HealthCheckResponse_SERVING)
	hs.SetServingStatus("draining", healthpb.HealthCheckResponse_NOT_SERVING)
	g := grpc.NewServer()
	healthpb.RegisterHealthServer(g, hs)
	go func() { _ = g.Serve(ln) }()
	defer g.Stop()
	port := int32(ln.Addr().(*net.TCPAddr).Port)
	probe := func(service string) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: port, Service: &service}}}
	}
	for name, tc := range map[string]struct {
		podIP, service string
		ok             bool
		message        string
	}{
		"serving":           {podIP: "127.0.0.1", service: "inference-extension", ok: true},
		"not serving":       {podIP: "127.0.0.1", service: "draining", message: `service unhealthy (responded with "NOT_SERVING")`},
		"nothing listening": {podIP: "127.0.0.2", service: "inference-extension", message: "health check of \"inference-extension\""},
	} {
		ok, msg, err := Run(context.Background(), tc.podIP, &corev1.Container{}, probe(tc.service), 2*time.Second)
		if err != nil || ok != tc.ok || !strings.Contains(msg, tc.message) {
			t.Errorf("%s: ok %v, message %q, error %v; want ok %v, a message containing %q", name, ok, msg, err, tc.ok, tc.message)
		}
	}
}
