package steps

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/util/jsonpath"
)

// ParseManifests reads a multi-document YAML or JSON stream into objects,
// skipping empty documents. Every object must name its apiVersion and kind.
func ParseManifests(data []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for i := 1; ; i++ {
		var obj map[string]any
		if err := dec.Decode(&obj); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if len(obj) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: obj}
		if u.GetAPIVersion() == "" || u.GetKind() == "" {
			return nil, fmt.Errorf("document %d: apiVersion and kind are required", i)
		}
		out = append(out, u)
	}
}

// SubsetDiff lists every value present in want that is missing from got or
// differs there, by field path. Fields only in got (defaults, status,
// server-set metadata) are not differences. Numbers compare by value.
func SubsetDiff(want, got map[string]any) []string {
	var diffs []string
	subsetDiff(normalize(want), normalize(got), "", &diffs)
	sort.Strings(diffs)
	return diffs
}

func subsetDiff(want, got any, path string, diffs *[]string) {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			*diffs = append(*diffs, fmt.Sprintf("%s: expected an object, got %s", orRoot(path), describe(got)))
			return
		}
		for k, wv := range w {
			gv, present := g[k]
			if !present {
				*diffs = append(*diffs, fmt.Sprintf("%s.%s: missing (pruned or dropped)", path, k))
				continue
			}
			subsetDiff(wv, gv, path+"."+k, diffs)
		}
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			*diffs = append(*diffs, fmt.Sprintf("%s: expected %d items, got %s", orRoot(path), len(w), describe(got)))
			return
		}
		for i := range w {
			subsetDiff(w[i], g[i], fmt.Sprintf("%s[%d]", path, i), diffs)
		}
	default:
		if !reflect.DeepEqual(want, got) {
			*diffs = append(*diffs, fmt.Sprintf("%s: expected %v, got %s", orRoot(path), want, describe(got)))
		}
	}
}

func orRoot(path string) string {
	if path == "" {
		return "."
	}
	return path
}

func describe(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	if len(b) > 120 {
		return string(b[:117]) + "..."
	}
	return string(b)
}

// normalize round-trips a value through JSON so that int64 and float64 of
// the same number compare equal.
func normalize(v map[string]any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return v
	}
	return out
}

// shortNames are the kubectl short names of this project's kinds.
var shortNames = map[string]string{
	"dgd": "DynamoGraphDeployment",
	"dcd": "DynamoComponentDeployment",
	"dm":  "DynamoModel",
	"dc":  "DynamoComponent",
}

// ResolveKind turns a name as a user writes it (Kind, resource, plural or
// short name: "DynamoGraphDeployment", "dgd", "deployment", "services") into
// a group, version and kind.
func ResolveKind(mapper meta.RESTMapper, name string) (schema.GroupVersionKind, error) {
	if kind, ok := shortNames[strings.ToLower(name)]; ok {
		name = kind
	}
	gvk, err := mapper.KindFor(schema.GroupVersionResource{Resource: strings.ToLower(name)})
	if err != nil {
		return schema.GroupVersionKind{}, fmt.Errorf("unknown kind %q: %w", name, err)
	}
	return gvk, nil
}

// JSONPathValue evaluates a kubectl-style JSONPath ("{.spec.replicas}" or
// ".spec.replicas") against obj and prints the result as kubectl -o jsonpath
// would. A path that matches nothing is an error naming the path.
func JSONPathValue(obj map[string]any, path string) (string, error) {
	if !strings.HasPrefix(path, "{") {
		path = "{" + path + "}"
	}
	jp := jsonpath.New("field")
	if err := jp.Parse(path); err != nil {
		return "", fmt.Errorf("bad field path %s: %w", path, err)
	}
	var buf bytes.Buffer
	if err := jp.Execute(&buf, obj); err != nil {
		return "", fmt.Errorf("field %s: %w", path, err)
	}
	return buf.String(), nil
}
