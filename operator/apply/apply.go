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
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/utils/clock"
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
	// Clock ages the memory of recent writes; the real clock when nil.
	Clock clock.PassiveClock
	// MaxRecent bounds how many recent writes are remembered;
	// DefaultMaxRecent when 0.
	MaxRecent int
	// MaxVerified bounds how many objects' last verification is
	// remembered (verified.go); DefaultMaxVerified when 0.
	MaxVerified int

	// recent remembers what this Applier wrote lately, because the cache a
	// reconcile reads from may not show its own writes yet: a child created
	// a moment ago still looks absent, and applying it again would be a
	// second write and a second "Created" event. An entry is only useful
	// for CacheLag, so entries older than that are swept, and the map never
	// holds more than MaxRecent: graphs created and deleted faster than a
	// reconcile confirms their children would otherwise grow it without
	// bound. Forgetting early costs at most one redundant write.
	mu        sync.Mutex
	recent    map[string]recentWrite
	lastSweep time.Time

	// verified remembers which desired objects were found already held,
	// and by which version of the live object (verified.go).
	verified verifiedSet
	// fullChecks counts comparisons of a whole live object with a desired
	// one, for tests of verified.
	fullChecks atomic.Int64
}

// DefaultMaxRecent is enough for every write of CacheLag at a few hundred
// writes per second, the most an API server takes from one client.
const DefaultMaxRecent = 4096

// CacheLag bounds how long a write of ours may be missing from the cache.
// Past it, the cache is the truth again, so drift is still corrected; a
// caller that was told Assumed reconciles again after it.
const CacheLag = 10 * time.Second

// Outcome says what Apply did.
type Outcome int

const (
	// Unchanged: the object already held the desired configuration.
	Unchanged Outcome = iota
	// Applied: the desired configuration was written.
	Applied
	// Assumed: nothing was written because this Applier wrote the same
	// configuration moments ago and the cache does not show it yet. If the
	// object was changed or deleted meanwhile, only a reconcile after
	// CacheLag will notice.
	Assumed
)

type recentWrite struct {
	hash string
	at   time.Time
	// stored is the object as the API server returned it, as JSON: a
	// few kilobytes where the map it is decoded from only when a caller
	// needs it (Assumed) is ten times that, and thousands of these are
	// held while a burst of graphs is being created.
	stored []byte
}

// Apply makes the cluster hold desired. live is the object as last seen
// (from the cache), or nil when it does not exist. When live already carries
// desired's hash and every desired field, nothing is written and changed is
// false; likewise when the cache does not yet show what this Applier itself
// applied moments ago. Otherwise desired is applied, forcing ownership of
// its fields. Either way, on return desired holds the object as stored,
// status included.
//
// desired must have its apiVersion and kind set.
func (a *Applier) Apply(ctx context.Context, desired, live client.Object) (Outcome, error) {
	// The cheap check first: the same desired object, already found held by
	// this very version of live (verified.go).
	check, hit := a.checkVerified(desired, live)
	if hit {
		return Unchanged, nil
	}
	want, err := toApplyMap(desired)
	if err != nil {
		return Unchanged, err
	}
	hash, err := Hash(want)
	if err != nil {
		return Unchanged, err
	}
	key := recentKey(want)
	if live != nil && live.GetAnnotations()[HashAnnotation] == hash {
		if held, err := a.liveHolds(desired, live, want, key, check); held || err != nil {
			return Unchanged, err
		}
	} else if rw, ok := a.lookup(key); ok && rw.hash == hash && a.now().Sub(rw.at) < CacheLag {
		// The cache lags behind our own write of this very configuration.
		return Assumed, readBack(rw.stored, desired)
	}
	return a.write(ctx, desired, want, hash, key)
}

// liveHolds says whether live, which carries want's hash, holds every
// field of want; then desired is set to live, and the cache has caught up
// with any write of ours.
func (a *Applier) liveHolds(desired, live client.Object, want map[string]any, key string, c check) (bool, error) {
	a.fullChecks.Add(1)
	have, err := runtime.DefaultUnstructuredConverter.ToUnstructured(live)
	if err != nil {
		return false, err
	}
	// Typed objects read through a client often carry no apiVersion and
	// kind; live is of desired's kind by construction.
	have["apiVersion"], have["kind"] = want["apiVersion"], want["kind"]
	if !Contains(have, want) {
		return false, nil
	}
	a.forget(key) // the cache has caught up
	a.verified.put(c, a.MaxVerified, a.now())
	return true, runtime.DefaultUnstructuredConverter.FromUnstructured(have, desired)
}

// readBack sets desired to the object our write stored.
func readBack(stored []byte, desired client.Object) error {
	var m map[string]any
	// utiljson: whole numbers come back as int64, as the API server's
	// answer had them, not float64.
	if err := utiljson.Unmarshal(stored, &m); err != nil {
		return err
	}
	return runtime.DefaultUnstructuredConverter.FromUnstructured(m, desired)
}

