package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDescription(t *testing.T) {
	tests := map[string]struct {
		comment   string
		want      string
		described bool
	}{
		"none":                 {comment: "", want: "", described: false},
		"a section, not a key": {comment: "# Image builds of DynamoComponents", want: "", described: false},
		"one line":             {comment: "# -- Operator replicas.", want: "Operator replicas.", described: true},
		"continued": {
			comment:   "# -- Run namespace-scoped: the operator\n# manages only targetNamespace.",
			want:      "Run namespace-scoped: the operator manages only targetNamespace.",
			described: true,
		},
		"after a section comment": {
			comment:   "# Builds.\n\n# -- buildkit or kaniko.",
			want:      "buildkit or kaniko.",
			described: true,
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			got, described := description(tt.comment)
			if got != tt.want || described != tt.described {
				t.Errorf("description(%q) = %q, %v; want %q, %v", tt.comment, got, described, tt.want, tt.described)
			}
		})
	}
}

func TestCell(t *testing.T) {
	tests := map[string]struct{ in, want string }{
		"lines joined":             {in: "a\n  b", want: "a b"},
		"pipes escaped":            {in: "Fail|Ignore", want: `Fail\|Ignore`},
		"brackets outside code":    {in: "default <release>-x", want: "default &lt;release&gt;-x"},
		"brackets in code kept":    {in: "name `<graph>-<svc>` here", want: "name `<graph>-<svc>` here"},
		"pipes in code escaped":    {in: "`a|b`", want: "`a\\|b`"},
		"brackets after code span": {in: "`x` <y>", want: "`x` &lt;y&gt;"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if got := cell(tt.in); got != tt.want {
				t.Errorf("cell(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// tableRows returns the lines of page that start with one of prefixes.
func tableRows(page []byte, prefixes ...string) map[string]bool {
	rows := map[string]bool{}
	for _, line := range strings.Split(string(page), "\n") {
		for _, p := range prefixes {
			if strings.HasPrefix(line, p) {
				rows[line] = true
			}
		}
	}
	return rows
}

// writeTree lays out files (path: content) under a new temporary root.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for path, content := range files {
		p := filepath.Join(root, path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

const testCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.nvidia.com
spec:
  group: nvidia.com
  names: {kind: Widget, plural: widgets, shortNames: [wg]}
  scope: Namespaced
  versions:
  - name: v1alpha1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            description: WidgetSpec is a widget.
            properties:
              size:
                type: integer
                description: Size of the widget.
                minimum: 1
              template:
                type: object
                description: Template of its pods.
                properties:
                  spec:
                    type: object
                    properties:
                      containers: {type: array, items: {type: object}}
`

const testChart = "apiVersion: v2\nname: platform\nversion: 0.1.0\n"

const testValues = `# Values of the platform.
sub:
  # -- Install the subchart.
  enabled: true
`

const testSubValues = `# -- Set by the parent.
enabled: true
# Section.
image:
  # -- Image repository.
  repository: example.com/op
  # -- Resources, as a whole.
  resources:
    limits: {memory: 512Mi}
tolerations: []
`

func TestValuesReference(t *testing.T) {
	root := writeTree(t, map[string]string{
		"Chart.yaml":             testChart,
		"values.yaml":            testValues,
		"charts/sub/Chart.yaml":  "apiVersion: v2\nname: sub\nversion: 0.1.0\n",
		"charts/sub/values.yaml": testSubValues,
	})
	got, err := valuesReference(root)
	if err != nil {
		t.Fatal(err)
	}
	rows := tableRows(got, "| `")
	want := map[string]bool{
		"| `sub.enabled` | bool | `true` | Install the subchart. |":                                           true,
		"| `sub.image.repository` | string | `\"example.com/op\"` | Image repository. |":                      true,
		"| `sub.image.resources` | object | `{\"limits\":{\"memory\":\"512Mi\"}}` | Resources, as a whole. |": true,
		"| `sub.tolerations` | list | `[]` |  |":                                                              true,
	}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
}

func TestAPIReference(t *testing.T) {
	root := writeTree(t, map[string]string{"widgets.yaml": testCRD})
	got, err := apiReference(root)
	if err != nil {
		t.Fatal(err)
	}
	rows := tableRows(got, "| `", "| [")
	// The embedded pod spec, undescribed, is listed but not walked into.
	want := map[string]bool{
		"| [Widget](#widget) | wg | Namespaced | **v1alpha1** |":     true,
		"| `spec` | object | WidgetSpec is a widget. |":              true,
		"| `spec.size` | integer | Size of the widget. Minimum 1. |": true,
		"| `spec.template` | object | Template of its pods. |":       true,
		"| `spec.template.spec` | object |  |":                       true,
	}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
}

// TestCheckNamesTheStalePage proves verify-docs fails on drift: generated
// pages pass the check until a source changes, then the check names the
// page and writes nothing.
func TestCheckNamesTheStalePage(t *testing.T) {
	root := writeTree(t, map[string]string{
		"crds/widgets.yaml":                            testCRD,
		"chart/dynamo-platform/Chart.yaml":             testChart,
		"chart/dynamo-platform/values.yaml":            testValues,
		"chart/dynamo-platform/charts/sub/Chart.yaml":  "apiVersion: v2\nname: sub\nversion: 0.1.0\n",
		"chart/dynamo-platform/charts/sub/values.yaml": testSubValues,
	})
	if err := run(root, true); err == nil {
		t.Fatal("check passed with no pages written")
	}
	if err := run(root, false); err != nil {
		t.Fatal(err)
	}
	if err := run(root, true); err != nil {
		t.Fatalf("check after generating: %v", err)
	}
	values := filepath.Join(root, "chart/dynamo-platform/charts/sub/values.yaml")
	if err := os.WriteFile(values, []byte(testSubValues+"# -- A new value.\nreplicas: 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(filepath.Join(root, "docs/reference/values.md"))
	if err != nil {
		t.Fatal(err)
	}
	err = run(root, true)
	if err == nil || !strings.Contains(err.Error(), "docs/reference/values.md") || strings.Contains(err.Error(), "api.md") {
		t.Fatalf("check after a values change: got %v, want an error naming values.md alone", err)
	}
	after, err := os.ReadFile(filepath.Join(root, "docs/reference/values.md"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(before), string(after)); diff != "" {
		t.Errorf("the check wrote values.md (-before +after):\n%s", diff)
	}
}
