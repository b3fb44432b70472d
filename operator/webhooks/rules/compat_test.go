package rules

import (
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/dynamoctl/dynamo-operator/internal/compat"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

// compatDir holds the manifests Dynamo's users run; the webhooks must accept
// every one (features/api.feature checks the same through the API server).
const compatDir = "../../../../shared/compat"

func TestCompatManifestsPassEveryRule(t *testing.T) {
	docs, err := compat.Documents(compatDir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, d := range docs {
		switch d.Kind {
		case "DynamoGraphDeployment":
			obj := &v1alpha1.DynamoGraphDeployment{}
			if err := yaml.Unmarshal(d.Raw, obj); err != nil {
				t.Fatalf("%s: %v", d.File, err)
			}
			n++
			if errs, _ := ValidateGraph(obj); len(errs) > 0 {
				t.Errorf("%s: %v", d.File, errs)
			}
			if errs, _ := ValidateGraphUpdate(obj, obj.DeepCopy()); len(errs) > 0 {
				t.Errorf("%s: unchanged update: %v", d.File, errs)
			}
		case "DynamoModel":
			obj := &v1alpha1.DynamoModel{}
			if err := yaml.Unmarshal(d.Raw, obj); err != nil {
				t.Fatalf("%s: %v", d.File, err)
			}
			n++
			if errs, _ := ValidateModel(obj); len(errs) > 0 {
				t.Errorf("%s: %v", d.File, errs)
			}
		}
	}
	if n == 0 {
		t.Fatal("no compat manifests found")
	}
	t.Logf("%d compat objects pass every webhook rule", n)
}
