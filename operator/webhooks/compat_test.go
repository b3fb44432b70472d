package webhooks

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

// compatDir holds the manifests Dynamo's users run; the webhooks must accept
// every one (features/api.feature checks the same through the API server).
const compatDir = "../../../shared/compat"

func TestCompatManifestsPassEveryRule(t *testing.T) {
	n := 0
	err := filepath.WalkDir(compatDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !(strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml")) {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
		for {
			doc, err := reader.Read()
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return err
			}
			var head struct {
				Kind string `json:"kind"`
			}
			if err := yaml.Unmarshal(doc, &head); err != nil {
				return err
			}
			switch head.Kind {
			case "DynamoGraphDeployment":
				obj := &v1alpha1.DynamoGraphDeployment{}
				if err := yaml.Unmarshal(doc, obj); err != nil {
					return err
				}
				n++
				if errs, _ := ValidateGraph(obj); len(errs) > 0 {
					t.Errorf("%s: %v", path, errs)
				}
				if errs, _ := ValidateGraphUpdate(obj, obj.DeepCopy()); len(errs) > 0 {
					t.Errorf("%s: unchanged update: %v", path, errs)
				}
			case "DynamoModel":
				obj := &v1alpha1.DynamoModel{}
				if err := yaml.Unmarshal(doc, obj); err != nil {
					return err
				}
				n++
				if errs, _ := ValidateModel(obj); len(errs) > 0 {
					t.Errorf("%s: %v", path, errs)
				}
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("no compat manifests found")
	}
	t.Logf("%d compat objects pass every webhook rule", n)
}
