// Command crdfix post-processes the CRDs controller-gen writes, for two
// things markers cannot express on types we embed from k8s.io/api:
//
//   - extraPodSpec embeds a PodSpec to merge into the generated pod, so its
//     `containers` must not be required (users set only mainContainer), and
//     mainContainer is merged into the operator's main container, so its
//     `name` must not be required either.
//   - Descriptions copied from embedded Kubernetes types (PodSpec, Container,
//     Probe, EnvVar...) triple the CRDs' size; `kubectl explain pod.spec`
//     documents them already. Descriptions of our own fields are kept.
//   - Every optional field of a spec is nullable. Users' manifests (and the
//     tools that template them) write optional fields as null
//     (`subComponentType: null`, `extraPodSpec.containers: null`). A plain
//     create drops such nulls, but server-side apply (Flux, `kubectl apply
//     --server-side`) refuses a null for a field whose schema is not
//     nullable, so the same manifest would work one way and not the other.
//     Markers cannot reach the fields of embedded Kubernetes types, hence here.
//   - A kind served in more than one version with different schemas
//     (DynamoGraphDeployment and DynamoComponentDeployment: v1alpha1,
//     stored, and v1beta1) is converted by the operator's conversion webhook. controller-gen cannot say so, so
//     spec.conversion is added here, pointing at the webhook Service of the
//     chart's default release (dynamo-system/dynamo-operator-webhook,
//     /convert). It is a placeholder: whoever installs the CRDs rewrites the
//     Service and adds the CA bundle. Until then requests in the stored
//     version need no conversion and keep working.
//
// Usage: crdfix FILE...  (rewrites each file in place)
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// embeddedKubernetesFields are the properties whose schema comes from a
// Kubernetes type rather than from this project.
var embeddedKubernetesFields = map[string]bool{
	"extraPodSpec":                   true,
	"imageBuilderExtraPodSpec":       true,
	"livenessProbe":                  true,
	"readinessProbe":                 true,
	"envs":                           true,
	"imageBuilderExtraContainerEnv":  true,
	"imageBuilderContainerResources": true,
	"downloaderContainerEnvFrom":     true,
	"imagePullSecrets":               true,
	"claims":                         true,
	"configMapRef":                   true,
	"conditions":                     true,
	// nvidia.com/v1beta1: a component's (and a role's) pod template and a
	// graph's env.
	"podTemplate": true,
	"env":         true,
}

// mergedFields hold a Kubernetes object meant to be merged into one the
// operator generates, with the field that is required in a complete object.
var mergedFields = map[string]string{
	"extraPodSpec":             "containers",
	"imageBuilderExtraPodSpec": "containers",
	"mainContainer":            "name",
}

func main() {
	for _, path := range os.Args[1:] {
		if err := fixFile(path); err != nil {
			fmt.Fprintf(os.Stderr, "crdfix: %s: %v\n", path, err)
			os.Exit(1)
		}
	}
}

func fixFile(path string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(raw, &crd); err != nil {
		return err
	}
	addConversion(&crd)
	for i := range crd.Spec.Versions {
		if s := crd.Spec.Versions[i].Schema; s != nil && s.OpenAPIV3Schema != nil {
			walk(s.OpenAPIV3Schema, false)
			if spec, ok := s.OpenAPIV3Schema.Properties["spec"]; ok {
				nullableOptional(&spec)
				s.OpenAPIV3Schema.Properties["spec"] = spec
			}
		}
	}
	out, err := yaml.Marshal(&crd)
	if err != nil {
		return err
	}
	return os.WriteFile(path, append([]byte("---\n"), out...), 0o644)
}

// Where the conversion webhook is until the installer says otherwise: the
// webhook Service of the chart's default release.
const (
	conversionNamespace = "dynamo-system"
	conversionService   = "dynamo-operator-webhook"
	conversionPath      = "/convert"
	conversionPort      = 443
)

// addConversion points a CRD with more than one version at the conversion
// webhook; a CRD with one version, or whose versions share one schema
// (DynamoGraphDeploymentScalingAdapter), needs none and keeps the default:
// the API server converts it by changing apiVersion.
func addConversion(crd *apiextensionsv1.CustomResourceDefinition) {
	if len(crd.Spec.Versions) < 2 || oneSchema(crd.Spec.Versions) {
		return
	}
	path := conversionPath
	port := int32(conversionPort)
	crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{
		Strategy: apiextensionsv1.WebhookConverter,
		Webhook: &apiextensionsv1.WebhookConversion{
			ConversionReviewVersions: []string{"v1"},
			ClientConfig: &apiextensionsv1.WebhookClientConfig{
				Service: &apiextensionsv1.ServiceReference{
					Namespace: conversionNamespace,
					Name:      conversionService,
					Path:      &path,
					Port:      &port,
				},
			},
		},
	}
}

// oneSchema says whether every version has the same schema, descriptions
// aside (each version's kind documents itself).
func oneSchema(versions []apiextensionsv1.CustomResourceDefinitionVersion) bool {
	first := undescribed(versions[0].Schema)
	for _, v := range versions[1:] {
		if !reflect.DeepEqual(undescribed(v.Schema), first) {
			return false
		}
	}
	return true
}

// undescribed is s as generic JSON without its descriptions.
func undescribed(s *apiextensionsv1.CustomResourceValidation) any {
	raw, _ := json.Marshal(s)
	var v any
	_ = json.Unmarshal(raw, &v)
	var drop func(any)
	drop = func(v any) {
		switch t := v.(type) {
		case map[string]any:
			delete(t, "description")
			for _, c := range t {
				drop(c)
			}
		case []any:
			for _, c := range t {
				drop(c)
			}
		}
	}
	drop(v)
	return v
}

// walk visits every schema below s; inForeign is true under an embedded
// Kubernetes type, where descriptions are dropped.
func walk(s *apiextensionsv1.JSONSchemaProps, inForeign bool) {
	if inForeign {
		s.Description = ""
	}
	for name, prop := range s.Properties {
		foreign := inForeign || embeddedKubernetesFields[name]
		if field, ok := mergedFields[name]; ok {
			prop.Required = without(prop.Required, field)
		}
		walk(&prop, foreign)
		s.Properties[name] = prop
	}
	if s.Items != nil && s.Items.Schema != nil {
		walk(s.Items.Schema, inForeign)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		walk(s.AdditionalProperties.Schema, inForeign)
	}
}

// nullableOptional marks every property below s that is not required as
// nullable. Required properties stay non-nullable: null would not satisfy
// the rule they state. Properties with a default stay as they are too: the
// API server does not default a null on a nullable field, and list-map keys
// (a container port's protocol) must keep their default. Enums stay
// non-nullable as well: the API server checks a null it keeps against the
// enum, which no enum value (not even null) satisfies, whereas the null of a
// non-nullable field is dropped before validation, so `backendFramework:
// null` is accepted as if left out.
func nullableOptional(s *apiextensionsv1.JSONSchemaProps) {
	required := map[string]bool{}
	for _, r := range s.Required {
		required[r] = true
	}
	for name, prop := range s.Properties {
		if !required[name] && prop.Default == nil && len(prop.Enum) == 0 {
			prop.Nullable = true
		}
		nullableOptional(&prop)
		s.Properties[name] = prop
	}
	if s.Items != nil && s.Items.Schema != nil {
		nullableOptional(s.Items.Schema)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		nullableOptional(s.AdditionalProperties.Schema)
	}
}

func without(list []string, drop string) []string {
	var out []string
	for _, v := range list {
		if v != drop {
			out = append(out, v)
		}
	}
	return out
}
