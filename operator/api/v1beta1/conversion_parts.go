package v1beta1

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A part is one field (or a few fields that convert together) of an object
// of version S, whose other version is O. Conversion projects S to O and
// back; a part that does not come back equal is saved, whole, in an
// annotation of the O object (see the package doc), with the fingerprint of
// the O fields it is represented in. Going back, the saved value replaces
// the projected one while those O fields are unchanged; once they were
// edited, the edit wins (stale), except where merge says what the edit
// could not have expressed.
type part[S, O any] struct {
	name string
	get  func(*S) any
	set  func(*S, []byte) error
	// of returns the fields of O the part is represented in; nil when O
	// has nothing of it, so that no edit of O can make the saved value stale.
	of func(*O) any
	// merge, when set, is what a stale saved value still contributes.
	merge func(*S, []byte) error
}

// fieldPart builds a part from a typed getter and setter.
func fieldPart[S, O, T any](name string, get func(*S) T, set func(*S, T), of func(*O) any) part[S, O] {
	return part[S, O]{
		name: name,
		get:  func(s *S) any { return get(s) },
		set: func(s *S, raw []byte) error {
			var v T
			if err := json.Unmarshal(raw, &v); err != nil {
				return err
			}
			set(s, v)
			return nil
		},
		of: of,
	}
}

// savedPart is one saved part: its value and the fingerprint of the fields
// of the other version it was represented in when saved.
type savedPart struct {
	Value json.RawMessage `json:"value"`
	Of    string          `json:"of,omitempty"`
}

// parts are the saved parts of one object or of one item of it, by name.
type parts map[string]savedPart

// saved is what one annotation holds: the parts of the object itself and
// those of its items (a graph's services or components, a status's
// entries), by item name.
type saved struct {
	Parts parts            `json:"parts,omitempty"`
	Items map[string]parts `json:"items,omitempty"`
}

func (s *saved) empty() bool { return s == nil || (len(s.Parts) == 0 && len(s.Items) == 0) }

// item returns the saved parts of the named item, nil if none.
func (s *saved) item(name string) parts {
	if s == nil {
		return nil
	}
	return s.Items[name]
}

// putItem records the saved parts of an item, if any.
func (s *saved) putItem(name string, p parts) {
	if len(p) == 0 {
		return
	}
	if s.Items == nil {
		s.Items = map[string]parts{}
	}
	s.Items[name] = p
}

// fingerprint identifies the value of the other version's fields a part is
// represented in. Values are compared as the API server would store them:
// empty lists and maps and nulls are dropped, so that the fingerprint does
// not change on a write that only normalized them.
func fingerprint(v any) (string, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	var generic any
	if err := json.Unmarshal(raw, &generic); err != nil {
		return "", err
	}
	raw, err = json.Marshal(pruneEmpty(generic))
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:8]), nil
}

// pruneEmpty drops nulls, empty lists and empty maps, recursively; it
// returns nil when nothing remains.
func pruneEmpty(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if e = pruneEmpty(e); e == nil {
				delete(v, k)
			} else {
				v[k] = e
			}
		}
		if len(v) == 0 {
			return nil
		}
	case []any:
		for i, e := range v {
			v[i] = pruneEmpty(e)
		}
		if len(v) == 0 {
			return nil
		}
	}
	return v
}

// saveParts returns the parts of src that the projection back from other
// did not reproduce in back (back is other converted back to S).
func saveParts[S, O any](list []part[S, O], src, back *S, other *O) (parts, error) {
	var out parts
	for _, p := range list {
		v := p.get(src)
		if apiequality.Semantic.DeepEqual(v, p.get(back)) {
			continue
		}
		raw, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("save %s: %w", p.name, err)
		}
		sp := savedPart{Value: raw}
		if p.of != nil {
			if sp.Of, err = fingerprint(p.of(other)); err != nil {
				return nil, fmt.Errorf("save %s: %w", p.name, err)
			}
		}
		if out == nil {
			out = parts{}
		}
		out[p.name] = sp
	}
	return out, nil
}

// restoreParts writes the saved parts back into dst, converted from other,
// in the order of list: a saved value whose fingerprint still matches
// replaces the converted one; a stale one contributes only its merge.
func restoreParts[S, O any](list []part[S, O], dst *S, other *O, saved parts) error {
	for _, p := range list {
		sp, ok := saved[p.name]
		if !ok {
			continue
		}
		current := ""
		if p.of != nil {
			var err error
			if current, err = fingerprint(p.of(other)); err != nil {
				return fmt.Errorf("restore %s: %w", p.name, err)
			}
		}
		apply := p.set
		if current != sp.Of {
			apply = p.merge
		}
		if apply == nil {
			continue
		}
		if err := apply(dst, sp.Value); err != nil {
			return fmt.Errorf("restore %s: %w", p.name, err)
		}
	}
	return nil
}

// takeSaved removes the annotation key from meta and returns what it held.
// An annotation that does not parse is dropped: it was not written by this
// conversion, and the object converts as if it had none.
func takeSaved(meta *metav1.ObjectMeta, key string) *saved {
	raw, ok := meta.Annotations[key]
	if !ok {
		return nil
	}
	delete(meta.Annotations, key)
	if len(meta.Annotations) == 0 {
		meta.Annotations = nil
	}
	var s saved
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		return nil
	}
	return &s
}

// putSaved writes s under key, or nothing when s is empty.
func putSaved(meta *metav1.ObjectMeta, key string, s *saved) error {
	if s.empty() {
		return nil
	}
	raw, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("annotation %s: %w", key, err)
	}
	if meta.Annotations == nil {
		meta.Annotations = map[string]string{}
	}
	meta.Annotations[key] = string(raw)
	return nil
}

// withoutConversionAnnotations returns meta without any annotation of
// ConversionAnnotations: each conversion reads those of its source and
// writes its own.
func withoutConversionAnnotations(meta metav1.ObjectMeta) metav1.ObjectMeta {
	out := *meta.DeepCopy()
	for _, k := range ConversionAnnotations {
		delete(out.Annotations, k)
	}
	if len(out.Annotations) == 0 {
		out.Annotations = nil
	}
	return out
}

// sortedKeys returns the keys of m in order.
func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
