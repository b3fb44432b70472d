package nodes

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// AdvertiseGPUs makes existing nodes of a real cluster (a kind cluster's
// workers) the GPU nodes of pool p, node names[i] as the pool's node i, as
// NVIDIA's device plugin and GPU feature discovery make a GPU machine's
// node: nvidia.com/gpu in the node's status capacity and allocatable, and
// the labels of GPULabels. Pods asking for GPUs then schedule there and run
// (the kubelet gives no device to a resource no device plugin owns).
//
// One patch lasts: the kubelet's status updates keep an extended resource
// they do not own, and a restarted kubelet zeroes one only when its device
// plugin checkpoint is gone (a node whose disk was wiped).
func AdvertiseGPUs(ctx context.Context, cs kubernetes.Interface, p Pool, names []string) error {
	if p.GPUs == 0 {
		return fmt.Errorf("pool %s has no GPUs", p.Name)
	}
	gpus := *resource.NewQuantity(int64(p.GPUs), resource.DecimalSI)
	// A map, not a NodeStatus: its struct fields without omitempty
	// (daemonEndpoints, nodeInfo) would be patched to zero.
	status, err := json.Marshal(map[string]any{"status": map[string]any{
		"capacity":    corev1.ResourceList{GPUResource: gpus},
		"allocatable": corev1.ResourceList{GPUResource: gpus},
	}})
	if err != nil {
		return err
	}
	for i, name := range names {
		labels, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": p.GPULabels(i)}})
		if err != nil {
			return err
		}
		if _, err := cs.CoreV1().Nodes().Patch(ctx, name, types.StrategicMergePatchType, labels, metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("labelling node %s: %w", name, err)
		}
		if _, err := cs.CoreV1().Nodes().Patch(ctx, name, types.StrategicMergePatchType, status, metav1.PatchOptions{}, "status"); err != nil {
			return fmt.Errorf("giving node %s GPUs: %w", name, err)
		}
	}
	return nil
}
