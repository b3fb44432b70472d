package render

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

const testImage = "nvcr.io/nvidia/ai-dynamo/vllm-runtime:my-tag"

// newDCD returns a component of graph "g" in namespace "ns" with an image,
// changed by the given functions.
func newDCD(mutate ...func(*v1alpha1.DynamoComponentDeployment)) *v1alpha1.DynamoComponentDeployment {
	dcd := &v1alpha1.DynamoComponentDeployment{
		ObjectMeta: metav1.ObjectMeta{
			Name:      "g-worker",
			Namespace: "ns",
			Labels: map[string]string{
				LabelGraphName: "g",
				LabelComponent: "g-worker",
				LabelManagedBy: ManagedByValue,
			},
		},
		Spec: v1alpha1.DynamoComponentDeploymentSpec{
			DynamoComponentDeploymentSharedSpec: v1alpha1.DynamoComponentDeploymentSharedSpec{
				ServiceName:   "Worker",
				ComponentType: v1alpha1.ComponentTypeWorker,
				Replicas:      ptr.To[int32](1),
				ExtraPodSpec: &v1alpha1.ExtraPodSpec{
					MainContainer: &corev1.Container{Image: testImage},
				},
			},
		},
	}
	for _, m := range mutate {
		m(dcd)
	}
	return dcd
}

// mustDeploy renders dcd's Deployment and returns its pod spec and main
// container, failing the test on error.
func mustDeploy(t *testing.T, dcd *v1alpha1.DynamoComponentDeployment, pvcs []v1alpha1.GraphPVC, o Options) (*corev1.PodSpec, *corev1.Container) {
	t.Helper()
	d, err := Deployment(dcd, pvcs, o)
	if err != nil {
		t.Fatalf("Deployment: %v", err)
	}
	pod := &d.Spec.Template.Spec
	main := findContainer(pod.Containers, MainContainerName)
	if main == nil {
		t.Fatalf("no %q container in %+v", MainContainerName, pod.Containers)
	}
	return pod, main
}

// fieldErrors returns the field errors of an aggregate returned by the
// package, failing the test when err is not one.
func fieldErrors(t *testing.T, err error) field.ErrorList {
	t.Helper()
	var agg utilerrors.Aggregate
	if !errors.As(err, &agg) {
		t.Fatalf("error %v (%T) is not an aggregate", err, err)
	}
	var out field.ErrorList
	for _, e := range agg.Errors() {
		var fe *field.Error
		if !errors.As(e, &fe) {
			t.Fatalf("error %v (%T) is not a field error", e, e)
		}
		out = append(out, fe)
	}
	return out
}

// wantFieldError fails unless err holds a field error at path whose message
// contains text.
func wantFieldError(t *testing.T, err error, path, text string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one at %s", path)
	}
	for _, fe := range fieldErrors(t, err) {
		if fe.Field == path && strings.Contains(fe.Error(), text) {
			return
		}
	}
	t.Fatalf("error %q has no field error at %s containing %q", err, path, text)
}

func envValue(env []corev1.EnvVar, name string) (string, bool) {
	for _, e := range env {
		if e.Name == name {
			return e.Value, true
		}
	}
	return "", false
}

func envNames(env []corev1.EnvVar) []string {
	names := make([]string, 0, len(env))
	for _, e := range env {
		names = append(names, e.Name)
	}
	return names
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
