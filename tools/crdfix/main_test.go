package main

import (
	"maps"
	"reflect"
	"slices"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

func TestWalkRelaxesMergedFieldsAndDropsForeignDescriptions(t *testing.T) {
	root := apiextensionsv1.JSONSchemaProps{
		Description: "ours",
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"replicas": {Description: "our field"},
			"extraPodSpec": {
				Description: "merged pod spec",
				Required:    []string{"containers"},
				Properties: map[string]apiextensionsv1.JSONSchemaProps{
					"mainContainer": {Description: "a container", Required: []string{"name"}},
					"containers": {Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{
						Description: "container", Required: []string{"name"},
					}}},
				},
			},
		},
	}
	walk(&root, false)

	if root.Description != "ours" || root.Properties["replicas"].Description != "our field" {
		t.Errorf("descriptions of our own fields must be kept: %+v", root)
	}
	eps := root.Properties["extraPodSpec"]
	if eps.Description != "" || eps.Properties["mainContainer"].Description != "" {
		t.Errorf("descriptions under an embedded Kubernetes type must be dropped")
	}
	if len(eps.Required) != 0 {
		t.Errorf("extraPodSpec.containers must not be required, got %v", eps.Required)
	}
	if len(eps.Properties["mainContainer"].Required) != 0 {
		t.Errorf("mainContainer.name must not be required")
	}
	// Extra containers are complete containers: their name stays required.
	if got := eps.Properties["containers"].Items.Schema.Required; !reflect.DeepEqual(got, []string{"name"}) {
		t.Errorf("extraPodSpec.containers[].name must stay required, got %v", got)
	}
}

func TestNullableOptionalMarksOnlyOptionalFieldsWithoutDefault(t *testing.T) {
	spec := apiextensionsv1.JSONSchemaProps{
		Required: []string{"services"},
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"services": {AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Schema: &apiextensionsv1.JSONSchemaProps{
				Properties: map[string]apiextensionsv1.JSONSchemaProps{
					"subComponentType": {Type: "string"},
					"backendFramework": {Type: "string", Enum: []apiextensionsv1.JSON{{Raw: []byte(`"vllm"`)}}},
					"extraPodSpec": {Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"containers": {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{
							Required: []string{"name"},
							Properties: map[string]apiextensionsv1.JSONSchemaProps{
								"name":     {Type: "string"},
								"protocol": {Type: "string", Default: &apiextensionsv1.JSON{Raw: []byte(`"TCP"`)}},
							},
						}}},
					}},
				},
			}}},
		},
	}
	nullableOptional(&spec)

	if spec.Properties["services"].Nullable {
		t.Errorf("a required field must not become nullable")
	}
	svc := spec.Properties["services"].AdditionalProperties.Schema
	if !svc.Properties["subComponentType"].Nullable || !svc.Properties["extraPodSpec"].Nullable {
		t.Errorf("optional fields of a service must be nullable: %+v", svc.Properties)
	}
	if svc.Properties["backendFramework"].Nullable {
		t.Errorf("an enum must stay non-nullable, so that a null is dropped rather than rejected")
	}
	containers := svc.Properties["extraPodSpec"].Properties["containers"]
	if !containers.Nullable {
		t.Errorf("extraPodSpec.containers must be nullable")
	}
	item := containers.Items.Schema
	if item.Properties["name"].Nullable || item.Properties["protocol"].Nullable {
		t.Errorf("required fields and fields with a default must stay non-nullable: %+v", item.Properties)
	}
}

func TestAddConversionOnlyForKindsWithSeveralSchemas(t *testing.T) {
	path, port := "/convert", int32(443)
	webhook := &apiextensionsv1.CustomResourceConversion{
		Strategy: apiextensionsv1.WebhookConverter,
		Webhook: &apiextensionsv1.WebhookConversion{
			ConversionReviewVersions: []string{"v1"},
			ClientConfig: &apiextensionsv1.WebhookClientConfig{
				Service: &apiextensionsv1.ServiceReference{
					Namespace: "dynamo-system",
					Name:      "dynamo-operator-webhook",
					Path:      &path,
					Port:      &port,
				},
			},
		},
	}
	// schema is a version's schema with one property, named field.
	schema := func(field string) *apiextensionsv1.CustomResourceValidation {
		return &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
			Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{field: {Type: "string"}},
		}}
	}
	tests := map[string]struct {
		// versions maps each version's name to its schema's one field.
		versions map[string]string
		want     *apiextensionsv1.CustomResourceConversion
	}{
		"one version keeps the default (no conversion)": {versions: map[string]string{"v1alpha1": "services"}},
		"two versions are converted by the webhook": {
			versions: map[string]string{"v1alpha1": "services", "v1beta1": "components"}, want: webhook,
		},
		"two versions of one schema keep the default": {versions: map[string]string{"v1alpha1": "replicas", "v1beta1": "replicas"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			for _, v := range slices.Sorted(maps.Keys(tc.versions)) {
				// Each version describes itself: descriptions do not make
				// two schemas differ.
				sc := schema(tc.versions[v])
				sc.OpenAPIV3Schema.Description = "the " + v + " kind"
				crd.Spec.Versions = append(crd.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{Name: v, Schema: sc})
			}
			addConversion(crd)
			// The tools module has no go-cmp; YAML shows a difference as well.
			if !reflect.DeepEqual(tc.want, crd.Spec.Conversion) {
				want, _ := yaml.Marshal(tc.want)
				got, _ := yaml.Marshal(crd.Spec.Conversion)
				t.Errorf("spec.conversion:\nwant:\n%s\ngot:\n%s", want, got)
			}
		})
	}
}
