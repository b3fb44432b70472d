package apitest

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/dynamoctl/dynamo-operator/internal/await"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1beta1"
	"github.com/dynamoctl/dynamo-operator/operator/crdinstall"
	"github.com/dynamoctl/dynamo-operator/operator/webhooks/rules"
)

// v1beta1Graph is a graph as Dynamo's v1beta1 manifests write one, with a
// field v1alpha1 has no place for (experimental.gpuMemoryService), and
// every field the defaulting webhook or the schema's defaults would set
// already set, so that what is read back is what was written.
const v1beta1Graph = `
apiVersion: nvidia.com/v1beta1
kind: DynamoGraphDeployment
metadata:
  name: vllm-agg
  annotations: {"nvidia.com/dynamo-operator-origin-version": "1.2.3"}
spec:
  backendFramework: vllm
  components:
  - name: Frontend
    type: frontend
    replicas: 1
    podTemplate:
      spec:
        containers:
        - name: main
          image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.3.1
  - name: VllmWorker
    type: worker
    replicas: 2
    experimental:
      gpuMemoryService: {deviceClassName: gpu.nvidia.com, mode: IntraPod}
    podTemplate:
      spec:
        containers:
        - name: main
          image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.3.1
          command: [python3, -m, dynamo.vllm]
          args: [--model, Qwen/Qwen3-0.6B]
          resources:
            limits: {nvidia.com/gpu: "1"}
`

// A v1beta1 graph created through the API server, converted by the
// operator's own /convert, is stored as v1alpha1 (the controllers' client
// reads it so, without conversion) and reads back in v1beta1 as written.
func TestV1beta1IsStoredAsV1alpha1AndReadBackAsWritten(t *testing.T) {
	operator(t)
	env.RouteConversion(t, crdinstall.Conversion{URL: opURL})
	ns := env.Namespace(t, "convert")
	written := &v1beta1.DynamoGraphDeployment{}
	if err := yaml.UnmarshalStrict([]byte(v1beta1Graph), written); err != nil {
		t.Fatal(err)
	}
	if written.Annotations[rules.OriginVersionAnnotation] != "1.2.3" {
		t.Fatal("the manifest must carry what the defaulting webhook would add")
	}
	written.Namespace = ns
	// The API server takes up the CRDs' new conversion webhook and its CA
	// from its watch, a moment after they are written.
	await.New(t).Eventually(func() error {
		return env.Client.Create(context.Background(), written.DeepCopy())
	}).Should(gomega.Succeed(), "the API server converts through the CRDs' new webhook")

	stored := &v1alpha1.DynamoGraphDeployment{}
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(written), stored); err != nil {
		t.Fatal(err)
	}
	if w := stored.Spec.Services["VllmWorker"]; w == nil || w.Replicas == nil || *w.Replicas != 2 || stored.Spec.Services["Frontend"] == nil {
		t.Errorf("the v1alpha1 graph lacks the components written in v1beta1: %+v", stored.Spec.Services)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Name: "dynamographdeployments.nvidia.com"}, crd); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(crd.Status.StoredVersions, []string{"v1alpha1"}) {
		t.Errorf("stored versions %v, want only v1alpha1", crd.Status.StoredVersions)
	}

	read := &v1beta1.DynamoGraphDeployment{}
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(written), read); err != nil {
		t.Fatal(err)
	}
	for part, pair := range map[string][2]any{
		"spec":        {written.Spec, read.Spec},
		"annotations": {written.Annotations, read.Annotations},
		"labels":      {written.Labels, read.Labels},
	} {
		if d := cmp.Diff(asJSON(t, pair[0]), asJSON(t, pair[1])); d != "" {
			t.Errorf("%s read back in v1beta1 (-written +read):\n%s", part, d)
		}
	}
}

// asJSON is v as generic JSON, so that quantities compare by what they say.
func asJSON(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}
