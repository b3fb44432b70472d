// Package apply writes the operator's child objects with server-side apply,
// and only when something would change: a reconcile with nothing to do must
// issue no write at all, not even a no-op patch.
package apply

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// HashAnnotation holds a hash of the configuration the operator last applied
// to a child. A child whose hash matches and whose fields still hold the
// desired values needs no write.
const HashAnnotation = "nvidia.com/last-applied-hash"

// Applier server-side applies desired objects as one field manager.
type Applier struct {
	Client     client.Client
	FieldOwner string
}

// Apply makes the cluster hold desired. live is the object as last seen
// (from the cache), or nil when it does not exist. When live already carries
// desired's hash and every desired field, nothing is written and changed is
// false. Otherwise desired is applied, forcing ownership of its fields, and
// on return desired holds the object as the API server stored it.
//
// desired must have its apiVersion and kind set.
func (a *Applier) Apply(ctx context.Context, desired, live client.Object) (changed bool, err error) {
	want, err := toApplyMap(desired)
	if err != nil {
		return false, err
	}
	hash, err := Hash(want)
	if err != nil {
		return false, err
	}
	if live != nil && live.GetAnnotations()[HashAnnotation] == hash {
		have, err := runtime.DefaultUnstructuredConverter.ToUnstructured(live)
		if err != nil {
			return false, err
		}
		if Contains(have, want) {
			return false, nil
		}
	}
	u := &unstructured.Unstructured{Object: want}
	annotations := u.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[HashAnnotation] = hash
	u.SetAnnotations(annotations)
	if err := a.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u),
		client.FieldOwner(a.FieldOwner), client.ForceOwnership); err != nil {
		return false, err
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, desired); err != nil {
		return true, fmt.Errorf("reading back applied %s %s: %w", u.GetKind(), u.GetName(), err)
	}
	return true, nil
}

// toApplyMap turns a typed object into the map to apply: without status
// (written by the object's own controller) and without the nulls a typed
// struct serialises for unset fields, which apply would read as "remove".
func toApplyMap(obj client.Object) (map[string]any, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	if m["apiVersion"] == nil || m["kind"] == nil {
		return nil, fmt.Errorf("apply: %T %s has no apiVersion and kind", obj, obj.GetName())
	}
	delete(m, "status")
	pruneNulls(m)
	return m, nil
}

func pruneNulls(v any) {
	switch t := v.(type) {
	case map[string]any:
		for k, child := range t {
			if child == nil {
				delete(t, k)
				continue
			}
			pruneNulls(child)
		}
	case []any:
		for _, child := range t {
			pruneNulls(child)
		}
	}
}

// Hash is a stable digest of an object's desired configuration.
func Hash(m map[string]any) (string, error) {
	// encoding/json sorts map keys, so equal maps hash equally.
	b, err := json.Marshal(m)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:10]), nil
}
