package apitest

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

// nullsManifest is a graph as real manifests write it: a componentType
// outside the seven with behaviour (Dynamo's planner tests and recipes use
// `main`), and optional fields written as null.
const nullsManifest = `
apiVersion: nvidia.com/v1alpha1
kind: DynamoGraphDeployment
metadata:
  name: nulls
spec:
  backendFramework: vllm
  services:
    Main:
      componentType: main
      subComponentType: null
      dynamoNamespace: null
      replicas: 1
      envs: null
      extraPodSpec:
        containers: null
        mainContainer:
          image: my-registry/vllm-runtime:my-tag
          command: null
          args: ["python3 -m dynamo.vllm"]
`

// TestNullOptionalFieldsAndFreeComponentTypeUnderServerSideApply applies the
// manifest server-side, as Flux and kubectl apply --server-side do, through
// the operator's webhooks, and reads it back. Server-side apply refuses a
// null for a field whose schema is not nullable, so this fails unless every
// optional field is nullable; a plain create is checked too.
func TestNullOptionalFieldsAndFreeComponentTypeUnderServerSideApply(t *testing.T) {
	operator(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ns := env.Namespace(t, "nulls")

	want := v1alpha1.DynamoComponentDeploymentSharedSpec{
		ComponentType: "main",
		Replicas:      ptrTo[int32](1),
		// containers: null is kept as written; it decodes as an empty
		// pod spec, which merges into the generated pod as nothing.
		ExtraPodSpec: &v1alpha1.ExtraPodSpec{PodSpec: &corev1.PodSpec{}, MainContainer: &corev1.Container{
			Image: "my-registry/vllm-runtime:my-tag",
			Args:  []string{"python3 -m dynamo.vllm"},
		}},
	}
	for _, how := range []string{"server-side apply", "create"} {
		t.Run(how, func(t *testing.T) {
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(nullsManifest), &u.Object); err != nil {
				t.Fatal(err)
			}
			u.SetNamespace(ns)
			var err error
			if how == "create" {
				u.SetName("nulls-created")
				err = env.Client.Create(ctx, u)
			} else {
				err = env.Client.Patch(ctx, u, client.Apply, client.FieldOwner("flux"), client.ForceOwnership)
			}
			if err != nil {
				t.Fatalf("%s of a manifest with nulls and componentType main: %v", how, err)
			}
			got := &v1alpha1.DynamoGraphDeployment{}
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(u), got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, *got.Spec.Services["Main"], cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("service as read back (-want +got):\n%s", diff)
			}
		})
	}
}

func ptrTo[T any](v T) *T { return &v }
