package apply

import (
	"fmt"
	"sort"
)

// Contains reports whether every value in want is present and equal in have.
// Fields only in have (server defaults, fields other managers own) do not
// matter; lists must match item by item.
func Contains(have, want map[string]any) bool {
	return len(Diff(have, want)) == 0
}

// Diff lists, by field path, every value of want that is missing from have
// or differs there. Numbers compare by value whatever their Go type.
func Diff(have, want map[string]any) []string {
	var diffs []string
	diff(have, want, "", &diffs)
	sort.Strings(diffs)
	return diffs
}

func diff(have, want any, path string, diffs *[]string) {
	switch w := want.(type) {
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			*diffs = append(*diffs, fmt.Sprintf("%s: expected an object, got %v", root(path), have))
			return
		}
		for k, wv := range w {
			hv, present := h[k]
			if !present {
				// The API server drops empty objects and lists it is given
				// (resources: {}); they ask for nothing, so nothing is missing.
				if !isEmpty(wv) {
					*diffs = append(*diffs, fmt.Sprintf("%s.%s: missing", path, k))
				}
				continue
			}
			diff(hv, wv, path+"."+k, diffs)
		}
	case []any:
		h, ok := have.([]any)
		if !ok || len(h) != len(w) {
			*diffs = append(*diffs, fmt.Sprintf("%s: expected %d items, got %v", root(path), len(w), have))
			return
		}
		for i := range w {
			diff(h[i], w[i], fmt.Sprintf("%s[%d]", path, i), diffs)
		}
	default:
		if !scalarEqual(have, want) {
			*diffs = append(*diffs, fmt.Sprintf("%s: expected %v, got %v", root(path), want, have))
		}
	}
}

func isEmpty(v any) bool {
	switch t := v.(type) {
	case map[string]any:
		return len(t) == 0
	case []any:
		return len(t) == 0
	}
	return false
}

func root(path string) string {
	if path == "" {
		return "."
	}
	return path
}

func scalarEqual(a, b any) bool {
	if fa, ok := number(a); ok {
		fb, ok := number(b)
		return ok && fa == fb
	}
	return a == b
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int:
		return float64(n), true
	case int32:
		return float64(n), true
	case int64:
		return float64(n), true
	case float32:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}
