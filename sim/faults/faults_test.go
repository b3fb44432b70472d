package faults

import (
	"context"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/dynamoctl/dynamo-operator/internal/await"
	"github.com/dynamoctl/dynamo-operator/sim/cluster"
	"github.com/dynamoctl/dynamo-operator/sim/nodes"
)

func TestMain(m *testing.M) { os.Exit(cluster.TestMainInNamespace(m)) }

func TestPickIsSeeded(t *testing.T) {
	names := []string{"c", "a", "d", "b", "e"}
	for seed := range uint64(20) {
		a := pick(rand.New(rand.NewPCG(seed, seed)), append([]string(nil), names...))
		b := pick(rand.New(rand.NewPCG(seed, seed)), []string{"e", "d", "c", "b", "a"})
		if a != b {
			t.Fatalf("seed %d picked %s and %s from the same names in another order", seed, a, b)
		}
	}
}

func TestUnknownFault(t *testing.T) {
	_, err := Inject(context.Background(), Env{}, Request{Kind: "meteor"})
	if err == nil || !strings.Contains(err.Error(), "node-loss") {
		t.Errorf("want an error listing the known faults, got %v", err)
	}
}

// TestFaultsOnARealCluster injects the faults that act through the API
// against a running control plane with KWOK nodes, and checks what the
// cluster makes of them.
func TestFaultsOnARealCluster(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	_, cs := nodes.StartTestCluster(ctx, t, nodes.KWOKOptions{LeaseDuration: 8 * time.Second},
		nodes.Pool{Name: "g", Count: 3, GPUs: 8, Product: "H100", MemoryMiB: 80000})
	// Faults act on nodes that run: before they are Ready, KWOK's
	// node-initialize stage still writes their status.
	g := await.New(t)
	g.Eventually(func() int {
		ready := 0
		for _, name := range []string{"g-0", "g-1", "g-2"} {
			if n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}); err == nil && hasCondition(n, corev1.NodeReady, corev1.ConditionTrue) {
				ready++
			}
		}
		return ready
	}).WithTimeout(60*time.Second).Should(gomega.Equal(3), "nodes Ready")
	env := Env{Client: cs, Clock: clock.RealClock{}}

	t.Run("gpu-failure", func(t *testing.T) {
		msg, err := Inject(ctx, env, Request{Kind: "gpu-failure", Node: "g-1", Count: 3})
		if err != nil {
			t.Fatal(err)
		}
		n, err := cs.CoreV1().Nodes().Get(ctx, "g-1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if q := n.Status.Allocatable[nodes.GPUResource]; q.Value() != 5 {
			t.Errorf("allocatable GPUs %s after 3 of 8 failed (%s)", q.String(), msg)
		}
		if !hasCondition(n, ConditionGPUHealthy, corev1.ConditionFalse) {
			t.Errorf("no GPUHealthy=False condition: %+v", n.Status.Conditions)
		}
		tainted := false
		for _, taint := range n.Spec.Taints {
			tainted = tainted || (taint.Key == TaintGPUUnhealthy && taint.Effect == corev1.TaintEffectNoSchedule)
		}
		if !tainted {
			t.Errorf("no %s taint: %+v", TaintGPUUnhealthy, n.Spec.Taints)
		}
	})

	t.Run("lease-expiry", func(t *testing.T) {
		leases := cs.CoordinationV1().Leases("default")
		now := metav1.NewMicroTime(time.Now())
		_, err := leases.Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: NamespaceLeaseName},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("v1"), LeaseDurationSeconds: ptr.To[int32](30), RenewTime: &now},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Inject(ctx, env, Request{Kind: "lease-expiry", Namespace: "default"}); err != nil {
			t.Fatal(err)
		}
		l, err := leases.Get(ctx, NamespaceLeaseName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if age := time.Since(l.Spec.RenewTime.Time); age <= 30*time.Second {
			t.Errorf("the lease was renewed %s ago; it should be older than its 30 s duration", age)
		}
	})

	t.Run("node-loss", func(t *testing.T) {
		if _, err := Inject(ctx, env, Request{Kind: "node-loss", Node: "g-2"}); err != nil {
			t.Fatal(err)
		}
		// The node lifecycle controller's grace period is 20 s.
		g := await.New(t)
		g.Eventually(func() ([]corev1.NodeCondition, error) {
			n, err := cs.CoreV1().Nodes().Get(ctx, "g-2", metav1.GetOptions{})
			if err != nil {
				return nil, gomega.StopTrying("reading g-2").Wrap(err)
			}
			return n.Status.Conditions, nil
		}).WithTimeout(60*time.Second).Should(gomega.ContainElement(gomega.And(
			gomega.HaveField("Type", corev1.NodeReady), gomega.HaveField("Status", corev1.ConditionUnknown))),
			"g-2 NotReady after its heartbeats stopped")
		n, err := cs.CoreV1().Nodes().Get(ctx, "g-0", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !hasCondition(n, corev1.NodeReady, corev1.ConditionTrue) {
			t.Errorf("g-0, not lost, is not Ready: %+v", n.Status.Conditions)
		}
	})
}

func hasCondition(n *corev1.Node, typ corev1.NodeConditionType, status corev1.ConditionStatus) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == typ {
			return c.Status == status
		}
	}
	return false
}

// fakeKubelet records kills; the real runner is exercised by the fault
// scenarios (scenarios/faults.feature) on the simulator.
type fakeKubelet struct {
	running []string
	killed  []string
}

func (f *fakeKubelet) Running() []string { return f.running }

func (f *fakeKubelet) Kill(ns, name string) ([]int, error) {
	f.killed = append(f.killed, ns+"/"+name)
	return []int{42}, nil
}

func TestPodKillTargets(t *testing.T) {
	ctx := context.Background()
	k := &fakeKubelet{running: []string{"sys/op-b", "other/x", "sys/op-a"}}
	env := Env{Kubelet: k}
	for seed := range uint64(10) {
		k.killed = nil
		if _, err := Inject(ctx, env, Request{Kind: "pod-kill", Namespace: "sys", Seed: seed}); err != nil {
			t.Fatal(err)
		}
		again := &fakeKubelet{running: []string{"sys/op-a", "sys/op-b", "other/x"}}
		if _, err := Inject(ctx, Env{Kubelet: again}, Request{Kind: "pod-kill", Namespace: "sys", Seed: seed}); err != nil {
			t.Fatal(err)
		}
		if len(k.killed) != 1 || !strings.HasPrefix(k.killed[0], "sys/") || k.killed[0] != again.killed[0] {
			t.Fatalf("seed %d killed %v then %v; want one pod of sys, the same both times", seed, k.killed, again.killed)
		}
	}
	k.killed = nil
	if _, err := Inject(ctx, env, Request{Kind: "pod-kill", Pod: "op-b", Namespace: "sys"}); err != nil || k.killed[0] != "sys/op-b" {
		t.Errorf("--pod op-b --namespace sys killed %v (%v)", k.killed, err)
	}
	if _, err := Inject(ctx, env, Request{Kind: "pod-kill", Namespace: "none"}); err == nil {
		t.Error("pod-kill in a namespace with no process pod: want an error")
	}
	if _, err := Inject(ctx, Env{}, Request{Kind: "pod-kill"}); err == nil || !strings.Contains(err.Error(), "runs no pod") {
		t.Errorf("pod-kill without a kubelet: want an error saying so, got %v", err)
	}
}
