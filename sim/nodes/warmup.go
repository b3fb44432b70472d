package nodes

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// WarmIPPool runs one pod to Running on node and deletes it again. KWOK
// (v0.8.0) creates its pod IP pool lazily without a lock, so two pods that
// become ready at once on a fresh controller can get the same address;
// creating the pool with a single pod first avoids that race.
//
// The pod needs kube-system's default ServiceAccount, which the controller
// manager creates shortly after it starts: WarmIPPool waits for it first.
func WarmIPPool(ctx context.Context, cs kubernetes.Interface, node string) error {
	if err := waitDefaultServiceAccount(ctx, cs); err != nil {
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
	deadline := time.Now().Add(time.Minute)
	for {
		p, err := pods.Get(ctx, pod.Name, metav1.GetOptions{})
		if err == nil && p.Status.PodIP != "" {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the IP pool warm-up pod got no address within a minute (last error: %v)", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return pods.Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
}

func waitDefaultServiceAccount(ctx context.Context, cs kubernetes.Interface) error {
	sas := cs.CoreV1().ServiceAccounts(metav1.NamespaceSystem)
	deadline := time.Now().Add(time.Minute)
	for {
		_, err := sas.Get(ctx, "default", metav1.GetOptions{})
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kube-system's default ServiceAccount did not appear within a minute: %w", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
