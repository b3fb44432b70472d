package examples

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/conversion"
	"sigs.k8s.io/yaml"

	"github.com/dynamoctl/dynamo-operator/internal/compat"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1beta1"
	"github.com/dynamoctl/dynamo-operator/operator/webhooks/rules"
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

		errs, warnings, err := admit(head.APIVersion+" "+head.Kind, d.Raw)
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

// admit parses one document strictly into its API type and returns what the
// validating webhook would answer on its creation.
func admit(kind string, raw []byte) (field.ErrorList, []string, error) {
	switch kind {
	case "nvidia.com/v1alpha1 DynamoGraphDeployment":
		return check(raw, &v1alpha1.DynamoGraphDeployment{}, rules.ValidateGraph)
	case "nvidia.com/v1beta1 DynamoGraphDeployment":
		return check(raw, &v1beta1.DynamoGraphDeployment{}, viaHub[*v1beta1.DynamoGraphDeployment](&v1alpha1.DynamoGraphDeployment{}, rules.ValidateGraph))
	case "nvidia.com/v1alpha1 DynamoComponentDeployment":
		return check(raw, &v1alpha1.DynamoComponentDeployment{}, rules.ValidateComponentDeployment)
	case "nvidia.com/v1beta1 DynamoComponentDeployment":
		return check(raw, &v1beta1.DynamoComponentDeployment{}, viaHub[*v1beta1.DynamoComponentDeployment](&v1alpha1.DynamoComponentDeployment{}, rules.ValidateComponentDeployment))
	case "nvidia.com/v1alpha1 DynamoModel":
		return check(raw, &v1alpha1.DynamoModel{}, rules.ValidateModel)
	}
	return nil, nil, fmt.Errorf("no API type for %s in this test", kind)
}

// check decodes raw strictly into obj and validates it.
func check[T any](raw []byte, obj *T, validate func(*T) (field.ErrorList, []string)) (field.ErrorList, []string, error) {
	if err := yaml.UnmarshalStrict(raw, obj); err != nil {
		return nil, nil, err
	}
	errs, warnings := validate(obj)
	return errs, warnings, nil
}

// viaHub validates a v1beta1 object as the webhooks see it: converted to
// the stored v1alpha1 (the webhook configurations name v1alpha1 with
// matchPolicy Equivalent, so the API server converts before calling them).
func viaHub[B conversion.Convertible, H conversion.Hub](hub H, validate func(H) (field.ErrorList, []string)) func(B) (field.ErrorList, []string) {
	return func(obj B) (field.ErrorList, []string) {
		if err := obj.ConvertTo(hub); err != nil {
			return field.ErrorList{field.InternalError(nil, err)}, nil
		}
		return validate(hub)
	}
}
