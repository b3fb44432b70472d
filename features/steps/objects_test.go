package steps

import (
	"strings"
	"testing"
)

func TestParseManifestsSkipsEmptyDocumentsAndNeedsKind(t *testing.T) {
	objs, err := ParseManifests([]byte("---\n# comment only\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: b\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 2 || objs[0].GetName() != "a" || objs[1].GetKind() != "Secret" {
		t.Fatalf("unexpected objects: %v", objs)
	}
	if _, err := ParseManifests([]byte("metadata:\n  name: x\n")); err == nil || !strings.Contains(err.Error(), "apiVersion and kind") {
		t.Fatalf("expected a missing-kind error, got %v", err)
	}
}

func TestJSONPathValue(t *testing.T) {
	obj := map[string]any{
		"spec": map[string]any{"replicas": int64(3)},
		"status": map[string]any{"conditions": []any{
			map[string]any{"type": "Other", "status": "False"},
			map[string]any{"type": "Ready", "status": "True"},
		}},
	}
	for path, want := range map[string]string{
		".spec.replicas":   "3",
		"{.spec.replicas}": "3",
		`.status.conditions[?(@.type=="Ready")].status`: "True",
	} {
		got, err := JSONPathValue(obj, path)
		if err != nil || got != want {
			t.Errorf("JSONPathValue(%s) = %q, %v; want %q", path, got, err, want)
		}
	}
	if _, err := JSONPathValue(obj, ".spec.missing"); err == nil {
		t.Errorf("a path that matches nothing must be an error")
	}
}
