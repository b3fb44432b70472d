package examples

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/dynamoctl/dynamo-operator/internal/admission"
	"github.com/dynamoctl/dynamo-operator/internal/compat"
)

// TestExamplesAreAccepted reads every document of every example, strictly
// (an unknown or misspelt field fails, as kubectl's strict field validation
// would refuse it), and runs the webhooks' rules on it; a v1beta1 object is
// validated as the API server hands it to the webhooks, converted to the
// stored v1alpha1. The table names every example, so one added, removed or
// changed in kind is a decision this test records.
func TestExamplesAreAccepted(t *testing.T) {
	want := map[string][]string{
		"v1beta1/agg.yaml":        {"nvidia.com/v1beta1 DynamoGraphDeployment vllm-agg"},
		"v1beta1/disagg.yaml":     {"nvidia.com/v1beta1 DynamoGraphDeployment sglang-disagg"},
		"v1beta1/multinode.yaml":  {"nvidia.com/v1beta1 DynamoGraphDeployment sglang-disagg-multinode"},
		"v1alpha1/agg.yaml":       {"nvidia.com/v1alpha1 DynamoGraphDeployment vllm-agg"},
		"v1alpha1/disagg.yaml":    {"nvidia.com/v1alpha1 DynamoGraphDeployment vllm-disagg"},
		"v1alpha1/multinode.yaml": {"nvidia.com/v1alpha1 DynamoGraphDeployment vllm-disagg-multinode"},
		"models/lora.yaml": {
			"nvidia.com/v1alpha1 DynamoGraphDeployment vllm-agg-lora",
			"nvidia.com/v1alpha1 DynamoModel codelion-recovery-lora",
		},
	}

	docs, err := compat.Documents(".")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, d := range docs {
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal(d.Raw, &head); err != nil {
			t.Fatalf("%s: %v", d.File, err)
		}
		got[d.File] = append(got[d.File], head.APIVersion+" "+head.Kind+" "+head.Metadata.Name)

		errs, warnings, err := admission.Check(head.APIVersion+" "+head.Kind, d.Raw)
		if err != nil {
			t.Errorf("%s: %s %s: %v", d.File, head.Kind, head.Metadata.Name, err)
			continue
		}
		if len(errs) > 0 {
			t.Errorf("%s: %s %s refused: %v", d.File, head.Kind, head.Metadata.Name, errs.ToAggregate())
		}
		// An example teaches: it uses no deprecated field.
		if len(warnings) > 0 {
			t.Errorf("%s: %s %s warned: %q", d.File, head.Kind, head.Metadata.Name, warnings)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("examples (-want +got):\n%s", diff)
	}
}
