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
//
// Usage: crdfix FILE...  (rewrites each file in place)
package main

import (
	"fmt"
	"os"

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
	for i := range crd.Spec.Versions {
		if s := crd.Spec.Versions[i].Schema; s != nil && s.OpenAPIV3Schema != nil {
			walk(s.OpenAPIV3Schema, false)
		}
	}
	out, err := yaml.Marshal(&crd)
	if err != nil {
		return err
	}
	return os.WriteFile(path, append([]byte("---\n"), out...), 0o644)
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

func without(list []string, drop string) []string {
	var out []string
	for _, v := range list {
		if v != drop {
			out = append(out, v)
		}
	}
	return out
}
