package v1beta1

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/dynamoctl/dynamo-operator/internal/compat"
)

// compatDir holds Dynamo's current manifests in nvidia.com/v1beta1.
const compatDir = "../../../../shared/compat-v1beta1"

// Every DynamoGraphDeployment and DynamoComponentDeployment Dynamo's users
// write in v1beta1 decodes into these types with no field unknown to them,
// and encodes back to the same document: nothing a user writes is lost
// before the conversion webhook ever sees it.
func TestCompatManifestsDecodeStrictlyAndRoundTrip(t *testing.T) {
	docs, err := compat.Documents(compatDir)
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, doc := range docs {
		var obj any
		switch doc.Kind {
		case "DynamoGraphDeployment":
			obj = &DynamoGraphDeployment{}
		case "DynamoComponentDeployment":
			obj = &DynamoComponentDeployment{}
		default:
			continue
		}
		seen++
		t.Run(doc.File, func(t *testing.T) {
			var head struct {
				APIVersion string `json:"apiVersion"`
			}
			if err := yaml.Unmarshal(doc.Raw, &head); err != nil {
				t.Fatal(err)
			}
			if head.APIVersion != GroupVersion.String() {
				t.Fatalf("apiVersion %q, want %q", head.APIVersion, GroupVersion)
			}
			if err := yaml.UnmarshalStrict(doc.Raw, obj); err != nil {
				t.Fatalf("decoding strictly: %v", err)
			}
			var want, got map[string]any
			if err := yaml.Unmarshal(doc.Raw, &want); err != nil {
				t.Fatal(err)
			}
			out, err := json.Marshal(obj)
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatal(err)
			}
			dropAddedEmpty(want, got)
			delete(got, "status") // observedGeneration and state are always encoded
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("encoding the decoded object changes it (-manifest +encoded):\n%s", diff)
			}
		})
	}
	if seen < 20 {
		t.Fatalf("found %d DynamoGraphDeployments and DynamoComponentDeployments under %s, want the whole set (at least 20)", seen, compatDir)
	}
}

// dropAddedEmpty removes from got what encoding adds to a manifest for the
// structs it leaves out: keys the manifest (want) does not have whose value
// is null or an object of such values (`creationTimestamp: null`, a
// container's `resources: {}`, a pod template's `metadata: {}`). A `{}` the
// manifest writes itself (`failover: {}`) must survive, and anything else
// encoding loses or changes stays visible.
func dropAddedEmpty(want, got any) {
	switch g := got.(type) {
	case map[string]any:
		w, _ := want.(map[string]any)
		for k, child := range g {
			if wchild, ok := w[k]; ok {
				dropAddedEmpty(wchild, child)
			} else if isEmpty(child) {
				delete(g, k)
			}
		}
	case []any:
		w, _ := want.([]any)
		for i := range g {
			if i < len(w) {
				dropAddedEmpty(w[i], g[i])
			}
		}
	}
}

func isEmpty(v any) bool {
	if v == nil {
		return true
	}
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	for _, child := range m {
		if !isEmpty(child) {
			return false
		}
	}
	return true
}
