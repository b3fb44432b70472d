package cluster

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/dynamoctl/dynamo-operator/internal/await"
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
	g := await.New(t)
	g.Eventually(func() ([]string, error) {
		ep, err := cs.DiscoveryV1().EndpointSlices("default").Get(ctx, "kubernetes", metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		var addrs []string
		for _, e := range ep.Endpoints {
			addrs = append(addrs, e.Addresses...)
		}
		return addrs, nil
	}).Should(gomega.Equal([]string{NodeIP}), "the kubernetes Service's endpoints: the API server's advertise address")
	// The service account controller only works with the signing key set up.
	g.Eventually(func() error {
		_, err := cs.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return err
	}).Should(gomega.Succeed(), "the default ServiceAccount: the controller manager works")
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	checkAuditsTheOperatorOnly(t, ctx, c)

	c.Stop()
	stopped = true
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); err == nil {
			t.Errorf("process %d still running after Stop", pid)
		}
	}
}

// checkAuditsTheOperatorOnly: the audit log holds the operator's writes
// (the counts of what a reconcile wrote read them), and not the
// administrator's, which would only make it large.
func checkAuditsTheOperatorOnly(t *testing.T, ctx context.Context, c *Cluster) {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", c.OperatorKubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	op := kubernetes.NewForConfigOrDie(cfg)
	// Allowed or not, a write is recorded.
	_, _ = op.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "by-operator"}}, metav1.CreateOptions{})
	// The API server logs a request once it has answered it.
	await.New(t).Eventually(func() ([]string, error) { return OperatorWrites(c.AuditLog()) }).
		Should(gomega.Equal([]string{"POST /api/v1/namespaces/default/configmaps"}), "the operator's writes in the audit log")
	admin, err := WritesBy(c.AuditLog(), AdminUser)
	if err != nil {
		t.Fatal(err)
	}
	if len(admin) > 0 {
		t.Errorf("the administrator's writes are in the audit log: %v", admin)
	}
}
