package render

import (
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

// PodGroupGVK is Kubernetes' gang-scheduling PodGroup (1.36, alpha: the
// kube-apiserver's --runtime-config=scheduling.k8s.io/v1alpha2=true and the
// GenericWorkload and GangScheduling feature gates). The operator's
// k8s.io/api (v0.37) carries v1alpha3 and no longer v1alpha2, so PodGroups
// are unstructured: the version that clusters of 1.36 serve is the one that
// matters.
var PodGroupGVK = schema.GroupVersionKind{Group: "scheduling.k8s.io", Version: "v1alpha2", Kind: "PodGroup"}

// LabelPodGroupIndex is the group index a PodGroup stands for, so that the
// ones past the replicas are found and deleted on scale-down.
const LabelPodGroupIndex = "nvidia.com/dynamo-group-index"

// PodGroupName is the PodGroup of group index of the LeaderWorkerSet lws.
// The pod webhook and the controller must agree on it.
func PodGroupName(lws string, index int) string {
	return lws + "-" + strconv.Itoa(index)
}

// PodGroups are the gang PodGroups of a multinode component: one per
// group index, named PodGroupName(<component>, index), whose gang policy is
// that all nodeCount pods of the group are placed or none is, so a group
// never holds GPUs while it waits for its last pod. The indices are those
// of the replicas and of the group a rollout surges (GroupSurge): its pods
// are named after a PodGroup too, and the scheduler holds a pod whose
// PodGroup is missing, so without one a rollout never started (the
// simulator's rollout scenario found it). Nil for a component that is not
// multinode.
func PodGroups(dcd *v1alpha1.DynamoComponentDeployment) []*unstructured.Unstructured {
	if !IsMultinode(dcd) {
		return nil
	}
	replicas := 1
	if dcd.Spec.Replicas != nil {
		replicas = int(*dcd.Spec.Replicas)
	}
	groups := make([]*unstructured.Unstructured, 0, replicas+GroupSurge)
	for i := range replicas + GroupSurge {
		groups = append(groups, PodGroup(dcd, i))
	}
	return groups
}

// PodGroup is the gang PodGroup of group index of a multinode component.
func PodGroup(dcd *v1alpha1.DynamoComponentDeployment, index int) *unstructured.Unstructured {
	labels := map[string]any{}
	for k, v := range workloadLabels(dcd) {
		labels[k] = v
	}
	labels[LabelPodGroupIndex] = strconv.Itoa(index)
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": PodGroupGVK.GroupVersion().String(),
		"kind":       PodGroupGVK.Kind,
		"metadata": map[string]any{
			"name":      PodGroupName(dcd.Name, index),
			"namespace": dcd.Namespace,
			"labels":    labels,
		},
		"spec": map[string]any{
			"schedulingPolicy": map[string]any{
				"gang": map[string]any{"minCount": int64(dcd.Spec.Multinode.NodeCount)},
			},
		},
	}}
}

// PodGroupMinCount reads a PodGroup's gang minCount (0 when it has none).
func PodGroupMinCount(pg *unstructured.Unstructured) int64 {
	n, _, _ := unstructured.NestedInt64(pg.Object, "spec", "schedulingPolicy", "gang", "minCount")
	return n
}

// PodGroupIndex is the group index a PodGroup of ours stands for.
func PodGroupIndex(pg *unstructured.Unstructured) (int, error) {
	i, err := strconv.Atoi(pg.GetLabels()[LabelPodGroupIndex])
	if err != nil {
		return 0, fmt.Errorf("PodGroup %s: label %s: %w", pg.GetName(), LabelPodGroupIndex, err)
	}
	return i, nil
}
