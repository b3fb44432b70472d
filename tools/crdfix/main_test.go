package main

import (
	"reflect"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
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
