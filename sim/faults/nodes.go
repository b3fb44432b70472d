package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	"github.com/dynamoctl/dynamo-operator/sim/nodes"
)

// Names the GPU failure puts on a node.
const (
	ConditionGPUHealthy = "GPUHealthy"
	TaintGPUUnhealthy   = "nvidia.com/gpu.unhealthy"
)

func readyNodes(ctx context.Context, env Env, gpusOnly bool) ([]string, error) {
	list, err := env.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: nodes.LabelManaged + "=" + nodes.ManagedValue})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range list.Items {
		if gpusOnly {
			if q, ok := n.Status.Allocatable[nodes.GPUResource]; !ok || q.Value() == 0 {
				continue
			}
		}
		out = append(out, n.Name)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no node to fail (gpusOnly=%v)", gpusOnly)
	}
	return out, nil
}

// nodeLoss takes the node out of KWOK's hands: KWOK manages only labelled
// nodes, so it stops renewing the node's lease and the node lifecycle
// controller does the rest, as for a machine that went dark.
func nodeLoss(ctx context.Context, env Env, rng *rand.Rand, r Request) (string, error) {
	name := r.Node
	if name == "" {
		names, err := readyNodes(ctx, env, false)
		if err != nil {
			return "", err
		}
		name = pick(rng, names)
	}
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, nodes.LabelManaged)
	if _, err := env.Client.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		return "", fmt.Errorf("node-loss on %s: %w", name, err)
	}
	// The machine is gone with its kubelet: the processes it ran die
	// without a word and nobody probes its pods or writes their status.
	var gone []string
	if env.SetNodeLost != nil {
		gone = env.SetNodeLost(name, true)
	}
	killed := ""
	if len(gone) > 0 {
		killed = fmt.Sprintf("; the processes of %v died with it", gone)
	}
	return fmt.Sprintf("node %s lost: no more heartbeats%s; NotReady within ~20 s, its pods evicted ~10 s later", name, killed), nil
}

func nodeRestore(ctx context.Context, env Env, r Request) (string, error) {
	if r.Node == "" {
		return "", fmt.Errorf("node-restore needs --node")
	}
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, nodes.LabelManaged, nodes.ManagedValue)
	if _, err := env.Client.CoreV1().Nodes().Patch(ctx, r.Node, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		return "", fmt.Errorf("node-restore on %s: %w", r.Node, err)
	}
	if env.SetNodeLost != nil {
		env.SetNodeLost(r.Node, false)
	}
	return fmt.Sprintf("node %s heartbeats again", r.Node), nil
}

// gpuFailure does what the device plugin and GPU health checks would: fewer
// allocatable GPUs, a condition saying why, and a taint keeping new GPU
// pods off the node.
func gpuFailure(ctx context.Context, env Env, rng *rand.Rand, r Request) (string, error) {
	name := r.Node
	if name == "" {
		names, err := readyNodes(ctx, env, true)
		if err != nil {
			return "", err
		}
		name = pick(rng, names)
	}
	node, err := env.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	failed := r.Count
	if failed <= 0 {
		failed = 1
	}
	have := node.Status.Capacity[nodes.GPUResource]
	left := max(have.Value()-int64(failed), 0)
	gpu := rng.IntN(max(int(have.Value()), 1))
	now := metav1.NewTime(env.Clock.Now())
	status := map[string]any{
		"capacity":    map[string]any{string(nodes.GPUResource): resource.NewQuantity(left, resource.DecimalSI).String()},
		"allocatable": map[string]any{string(nodes.GPUResource): resource.NewQuantity(left, resource.DecimalSI).String()},
		"conditions": []corev1.NodeCondition{{
			Type: ConditionGPUHealthy, Status: corev1.ConditionFalse, Reason: "XidError",
			Message:            fmt.Sprintf("GPU %d: Xid 79, GPU has fallen off the bus; %d of %d GPUs usable", gpu, left, have.Value()),
			LastHeartbeatTime:  now,
			LastTransitionTime: now,
		}},
	}
	body, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		return "", err
	}
	if _, err := env.Client.CoreV1().Nodes().PatchStatus(ctx, name, body); err != nil {
		return "", fmt.Errorf("gpu-failure status of %s: %w", name, err)
	}
	// The node lifecycle controller and KWOK write the node too: retry on
	// conflict rather than fail the fault.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node, err := env.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, t := range node.Spec.Taints {
			if t.Key == TaintGPUUnhealthy {
				return nil
			}
		}
		node.Spec.Taints = append(node.Spec.Taints, corev1.Taint{Key: TaintGPUUnhealthy, Value: "true", Effect: corev1.TaintEffectNoSchedule})
		_, err = env.Client.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return "", fmt.Errorf("gpu-failure taint of %s: %w", name, err)
	}
	return fmt.Sprintf("node %s: %d GPUs failed, %d left, tainted %s:NoSchedule", name, failed, left, TaintGPUUnhealthy), nil
}
