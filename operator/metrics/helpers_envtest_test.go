package metrics_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

func objectMeta(namespace, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: namespace, Name: name}
}

// eventually retries check for 30 s and fails the test with its last error.
func eventually(t *testing.T, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func waitForState(t *testing.T, namespace, name string, want v1alpha1.GraphState) {
	t.Helper()
	eventually(t, fmt.Sprintf("graph %s/%s becomes %s", namespace, name, want), func() error {
		g := &v1alpha1.DynamoGraphDeployment{}
		if err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: namespace, Name: name}, g); err != nil {
			return err
		}
		if g.Status.State != want || g.Status.ObservedGeneration != g.Generation {
			return fmt.Errorf("state %q at generation %d/%d", g.Status.State, g.Status.ObservedGeneration, g.Generation)
		}
		return nil
	})
}

func waitForReplicas(t *testing.T, namespace, name string, want int32) {
	t.Helper()
	eventually(t, fmt.Sprintf("Deployment %s/%s has %d replicas", namespace, name, want), func() error {
		d := &appsv1.Deployment{}
		if err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: namespace, Name: name}, d); err != nil {
			return err
		}
		if d.Spec.Replicas == nil || *d.Spec.Replicas != want {
			return fmt.Errorf("replicas %v", d.Spec.Replicas)
		}
		return nil
	})
}

func patch(t *testing.T, namespace, name, mergePatch string) {
	t.Helper()
	err := env.Client.Patch(context.Background(), &v1alpha1.DynamoGraphDeployment{ObjectMeta: objectMeta(namespace, name)},
		client.RawPatch(types.MergePatchType, []byte(mergePatch)))
	if err != nil {
		t.Fatalf("patching graph %s/%s: %v", namespace, name, err)
	}
}

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }
