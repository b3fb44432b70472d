package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/internal/await"
	"github.com/dynamoctl/dynamo-operator/sim/daemon"
	"github.com/dynamoctl/dynamo-operator/sim/faults"
)

// TestMain lets this test binary serve as the daemon that up starts (up
// runs its own executable with "daemon").
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "daemon" {
		if err := cmdDaemon(os.Args[2:]); err != nil {
			os.Stderr.WriteString("daemon: " + err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestUpApplyFaultDown drives the CLI from the host as a user does: up
// (the daemon in its own network namespace, the API server through the
// forwarded loopback port), a GPU workload, a fault, down — and then checks
// that no process of the simulator is left.
func TestUpApplyFaultDown(t *testing.T) {
	if _, err := (&upFlags{binDir: ptr.To(os.Getenv("KUBEBUILDER_ASSETS"))}).resolveBinDir(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	t.Cleanup(func() {
		if pid := daemon.ReadPid(dir); pid != 0 && alive(pid) {
			_ = stopDaemon(dir, pid, 10*time.Second)
		}
	})
	// No LeaderWorkerSet controller: not what this test is about, and
	// make test does not build it (up would build it in the background).
	err := cmdUp([]string{"--state-dir=" + dir, "--operator=", "--lws=", "--pod-ready-delay=100ms",
		"--pool=name=g,count=2,gpus=2,product=NVIDIA-H100-80GB-HBM3,memory=81559"})
	if err != nil {
		t.Fatalf("up: %v\n%s", err, tail(daemon.LogPath(dir), 20))
	}
	pid := daemon.ReadPid(dir)
	if !alive(pid) {
		t.Fatalf("no daemon running after up (pid %d)", pid)
	}
	if err := cmdUp([]string{"--state-dir=" + dir, "--operator="}); err == nil || !strings.Contains(err.Error(), "already runs") {
		t.Errorf("a second up on the same state directory: %v", err)
	}

	c, err := kubeClient(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	labels := map[string]string{componentLabel: "w"}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](3),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				// The system server, where the fake worker answers, runs
				// only when the env says so, as Dynamo's runtime.
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "w:1",
					Env:       []corev1.EnvVar{{Name: "DYN_SYSTEM_ENABLED", Value: "true"}},
					Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}}}}},
			},
		},
	}
	if err := c.Create(ctx, dep); err != nil {
		t.Fatal(err)
	}
	cl := daemon.NewClient(dir)
	await.New(t).Eventually(func() (string, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(dep), dep); err != nil {
			return "", err
		}
		serving, err := cl.Workers(ctx)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("%d of 3 replicas available, %d fake workers serving", dep.Status.AvailableReplicas, len(serving)), nil
	}).WithTimeout(60 * time.Second).Should(gomega.Equal("3 of 3 replicas available, 3 fake workers serving"))
	msg, err := cl.Fault(ctx, faults.Request{Kind: "gpu-failure", Node: "g-0", Count: 2})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(msg, "0 left") {
		t.Errorf("gpu-failure: %s", msg)
	}
	if _, err := cl.Fault(ctx, faults.Request{Kind: "operator-restart"}); err == nil {
		t.Error("operator-restart succeeded though the simulator runs no operator")
	}

	if err := cmdDown([]string{"--state-dir=" + dir}); err != nil {
		t.Fatal(err)
	}
	if syscall.Kill(pid, 0) == nil && alive(pid) {
		t.Errorf("daemon %d still runs after down", pid)
	}
	if left := processesMentioning(dir); len(left) > 0 {
		t.Errorf("processes left after down:\n%s", strings.Join(left, "\n"))
	}
	if _, err := os.Stat(dir + "/logs"); err != nil {
		t.Errorf("down removed the logs: %v", err)
	}
}

// processesMentioning lists running processes whose command line names s.
func processesMentioning(s string) []string {
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		cmd, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !strings.Contains(string(cmd), s) {
			continue
		}
		stat, _ := os.ReadFile("/proc/" + e.Name() + "/stat")
		if i := strings.LastIndexByte(string(stat), ')'); i > 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
			continue
		}
		out = append(out, e.Name()+": "+strings.ReplaceAll(string(cmd), "\x00", " "))
	}
	return out
}
