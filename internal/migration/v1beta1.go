package migration

import (
	"fmt"
	"path/filepath"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
)

// V1beta1File holds the graphs and components of the shared fixtures as
// Dynamo's current operator stores them, in nvidia.com/v1beta1, relative to
// the repository root (written by v1beta1gen).
const V1beta1File = "internal/migration/testdata/v1beta1/graphs-and-components.yaml"

// DynamoWebhook is the conversion webhook Dynamo's current operator's CRDs
// name (config/crd/convert-patch.yaml in ai-dynamo/dynamo): its Service,
// which goes with its release.
var DynamoWebhook = apiextensionsv1.ServiceReference{Namespace: "dynamo-operator", Name: "dynamo-operator-webhook-service", Path: ptr.To("/convert")}

// convertedKinds are the CRDs Dynamo's current operator serves in
// v1alpha1 and v1beta1, stored in v1beta1.
var convertedKinds = map[string]bool{
	"dynamographdeployments.nvidia.com":     true,
	"dynamocomponentdeployments.nvidia.com": true,
}

// LoadV1beta1 is Load of a cluster Dynamo's current operator left: the
// graphs and components stored in v1beta1 (V1beta1File under repoRoot), the
// same children, and its CRDs as DynamoV1beta1CRDs makes them from ours.
func LoadV1beta1(repoRoot string, ours []*apiextensionsv1.CustomResourceDefinition) (*Fixtures, error) {
	f, err := Load(Dir(repoRoot))
	if err != nil {
		return nil, err
	}
	beta, err := readObjects(filepath.Join(repoRoot, V1beta1File))
	if err != nil {
		return nil, err
	}
	var children []*unstructured.Unstructured
	for _, o := range f.Objects {
		if o.GroupVersionKind().Group != "nvidia.com" {
			children = append(children, o)
		}
	}
	f.Objects = append(beta, children...)
	if f.DynamoCRDs, err = DynamoV1beta1CRDs(f.DynamoCRDs, ours); err != nil {
		return nil, err
	}
	return f, nil
}

// DynamoV1beta1CRDs are the CRDs of Dynamo's current operator in what
// matters to a take-over: the graphs' and components' served in v1alpha1
// and v1beta1, stored in v1beta1, converted by its webhook (DynamoWebhook,
// whose Service is gone once its release is); the other kinds as its
// older CRDs (olderDynamo) have them. The schemas are ours (ours), which
// serve Dynamo's v1beta1 objects.
func DynamoV1beta1CRDs(olderDynamo, ours []*apiextensionsv1.CustomResourceDefinition) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, crd := range olderDynamo {
		if !convertedKinds[crd.Name] {
			out = append(out, crd)
		}
	}
	for name := range convertedKinds {
		crd := find(ours, name)
		if crd == nil {
			return nil, fmt.Errorf("no CRD %s of ours", name)
		}
		crd = crd.DeepCopy()
		for i := range crd.Spec.Versions {
			crd.Spec.Versions[i].Storage = crd.Spec.Versions[i].Name == "v1beta1"
		}
		crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{
			Strategy: apiextensionsv1.WebhookConverter,
			Webhook: &apiextensionsv1.WebhookConversion{
				ClientConfig:             &apiextensionsv1.WebhookClientConfig{Service: DynamoWebhook.DeepCopy()},
				ConversionReviewVersions: []string{"v1"},
			},
		}
		out = append(out, crd)
	}
	return out, nil
}

func find(crds []*apiextensionsv1.CustomResourceDefinition, name string) *apiextensionsv1.CustomResourceDefinition {
	for _, c := range crds {
		if c.Name == name {
			return c
		}
	}
	return nil
}
