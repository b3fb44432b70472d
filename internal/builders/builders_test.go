package builders

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1beta1"
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

func TestMakeDeployment(t *testing.T) {
	got := MakeDeployment("d", "ns").Generation(2).Replicas(3).Selector(map[string]string{"app": "d"}).
		Container("main", "img:1").Status(1, 3, 2, 1).Obj()
	want := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: "ns", Generation: 2},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](3),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "d"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "d"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "img:1"}}},
			},
		},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 3, UpdatedReplicas: 2, ReadyReplicas: 1, AvailableReplicas: 1},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("MakeDeployment (-want +got):\n%s", diff)
	}
}

func TestMakeGraphComponent(t *testing.T) {
	got := MakeGraphComponent("llm", "VllmWorker", "ns", MakeEmptyService().Type(v1alpha1.ComponentTypeWorker)).Obj()
	want := &v1alpha1.DynamoComponentDeployment{
		TypeMeta: metav1.TypeMeta{APIVersion: "nvidia.com/v1alpha1", Kind: "DynamoComponentDeployment"},
		ObjectMeta: metav1.ObjectMeta{Name: "llm-vllmworker", Namespace: "ns", Labels: map[string]string{
			"nvidia.com/dynamo-graph-deployment-name": "llm",
			"nvidia.com/dynamo-component":             "llm-vllmworker",
			"app.kubernetes.io/managed-by":            "dynamo-operator",
		}},
		Spec: v1alpha1.DynamoComponentDeploymentSpec{DynamoComponentDeploymentSharedSpec: v1alpha1.DynamoComponentDeploymentSharedSpec{
			ServiceName: "VllmWorker", ComponentType: v1alpha1.ComponentTypeWorker,
		}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("MakeGraphComponent (-want +got):\n%s", diff)
	}
}

func TestMakeBetaGraph(t *testing.T) {
	got := MakeBetaGraph("llm", "ns").Component(MakeBetaComponent("Worker").Type(v1beta1.ComponentTypeWorker).
		Failover(&v1beta1.FailoverSpec{})).Obj()
	want := &v1beta1.DynamoGraphDeployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "nvidia.com/v1beta1", Kind: "DynamoGraphDeployment"},
		ObjectMeta: metav1.ObjectMeta{Name: "llm", Namespace: "ns"},
		Spec: v1beta1.DynamoGraphDeploymentSpec{Components: []v1beta1.DynamoComponentDeploymentSharedSpec{{
			ComponentName: "Worker", ComponentType: v1beta1.ComponentTypeWorker,
			Experimental: &v1beta1.ExperimentalSpec{Failover: &v1beta1.FailoverSpec{}},
		}}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("MakeBetaGraph (-want +got):\n%s", diff)
	}
}
