package steps

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/dynamoctl/dynamo-operator/internal/testenv"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1beta1"
	"github.com/dynamoctl/dynamo-operator/operator/apply"
)

func TestParseManifestsSkipsEmptyDocumentsAndNeedsKind(t *testing.T) {
	objs, err := ParseManifests([]byte("---\n# comment only\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: b\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 2 || objs[0].GetName() != "a" || objs[1].GetKind() != "Secret" {
		t.Fatalf("unexpected objects: %v", objs)
	}
	if _, err := ParseManifests([]byte("metadata:\n  name: x\n")); err == nil || !strings.Contains(err.Error(), "apiVersion and kind") {
		t.Fatalf("expected a missing-kind error, got %v", err)
	}
}

func TestJSONPathValue(t *testing.T) {
	obj := map[string]any{
		"spec": map[string]any{"replicas": int64(3)},
		"status": map[string]any{"conditions": []any{
			map[string]any{"type": "Other", "status": "False"},
			map[string]any{"type": "Ready", "status": "True"},
		}},
	}
	for path, want := range map[string]string{
		".spec.replicas":   "3",
		"{.spec.replicas}": "3",
		`.status.conditions[?(@.type=="Ready")].status`: "True",
	} {
		got, err := JSONPathValue(obj, path)
		if err != nil || got != want {
			t.Errorf("JSONPathValue(%s) = %q, %v; want %q", path, got, err, want)
		}
	}
	if _, err := JSONPathValue(obj, ".spec.missing"); err == nil {
		t.Errorf("a path that matches nothing must be an error")
	}
}

func TestCondition(t *testing.T) {
	obj := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"conditions": []any{
		map[string]any{"type": "Other", "status": "False"},
		map[string]any{"type": "Ready", "status": "True", "reason": "Available", "message": "2 of 2"},
	}}}}
	want := &metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Available", Message: "2 of 2"}
	if diff := cmp.Diff(want, condition(obj, "Ready")); diff != "" {
		t.Errorf("Ready (-want +got):\n%s", diff)
	}
	if c := condition(obj, "Stalled"); c != nil {
		t.Errorf("a condition the object does not have: got %+v, want nil", c)
	}
	if c := condition(&unstructured.Unstructured{Object: map[string]any{}}, "Ready"); c != nil {
		t.Errorf("no status: got %+v, want nil", c)
	}
}

func TestResolveKind(t *testing.T) {
	beta := schema.GroupVersion{Group: "nvidia.com", Version: "v1beta1"}
	alpha := schema.GroupVersion{Group: "nvidia.com", Version: "v1alpha1"}
	apps := schema.GroupVersion{Group: "apps", Version: "v1"}
	// Discovery's order: v1beta1 preferred, as the API server serves it.
	mapper := meta.NewDefaultRESTMapper([]schema.GroupVersion{beta, alpha, apps})
	for _, gv := range []schema.GroupVersion{beta, alpha} {
		mapper.Add(gv.WithKind("DynamoGraphDeployment"), meta.RESTScopeNamespace)
	}
	mapper.Add(apps.WithKind("Deployment"), meta.RESTScopeNamespace)
	for name, want := range map[string]schema.GroupVersionKind{
		"dgd":                    alpha.WithKind("DynamoGraphDeployment"),
		"DynamoGraphDeployment":  alpha.WithKind("DynamoGraphDeployment"),
		"dynamographdeployments": alpha.WithKind("DynamoGraphDeployment"),
		"dgd.v1beta1.nvidia.com": beta.WithKind("DynamoGraphDeployment"),
		"dynamographdeployments.v1beta1.nvidia.com":  beta.WithKind("DynamoGraphDeployment"),
		"dynamographdeployments.v1alpha1.nvidia.com": alpha.WithKind("DynamoGraphDeployment"),
		"dgd.nvidia.com":   alpha.WithKind("DynamoGraphDeployment"),
		"deployment":       apps.WithKind("Deployment"),
		"deployments.apps": apps.WithKind("Deployment"),
	} {
		got, err := ResolveKind(mapper, nil, name)
		if err != nil {
			t.Errorf("ResolveKind(%q): %v", name, err)
			continue
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("ResolveKind(%q) (-want +got):\n%s", name, diff)
		}
	}
	if _, err := ResolveKind(mapper, nil, "dgd.v2.nvidia.com"); err == nil {
		t.Errorf("a version the API server does not serve must be an error")
	}
}

