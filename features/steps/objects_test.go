package steps

import (
	"reflect"
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

func TestSubsetDiff(t *testing.T) {
	cases := []struct {
		name      string
		want, got map[string]any
		diffs     []string
	}{
		{
			name: "extra server fields are not differences",
			want: map[string]any{"spec": map[string]any{"replicas": int64(1)}},
			got:  map[string]any{"spec": map[string]any{"replicas": float64(1), "defaulted": "x"}, "status": map[string]any{}},
		},
		{
			name:  "a pruned field is reported by path",
			want:  map[string]any{"spec": map[string]any{"services": map[string]any{"A": map[string]any{"foo": "bar"}}}},
			got:   map[string]any{"spec": map[string]any{"services": map[string]any{"A": map[string]any{}}}},
			diffs: []string{".spec.services.A.foo: missing (pruned or dropped)"},
		},
		{
			name:  "a changed value and a shortened list",
			want:  map[string]any{"a": "x", "l": []any{"1", "2"}},
			got:   map[string]any{"a": "y", "l": []any{"1"}},
			diffs: []string{`.a: expected x, got "y"`, `.l: expected 2 items, got ["1"]`},
		},
		{
			name:  "list items compare in order",
			want:  map[string]any{"l": []any{map[string]any{"name": "a"}}},
			got:   map[string]any{"l": []any{map[string]any{"name": "b"}}},
			diffs: []string{`.l[0].name: expected a, got "b"`},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := SubsetDiff(tc.want, tc.got)
			if !reflect.DeepEqual(got, tc.diffs) && !(len(got) == 0 && len(tc.diffs) == 0) {
				t.Fatalf("SubsetDiff = %q, want %q", got, tc.diffs)
			}
		})
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
