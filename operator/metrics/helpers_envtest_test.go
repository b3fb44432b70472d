package metrics_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/internal/await"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

func objectMeta(namespace, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: namespace, Name: name}
}

func waitForState(t *testing.T, namespace, name string, want v1alpha1.GraphState) {
	t.Helper()
	await.New(t).Eventually(func() error {
		g := &v1alpha1.DynamoGraphDeployment{}
		if err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: namespace, Name: name}, g); err != nil {
			return err
		}
		if g.Status.State != want || g.Status.ObservedGeneration != g.Generation {
			return fmt.Errorf("state %q at generation %d/%d", g.Status.State, g.Status.ObservedGeneration, g.Generation)
		}
		return nil
	}).Should(gomega.Succeed(), fmt.Sprintf("graph %s/%s becomes %s", namespace, name, want))
}

func waitForReplicas(t *testing.T, namespace, name string, want int32) {
	t.Helper()
	await.New(t).Eventually(func() error {
		d := &appsv1.Deployment{}
		if err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: namespace, Name: name}, d); err != nil {
			return err
		}
		if d.Spec.Replicas == nil || *d.Spec.Replicas != want {
			return fmt.Errorf("replicas %v", d.Spec.Replicas)
		}
		return nil
	}).Should(gomega.Succeed(), fmt.Sprintf("Deployment %s/%s has %d replicas", namespace, name, want))
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
