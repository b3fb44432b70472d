package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/dynamoctl/dynamo-operator/internal/await"
)

// crdWait is how long a CRD install waits to be served (envtest's default,
// 10 s, is too short on a loaded machine).
const crdWait = 90 * time.Second

// lwsBuild finds make lws's controller and CRDs in the nearest parent
// directory's .cache. The test runs where the controller is built
// beforehand, make features-sim (DYNAMO_SIM_LWS=1), as the simulator's
// multinode features: its cold build is longer than make test itself.
func lwsBuild(t *testing.T) (bin, crds string) {
	t.Helper()
	if os.Getenv("DYNAMO_SIM_LWS") == "" {
		t.Skip("DYNAMO_SIM_LWS is not set: make features-sim builds the LeaderWorkerSet controller and runs this test")
	}
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		bin = filepath.Join(dir, ".cache", "bin", "lws-controller")
		if _, err := os.Stat(bin); err == nil {
			return bin, filepath.Join(dir, ".cache", "lws", "crds")
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no LeaderWorkerSet controller in .cache/bin: run make lws")
		}
		dir = parent
	}
}

// TestLeaderWorkerSetController runs the real LeaderWorkerSet controller
// against the control plane and checks what the operator relies on: its
// webhooks answer (the LeaderWorkerSet is defaulted, each group's pods get
// the leader's address and their index), and the controller makes a leader
// per group and the group's workers.
func TestLeaderWorkerSetController(t *testing.T) {
	bin, crds := lwsBuild(t)
	kbin, err := BinDir()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := Start(ctx, Config{Dir: t.TempDir(), BinDir: kbin})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	defer func() {
		if t.Failed() {
			log, _ := os.ReadFile(filepath.Join(c.LogDir(), lwsProcess+".log"))
			t.Logf("the controller's log:\n%s", log)
		}
	}()
	if _, err := envtest.InstallCRDs(c.AdminConfig(), envtest.CRDInstallOptions{Paths: []string{crds}, ErrorIfPathMissing: true, MaxTime: crdWait}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := c.StartLWS(ctx, bin); err != nil {
		t.Fatal(err)
	}
	t.Logf("LeaderWorkerSet controller serving after %s", time.Since(start).Round(time.Millisecond))

	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, lwsv1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	cl, err := client.New(c.AdminConfig(), client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	tmpl := corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "engine:1"}}}}
	lws := &lwsv1.LeaderWorkerSet{
		ObjectMeta: metav1.ObjectMeta{Name: "engine", Namespace: "default"},
		Spec: lwsv1.LeaderWorkerSetSpec{
			Replicas:             ptr.To[int32](2),
			StartupPolicy:        lwsv1.LeaderCreatedStartupPolicy,
			LeaderWorkerTemplate: lwsv1.LeaderWorkerTemplate{Size: ptr.To[int32](3), WorkerTemplate: tmpl},
		},
	}
	if err := cl.Create(ctx, lws); err != nil {
		t.Fatalf("creating a LeaderWorkerSet (its webhooks must answer): %v", err)
	}
	// Defaults only its mutating webhook sets (the CRD has none for them).
	if lws.Spec.NetworkConfig == nil || lws.Spec.RolloutStrategy.RollingUpdateConfiguration == nil {
		t.Errorf("the LeaderWorkerSet was not defaulted by its mutating webhook: %+v", lws.Spec)
	}

	// 2 groups of 3: leaders engine-0, engine-1; workers engine-<g>-1, -2.
	want := map[string]string{
		"engine-0": "0", "engine-0-1": "1", "engine-0-2": "2",
		"engine-1": "0", "engine-1-1": "1", "engine-1-2": "2",
	}
	await.New(t).Eventually(func() error { return checkLWSPods(ctx, cl, want) }).
		WithTimeout(90*time.Second).Should(gomega.Succeed(), "the groups' pods")
	t.Logf("all 6 pods of 2 groups created %s after the controller served", time.Since(start).Round(time.Millisecond))
}

// checkLWSPods says what is still missing: a pod, its worker index, or the
// leader address the pod webhook puts in.
func checkLWSPods(ctx context.Context, cl client.Client, want map[string]string) error {
	var pods corev1.PodList
	if err := cl.List(ctx, &pods, client.InNamespace("default")); err != nil {
		return err
	}
	got := map[string]corev1.Pod{}
	for _, p := range pods.Items {
		got[p.Name] = p
	}
	for name, index := range want {
		p, ok := got[name]
		if !ok {
			return fmt.Errorf("no pod %s (have %d pods)", name, len(pods.Items))
		}
		if p.Labels[lwsv1.WorkerIndexLabelKey] != index {
			return fmt.Errorf("pod %s: %s=%q, want %q", name, lwsv1.WorkerIndexLabelKey, p.Labels[lwsv1.WorkerIndexLabelKey], index)
		}
		group := name[:len("engine-0")]
		wantAddr := group + ".engine.default"
		var addr string
		for _, e := range p.Spec.Containers[0].Env {
			if e.Name == lwsv1.LwsLeaderAddress {
				addr = e.Value
			}
		}
		if addr != wantAddr {
			return fmt.Errorf("pod %s: %s=%q, want %q", name, lwsv1.LwsLeaderAddress, addr, wantAddr)
		}
	}
	return nil
}
