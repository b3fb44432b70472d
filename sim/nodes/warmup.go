package nodes

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/dynamoctl/dynamo-operator/internal/await"
)

// WarmIPPool runs one pod to Running on node and deletes it again. KWOK
// (v0.8.0) creates its pod IP pool lazily without a lock, so two pods that
// become ready at once on a fresh controller can get the same address;
// creating the pool with a single pod first avoids that race.
//
// The pod needs kube-system's default ServiceAccount, which the controller
// manager creates shortly after it starts: WarmIPPool waits for it first.
func WarmIPPool(ctx context.Context, cs kubernetes.Interface, node string) error {
	if err := WaitDefaultServiceAccount(ctx, cs, metav1.NamespaceSystem); err != nil {
		return err
	}
	pods := cs.CoreV1().Pods(metav1.NamespaceSystem)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "dynamo-sim-ip-pool-warmup"},
		Spec: corev1.PodSpec{
			NodeName:                      node,
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			Containers:                    []corev1.Container{{Name: "warmup", Image: "sim/warmup"}},
		},
	}
	if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the IP pool warm-up pod: %w", err)
	}
	if err := await.Until(ctx, "the IP pool warm-up pod's address", func() error {
		p, err := pods.Get(ctx, pod.Name, metav1.GetOptions{})
		if err == nil && p.Status.PodIP == "" {
			err = await.ErrNotYet
		}
		return err
	}, await.Within(time.Minute), await.Every(50*time.Millisecond)); err != nil {
		return err
	}
	return pods.Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
}

// WaitDefaultServiceAccount waits until namespace has its default
// ServiceAccount: the API server refuses pods without a ServiceAccount, and
// on a fresh cluster the controller manager creates them a moment later.
func WaitDefaultServiceAccount(ctx context.Context, cs kubernetes.Interface, namespace string) error {
	sas := cs.CoreV1().ServiceAccounts(namespace)
	return await.Until(ctx, "the default ServiceAccount of "+namespace, func() error {
		_, err := sas.Get(ctx, "default", metav1.GetOptions{})
		return err
	}, await.Within(time.Minute), await.Every(100*time.Millisecond))
}