// lazyMapper, like controller-runtime's, finds the resources of a group
// by resource alone only once asked for that group.
type lazyMapper struct {
	meta.RESTMapper
	lazyGroup string
}

func (m lazyMapper) KindsFor(gvr schema.GroupVersionResource) ([]schema.GroupVersionKind, error) {
	gvks, err := m.RESTMapper.KindsFor(gvr)
	if gvr.Group == "" && len(gvks) > 0 && gvks[0].Group == m.lazyGroup {
		return nil, &meta.NoResourceMatchError{PartialResource: gvr}
	}
	return gvks, err
}

func TestResolveKindOfAGroupTheMapperHasNotLoaded(t *testing.T) {
	lws := lwsv1.GroupVersion
	defaults := meta.NewDefaultRESTMapper([]schema.GroupVersion{lws})
	defaults.Add(lws.WithKind("LeaderWorkerSet"), meta.RESTScopeNamespace)
	mapper := lazyMapper{RESTMapper: defaults, lazyGroup: lws.Group}
	known := runtime.NewScheme()
	if err := lwsv1.AddToScheme(known); err != nil {
		t.Fatal(err)
	}
	got, err := ResolveKind(mapper, known, "LeaderWorkerSet")
	if err != nil || got != lws.WithKind("LeaderWorkerSet") {
		t.Errorf("ResolveKind(LeaderWorkerSet) = %v, %v; want %v", got, err, lws.WithKind("LeaderWorkerSet"))
	}
	if _, err := ResolveKind(mapper, nil, "LeaderWorkerSet"); err == nil {
		t.Errorf("without the scheme's groups the lazy mapper cannot know it; want an error")
	}
}

func TestConvertManifest(t *testing.T) {
	s := testenv.NewScheme()
	objs, err := ParseManifests([]byte(`
apiVersion: nvidia.com/v1beta1
kind: DynamoGraphDeployment
metadata: {name: vllm-agg}
spec:
  components:
  - name: VllmDecodeWorker
    type: worker
    replicas: 1
    podTemplate:
      spec:
        containers:
        - name: main
          image: vllm-runtime:1.3.1
          args: [--model, Qwen/Qwen3-0.6B]
          resources: {limits: {nvidia.com/gpu: "1"}}
`))
	if err != nil {
		t.Fatal(err)
	}
	alpha, err := ConvertManifest(s, objs[0], v1alpha1.GroupVersion)
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		".apiVersion":    "nvidia.com/v1alpha1",
		".metadata.name": "vllm-agg",
		".spec.services.VllmDecodeWorker.componentType":                      "worker",
		".spec.services.VllmDecodeWorker.extraPodSpec.mainContainer.image":   "vllm-runtime:1.3.1",
		".spec.services.VllmDecodeWorker.extraPodSpec.mainContainer.args[1]": "Qwen/Qwen3-0.6B",
		".spec.services.VllmDecodeWorker.resources.limits.gpu":               "1",
	} {
		if got, err := JSONPathValue(alpha.Object, path); err != nil || got != want {
			t.Errorf("v1alpha1 %s = %q, %v; want %q", path, got, err, want)
		}
	}
	back, err := ConvertManifest(s, alpha, v1beta1.GroupVersion)
	if err != nil {
		t.Fatal(err)
	}
	if diff := apply.Diff(back.Object, objs[0].Object); len(diff) > 0 {
		t.Errorf("converted back, the manifest lost: %v", diff)
	}
	if _, err := ConvertManifest(s, back, v1beta1.GroupVersion); err == nil {
		t.Errorf("v1beta1 to v1beta1 is no conversion of the operator's and must be an error")
	}
}
