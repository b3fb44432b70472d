package nodes

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/dynamoctl/dynamo-operator/internal/await"
	"github.com/dynamoctl/dynamo-operator/sim/cluster"
)

func TestMain(m *testing.M) { os.Exit(cluster.TestMainInNamespace(m)) }

// TestGPUPodsScheduleAndRun runs the whole path: a real scheduler places
// GPU pods on KWOK nodes by their requests, leaves the one that does not
// fit Pending with the scheduler's reason, and the placed ones become
// Running and Ready with addresses from the pod CIDR.
func TestGPUPodsScheduleAndRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	launch := time.Now()
	pool := Pool{Name: "gpu", Count: 2, GPUs: 2, Product: "NVIDIA-H100-80GB-HBM3", MemoryMiB: 81559}
	_, cs := StartTestCluster(ctx, t, KWOKOptions{PodReadyDelay: 200 * time.Millisecond}, pool)
	if err := WarmIPPool(ctx, cs, pool.NodeName(0)); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"app": "gpu"}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "gpu", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](5),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				// NVIDIA's runtime, as GPU clusters have it installed.
				Spec: corev1.PodSpec{RuntimeClassName: ptr.To(NVIDIARuntimeClass), Containers: []corev1.Container{{
					Name: "main", Image: "example/worker:1",
					Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{GPUResource: resource.MustParse("1")}},
				}}},
			},
		},
	}
	if _, err := cs.AppsV1().Deployments("default").Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, cidr, _ := net.ParseCIDR(cluster.PodCIDR)
	var running, pending []corev1.Pod
	g := await.New(t)
	g.Eventually(func() (string, error) {
		pods, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=gpu"})
		if err != nil {
			return "", err
		}
		running, pending = nil, nil
		for _, p := range pods.Items {
			switch {
			case p.Status.Phase == corev1.PodRunning && podReady(&p):
				running = append(running, p)
			case p.Status.Phase == corev1.PodPending && unschedulable(&p) != "":
				pending = append(pending, p)
			}
		}
		return fmt.Sprintf("%d Running and Ready, %d unschedulable", len(running), len(pending)), nil
	}).WithTimeout(60 * time.Second).Should(gomega.Equal("4 Running and Ready, 1 unschedulable"))
	t.Logf("4 GPU pods Ready %s after launch", time.Since(launch).Round(time.Millisecond))
	perNode := map[string]int{}
	ips := map[string]string{}
	for _, p := range running {
		perNode[p.Spec.NodeName]++
		if other, dup := ips[p.Status.PodIP]; dup {
			t.Errorf("pods %s and %s share the address %s", other, p.Name, p.Status.PodIP)
		}
		ips[p.Status.PodIP] = p.Name
		if ip := net.ParseIP(p.Status.PodIP); ip == nil || !cidr.Contains(ip) {
			t.Errorf("pod %s has address %q, outside %s", p.Name, p.Status.PodIP, cluster.PodCIDR)
		}
	}
	if perNode["gpu-0"] != 2 || perNode["gpu-1"] != 2 {
		t.Errorf("pods per node %v, want two on each 2-GPU node", perNode)
	}
	if msg := unschedulable(&pending[0]); !strings.Contains(msg, "Insufficient nvidia.com/gpu") {
		t.Errorf("the pending pod's reason is %q, want the scheduler's Insufficient nvidia.com/gpu", msg)
	}
	node, err := cs.CoreV1().Nodes().Get(ctx, "gpu-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !nodeReady(node) {
		t.Errorf("node gpu-0 is not Ready: %+v", node.Status.Conditions)
	}
	if _, err := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, "gpu-0", metav1.GetOptions{}); err != nil {
		t.Errorf("node gpu-0 has no lease: %v", err)
	}
	g.Eventually(func() (int32, error) {
		d, err := cs.AppsV1().Deployments("default").Get(ctx, "gpu", metav1.GetOptions{})
		if err != nil {
			return 0, err
		}
		return d.Status.AvailableReplicas, nil
	}).Should(gomega.Equal(int32(4)), "the Deployment's available replicas")
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func unschedulable(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return c.Message
		}
	}
	return ""
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// TestPodReadyAgain: pods the node lifecycle controller marked unready
// (their node was late) become Ready again, as a kubelet would report them.
func TestPodReadyAgain(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, cs := StartTestCluster(ctx, t, KWOKOptions{}, Pool{Name: "n", Count: 1})
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"},
		Spec:       corev1.PodSpec{NodeName: "n-0", Containers: []corev1.Container{{Name: "main", Image: "x"}}},
	}
	if err := WaitDefaultServiceAccount(ctx, cs, "default"); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	g := await.New(t)
	waitReady := func() {
		t.Helper()
		g.Eventually(func() (string, error) {
			p, err := cs.CoreV1().Pods("default").Get(ctx, "p", metav1.GetOptions{})
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("%s, Ready %v", p.Status.Phase, podReady(p)), nil
		}).Should(gomega.Equal("Running, Ready true"), "the pod")
	}
	waitReady()
	// What the node lifecycle controller writes for a node gone NotReady.
	patch := `{"status":{"conditions":[{"type":"Ready","status":"False","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}`
	marked, err := cs.CoreV1().Pods("default").Patch(ctx, "p", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "status")
	if err != nil {
		t.Fatal(err)
	}
	if podReady(marked) {
		t.Fatal("the patch did not mark the pod unready")
	}
	waitReady()
}
