package main

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/yaml"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/dynamoctl/dynamo-operator/internal/migration"
	"github.com/dynamoctl/dynamo-operator/internal/testenv"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1beta1"
)

// The checked-in fixtures are what the generator writes from the shared
// ones, and each decodes strictly into the v1beta1 types.
func TestFixturesAreCurrent(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	want, err := generate(root)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(root, migration.V1beta1File))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Fatalf("%s is stale: run go run ./internal/migration/v1beta1gen (-generated +checked in):\n%s", migration.V1beta1File, diff)
	}
	kinds := map[string]int{}
	reader := yaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(got)))
	for {
		doc, err := reader.Read()
		if err != nil {
			break
		}
		var head struct{ Kind string }
		if err := sigsyaml.Unmarshal(doc, &head); err != nil || head.Kind == "" {
			continue
		}
		var obj any = &v1beta1.DynamoGraphDeployment{}
		if head.Kind == "DynamoComponentDeployment" {
			obj = &v1beta1.DynamoComponentDeployment{}
		}
		if err := sigsyaml.UnmarshalStrict(doc, obj); err != nil {
			t.Errorf("a %s does not decode strictly as v1beta1: %v", head.Kind, err)
		}
		kinds[head.Kind]++
	}
	if diff := cmp.Diff(map[string]int{"DynamoGraphDeployment": 6, "DynamoComponentDeployment": 16}, kinds); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
}
