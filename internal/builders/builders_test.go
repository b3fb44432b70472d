package builders

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

func TestMakeGraph(t *testing.T) {
	got := MakeGraph("llm", "ns").
		Backend(v1alpha1.BackendFrameworkVLLM).
		Service("Worker", MakeService().Type(v1alpha1.ComponentTypeWorker).GPUs(1).Replicas(2)).
		Obj()
	want := &v1alpha1.DynamoGraphDeployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "nvidia.com/v1alpha1", Kind: "DynamoGraphDeployment"},
		ObjectMeta: metav1.ObjectMeta{Name: "llm", Namespace: "ns"},
		Spec: v1alpha1.DynamoGraphDeploymentSpec{
			BackendFramework: v1alpha1.BackendFrameworkVLLM,
			Services: map[string]*v1alpha1.DynamoComponentDeploymentSharedSpec{
				"Worker": {
					ComponentType: v1alpha1.ComponentTypeWorker,
					Replicas:      ptr.To[int32](2),
					Resources:     &v1alpha1.Resources{Limits: &v1alpha1.ResourceItem{GPU: "1"}},
					ExtraPodSpec:  &v1alpha1.ExtraPodSpec{MainContainer: &corev1.Container{Image: "img:1"}},
				},
			},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("MakeGraph (-want +got):\n%s", diff)
	}
}
