// Package admission answers, without a cluster, what the operator's
// validating webhooks would answer on the creation of a manifest: for the
// example graphs and the documentation's manifests, whose tests must not
// depend on the webhook package's own tests (which read Dynamo's users'
// manifests through internal/compat).
package admission

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/conversion"
	"sigs.k8s.io/yaml"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1beta1"
	"github.com/dynamoctl/dynamo-operator/operator/webhooks/rules"
)

// Check parses one document strictly into its API type (an unknown or
// misspelt field fails, as kubectl's strict field validation refuses it)
// and returns what the validating webhook would answer on its creation.
// apiVersionKind is "nvidia.com/v1beta1 DynamoGraphDeployment" and the
// like; a kind the webhooks do not validate is only decoded strictly.
func Check(apiVersionKind string, raw []byte) (field.ErrorList, []string, error) {
	switch apiVersionKind {
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
	case "nvidia.com/v1alpha1 DynamoComponent":
		return check(raw, &v1alpha1.DynamoComponent{}, rules.ValidateComponent)
	case "nvidia.com/v1alpha1 DynamoGraphDeploymentScalingAdapter":
		return check(raw, &v1alpha1.DynamoGraphDeploymentScalingAdapter{}, noRules[v1alpha1.DynamoGraphDeploymentScalingAdapter])
	case "nvidia.com/v1beta1 DynamoGraphDeploymentScalingAdapter":
		return check(raw, &v1beta1.DynamoGraphDeploymentScalingAdapter{}, noRules[v1beta1.DynamoGraphDeploymentScalingAdapter])
	}
	return nil, nil, fmt.Errorf("no API type for %s", apiVersionKind)
}

// check decodes raw strictly into obj and validates it.
func check[T any](raw []byte, obj *T, validate func(*T) (field.ErrorList, []string)) (field.ErrorList, []string, error) {
	if err := yaml.UnmarshalStrict(raw, obj); err != nil {
		return nil, nil, err
	}
	errs, warnings := validate(obj)
	return errs, warnings, nil
}

// noRules is the validation of a kind no webhook validates on creation.
func noRules[T any](*T) (field.ErrorList, []string) { return nil, nil }

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
