package steps

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

func TestCompatNamespace(t *testing.T) {
	for in, want := range map[string]string{
		"examples/backends/vllm/deploy/agg.yaml":                            "vllm-agg",
		"examples/backends/sglang/deploy/disagg_planner.yaml":               "sglang-disagg-planner",
		"examples/backends/vllm/deploy/lora/multimodal/agg_qwen_lora.yaml":  "vllm-lora-multimodal-agg-qwen-lora",
		"examples/backends/trtllm/deploy/agg-with-config.yml":               "trtllm-agg-with-config",
		"examples/backends/" + strings.Repeat("x", 80) + "/deploy/agg.yaml": strings.Repeat("x", 63),
	} {
		if got := compatNamespace(in); got != want {
			t.Errorf("compatNamespace(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSchemaPaths(t *testing.T) {
	str := apiextensionsv1.JSONSchemaProps{Type: "string"}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	crd.Spec.Names.Kind = "G"
	crd.Spec.Versions = []apiextensionsv1.CustomResourceDefinitionVersion{{
		Name: "v1",
		Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
			Type: "object",
			Properties: map[string]apiextensionsv1.JSONSchemaProps{
				"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
					"services": {Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Schema: &apiextensionsv1.JSONSchemaProps{
						Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"image": str},
					}}},
					"args": {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &str}},
				}},
			},
		}},
	}}
	want := map[string]bool{
		"G v1": true, "G v1.spec": true, "G v1.spec.services": true, "G v1.spec.services.*": true,
		"G v1.spec.services.*.image": true, "G v1.spec.args": true, "G v1.spec.args[]": true,
	}
	if d := cmp.Diff(want, schemaPaths(crd, nil)); d != "" {
		t.Errorf("schemaPaths (-want +got):\n%s", d)
	}
	// A version the older release did not serve is left out.
	crd.Spec.Versions = append(crd.Spec.Versions, *crd.Spec.Versions[0].DeepCopy())
	crd.Spec.Versions[1].Name = "v2"
	if d := cmp.Diff(want, schemaPaths(crd, func(v string) bool { return v == "v1" })); d != "" {
		t.Errorf("schemaPaths of v1 alone (-want +got):\n%s", d)
	}
}

func TestReportSummary(t *testing.T) {
	r := &Report{}
	r.Add(Result{Scenario: "upgrade: a", Duration: 1500 * time.Millisecond, Figures: []Figure{{"pods", "110"}}})
	r.Add(Result{Scenario: "hybrid: b", Duration: 2 * time.Second, Err: errors.New("first\nsecond")})
	want := "PASS    1.5s  upgrade: a\n" +
		"       pods                                     110\n" +
		"FAIL    2.0s  hybrid: b\n" +
		"       error: first\n" +
		"         second\n" +
		"2 scenarios, 1 passed, 1 failed\n"
	if d := cmp.Diff(want, r.Summary()); d != "" {
		t.Errorf("Summary (-want +got):\n%s", d)
	}
}