// write server-side applies want with its hash, sets desired to the
// answer, and remembers it until the cache shows it.
func (a *Applier) write(ctx context.Context, desired client.Object, want map[string]any, hash, key string) (Outcome, error) {
	u := &unstructured.Unstructured{Object: want}
	annotations := u.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[HashAnnotation] = hash
	u.SetAnnotations(annotations)
	if err := a.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u),
		client.FieldOwner(a.FieldOwner), client.ForceOwnership); err != nil {
		return Unchanged, err
	}
	// The memory of this write stands in for the object until the cache
	// shows it; its managedFields, often the largest part of the response,
	// are what no caller reads from it.
	unstructured.RemoveNestedField(u.Object, "metadata", "managedFields")
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, desired); err != nil {
		return Applied, fmt.Errorf("reading back applied %s %s: %w", u.GetKind(), u.GetName(), err)
	}
	stored, err := json.Marshal(u.Object)
	if err != nil {
		return Applied, err
	}
	a.remember(key, recentWrite{hash: hash, at: a.now(), stored: stored})
	return Applied, nil
}

// ApplyKept is Apply for an object whose content is kept as another
// renderer (another version of this operator, or Dynamo's) wrote it:
// desired's spec is live's own, copied with every default the API server
// filled in, so its hash never matches the one that renderer recorded. It
// writes only when live lacks a desired field (ownership, labels,
// annotations, replicas), not merely because the hash differs: re-applying
// identical content would change only the hash annotation, and a changed
// annotation bumps a Deployment's generation, so every graph would turn not
// Ready until its Deployments observed it, all at once, on an operator
// upgrade.
func (a *Applier) ApplyKept(ctx context.Context, desired, live client.Object) (Outcome, error) {
	if live == nil {
		return a.Apply(ctx, desired, live)
	}
	want, err := toApplyMap(desired)
	if err != nil {
		return Unchanged, err
	}
	have, err := runtime.DefaultUnstructuredConverter.ToUnstructured(live)
	if err != nil {
		return Unchanged, err
	}
	have["apiVersion"], have["kind"] = want["apiVersion"], want["kind"]
	if !Contains(have, want) {
		return a.Apply(ctx, desired, live)
	}
	a.forget(recentKey(want))
	return Unchanged, runtime.DefaultUnstructuredConverter.FromUnstructured(have, desired)
}

// Forget drops the memory of writes to an object, for when it is deleted.
func (a *Applier) Forget(obj client.Object) {
	// Typed objects from the cache carry no apiVersion and kind.
	gvk, err := a.Client.GroupVersionKindFor(obj)
	if err != nil {
		return
	}
	key := objectKey(gvk.GroupKind(), obj.GetNamespace(), obj.GetName())
	a.forget(key)
	a.verified.drop(key)
}

// Remembered is how many recent writes the Applier holds in memory.
func (a *Applier) Remembered() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.recent)
}

func (a *Applier) lookup(key string) (recentWrite, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	rw, ok := a.recent[key]
	return rw, ok
}

func (a *Applier) forget(key string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.recent, key)
}

// remember records a write, first sweeping entries past CacheLag (at most
// once per CacheLag unless the map is full) and, when it is still full,
// dropping the oldest.
func (a *Applier) remember(key string, rw recentWrite) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.recent == nil {
		a.recent = map[string]recentWrite{}
	}
	limit := a.MaxRecent
	if limit <= 0 {
		limit = DefaultMaxRecent
	}
	_, replacing := a.recent[key]
	full := !replacing && len(a.recent) >= limit
	if full || rw.at.Sub(a.lastSweep) >= CacheLag {
		a.lastSweep = rw.at
		for k, old := range a.recent {
			if rw.at.Sub(old.at) >= CacheLag {
				delete(a.recent, k)
			}
		}
		if full && len(a.recent) >= limit {
			oldest, first := "", true
			for k, old := range a.recent {
				if first || old.at.Before(a.recent[oldest].at) {
					oldest, first = k, false
				}
			}
			delete(a.recent, oldest)
		}
	}
	a.recent[key] = rw
}

func (a *Applier) now() time.Time {
	if a.Clock == nil {
		return time.Now()
	}
	return a.Clock.Now()
}

func recentKey(m map[string]any) string {
	u := unstructured.Unstructured{Object: m}
	return objectKey(u.GroupVersionKind().GroupKind(), u.GetNamespace(), u.GetName())
}

// objectKey names an object in the Applier's memories (recent writes,
// verifications).
func objectKey(gk schema.GroupKind, namespace, name string) string {
	return gk.String() + "/" + namespace + "/" + name
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
