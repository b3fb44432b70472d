package cluster

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

func TestMain(m *testing.M) { os.Exit(TestMainInNamespace(m)) }

// TestClusterStartsAndStops runs the whole control plane, checks what the
// issue found matters (the kubernetes Service reaches the API server's
// advertised address; service account tokens work, which the controller
// manager's controllers need), and checks Stop leaves no process behind.
func TestClusterStartsAndStops(t *testing.T) {
	bin, err := BinDir()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	c, err := Start(ctx, Config{Dir: t.TempDir(), BinDir: bin, HostPort: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("control plane healthy after %s", time.Since(start).Round(time.Millisecond))
	var pids []int
	for _, p := range c.procs {
		pids = append(pids, p.Pid())
	}
	stopped := false
	defer func() {
		if !stopped {
			c.Stop()
		}
	}()

	cs := kubernetes.NewForConfigOrDie(c.AdminConfig())
	var slices string
	deadline := time.Now().Add(30 * time.Second)
	for {
		ep, err := cs.DiscoveryV1().EndpointSlices("default").Get(ctx, "kubernetes", metav1.GetOptions{})
		if err == nil && len(ep.Endpoints) > 0 && len(ep.Endpoints[0].Addresses) > 0 {
			slices = ep.Endpoints[0].Addresses[0]
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the kubernetes Service has no endpoints: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if slices != NodeIP {
		t.Errorf("kubernetes endpoint %s, want the advertise address %s", slices, NodeIP)
	}
	// The service account controller only works with the signing key set up.
	for {
		_, err := cs.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no default ServiceAccount: the controller manager does not work: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	c.Stop()
	stopped = true
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); err == nil {
			t.Errorf("process %d still running after Stop", pid)
		}
	}
}
