package steps

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestGraphKinds pins the kinds the scenarios take inventory of: a new
// child kind in operator/children tied to a graph joins them by itself.
func TestGraphKinds(t *testing.T) {
	got := map[string]bool{}
	for _, gvk := range graphKinds() {
		got[gvk.String()] = true
	}
	want := map[string]bool{}
	for _, gvk := range []schema.GroupVersionKind{
		{Group: "nvidia.com", Version: "v1alpha1", Kind: "DynamoGraphDeployment"},
		{Group: "nvidia.com", Version: "v1alpha1", Kind: "DynamoComponentDeployment"},
		{Group: "nvidia.com", Version: "v1alpha1", Kind: "DynamoGraphDeploymentScalingAdapter"},
		{Group: "apps", Version: "v1", Kind: "Deployment"},
		{Group: "apps", Version: "v1", Kind: "ReplicaSet"},
		{Group: "leaderworkerset.x-k8s.io", Version: "v1", Kind: "LeaderWorkerSet"},
		{Group: "scheduling.k8s.io", Version: "v1alpha2", Kind: "PodGroup"},
		{Version: "v1", Kind: "Pod"},
		{Version: "v1", Kind: "Secret"},
		{Version: "v1", Kind: "Service"},
		{Version: "v1", Kind: "ServiceAccount"},
		{Version: "v1", Kind: "ConfigMap"},
		{Version: "v1", Kind: "PersistentVolumeClaim"},
		{Group: "inference.networking.k8s.io", Version: "v1", Kind: "InferencePool"},
		{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "Role"},
		{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "RoleBinding"},
		{Group: "networking.k8s.io", Version: "v1", Kind: "Ingress"},
		{Group: "networking.istio.io", Version: "v1beta1", Kind: "VirtualService"},
		{Group: "resource.k8s.io", Version: "v1", Kind: "ResourceClaimTemplate"},
	} {
		want[gvk.String()] = true
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("graphKinds (-want +got):\n%s", d)
	}
}
