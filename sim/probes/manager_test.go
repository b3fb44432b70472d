package probes

import (
	"context"
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/dynamoctl/dynamo-operator/internal/await"
)

// A lost node's kubelet is gone: its pods are not probed (their status
// stays what it was) until the node is back, whatever updates them.
func TestLostNodeIsNotProbed(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "op", Namespace: "ns", UID: "op-1"},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "manager",
			ReadinessProbe: &corev1.Probe{PeriodSeconds: 3600, ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(1)}}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "127.0.0.1"},
	}
	cs := fake.NewClientset(pod)
	m := &Manager{Client: cs}
	if err := m.Run(ctx); err != nil {
		t.Fatal(err)
	}
	g := await.New(t)
	g.Eventually(m.Probed).Should(gomega.Equal(1), "the pod probed")

	m.SetNodeLost("n1", true)
	g.Expect(m.Probed()).To(gomega.Equal(0), "a lost node's pod probed")
	touch := func(label string) {
		t.Helper()
		p, err := cs.CoreV1().Pods("ns").Get(ctx, "op", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p.Labels = map[string]string{"touched": label}
		if _, err := cs.CoreV1().Pods("ns").Update(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	touch("while-lost")
	g.Consistently(m.Probed).WithTimeout(time.Second).Should(gomega.Equal(0), "a lost node's pod probed after an update")

	m.SetNodeLost("n1", false)
	touch("back")
	g.Eventually(m.Probed).Should(gomega.Equal(1), "the pod probed once its node is back")
}
