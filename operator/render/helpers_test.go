package render

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

const testImage = "nvcr.io/nvidia/ai-dynamo/vllm-runtime:my-tag"

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
