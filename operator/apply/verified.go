package apply

import (
	"crypto/sha256"
	"encoding/json"
	"reflect"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Comparing a live object with a desired one means converting both to maps,
// and at 500 graphs that was half of everything the operator allocated:
// a graph is reconciled each time one of its components changes, and each
// reconcile compares every child again although almost none changed. So the
// Applier remembers, per object, a digest of the desired object it last
// found held and a fingerprint of the live version it found it in. When a
// reconcile brings the same desired object and the same version of live,
// the answer is the same: Unchanged, with no conversion.
//
// The fingerprint must change whenever a field the comparison reads may
// have: by default it is the live object's resourceVersion, which changes
// with every write. For kinds whose metadata.generation counts every change
// but those of metadata and status (generationKinds), it is the generation
// and the metadata the Applier sets, so that the status writes of a
// Deployment or a component, the most frequent writes of all, do not make a
// child look changed.

// generationKinds are the kinds whose metadata.generation the API server
// increments on every change outside metadata and status: Deployments (any
// spec change) and custom resources with a status subresource.
var generationKinds = map[schema.GroupKind]bool{
	{Group: "apps", Kind: "Deployment"}:                          true,
	{Group: "nvidia.com", Kind: "DynamoComponentDeployment"}:     true,
	{Group: "nvidia.com", Kind: "DynamoGraphDeployment"}:         true,
	{Group: "leaderworkerset.x-k8s.io", Kind: "LeaderWorkerSet"}: true,
}

// DefaultMaxVerified bounds the objects whose verification is remembered:
// more than the children of a few thousand graphs. Past it an arbitrary
// entry is dropped, which costs that object one whole comparison.
const DefaultMaxVerified = 1 << 16

// digest is a truncated SHA-256: 128 bits are plenty to tell apart the
// versions of one object, and half the memory per entry.
type digest [16]byte

func digestOf(b []byte) digest {
	sum := sha256.Sum256(b)
	return digest(sum[:16])
}

// verification records that the desired object with digest desired was
// held by the live object with fingerprint live.
type verification struct {
	desired, live digest
}

// verifiedTTL is how long an unused verification is kept. Objects the
// garbage collector deletes (a deleted graph's children) are never
// forgotten explicitly; their entries go after this. An entry swept while
// its object lives costs that object's next reconcile one whole comparison.
const verifiedTTL = 10 * time.Minute

// verifiedEntry is a verification and when it was last used.
type verifiedEntry struct {
	v    verification
	used int64 // unix nanoseconds
}

// verifiedSet maps a digest of an object's key to its last verification.
type verifiedSet struct {
	mu        sync.Mutex
	entries   map[digest]verifiedEntry
	lastSweep time.Time
}

// check is a lookup in a verifiedSet, kept to record its answer.
type check struct {
	key digest
	v   verification
	ok  bool // false: this pair cannot be checked this way
}

func (s *verifiedSet) has(c check, now time.Time) bool {
	if !c.ok {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, found := s.entries[c.key]
	if !found || e.v != c.v {
		return false
	}
	e.used = now.UnixNano()
	s.entries[c.key] = e
	return true
}

// put records c, first sweeping entries unused for verifiedTTL (at most
// once a minute unless the set is full) and, when it is still full,
// dropping an arbitrary one.
func (s *verifiedSet) put(c check, limit int, now time.Time) {
	if !c.ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.entries == nil {
		s.entries = map[digest]verifiedEntry{}
	}
	if limit <= 0 {
		limit = DefaultMaxVerified
	}
	_, replacing := s.entries[c.key]
	full := !replacing && len(s.entries) >= limit
	if full || now.Sub(s.lastSweep) >= time.Minute {
		s.lastSweep = now
		for k, e := range s.entries {
			if now.Sub(time.Unix(0, e.used)) >= verifiedTTL {
				delete(s.entries, k)
			}
		}
		if full && len(s.entries) >= limit {
			for k := range s.entries {
				delete(s.entries, k)
				break
			}
		}
	}
	s.entries[c.key] = verifiedEntry{v: c.v, used: now.UnixNano()}
}

func (s *verifiedSet) drop(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.entries, digestOf([]byte(key)))
}

func (s *verifiedSet) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.entries)
}

// checkVerified answers whether desired was already found held by this
// version of live; if so, desired now holds live (as the whole comparison
// would have left it). The check is returned to record a whole comparison's
// positive answer.
func (a *Applier) checkVerified(desired, live client.Object) (check, bool) {
	if live == nil || reflect.TypeOf(desired) != reflect.TypeOf(live) {
		return check{}, false
	}
	gvk := desired.GetObjectKind().GroupVersionKind()
	// Without a UID and a version, live does not name one stored version:
	// a made-up object, not one read from the cache or the API server.
	if gvk.Empty() || live.GetUID() == "" || live.GetResourceVersion() == "" ||
		(generationKinds[gvk.GroupKind()] && live.GetGeneration() == 0) {
		return check{}, false
	}
	// A typed object marshals the same way each time: fields in their
	// declared order, map keys sorted.
	d, err := json.Marshal(desired)
	if err != nil {
		return check{}, false
	}
	f, err := fingerprint(gvk.GroupKind(), live)
	if err != nil {
		return check{}, false
	}
	key := objectKey(gvk.GroupKind(), desired.GetNamespace(), desired.GetName())
	c := check{key: digestOf([]byte(key)), v: verification{desired: digestOf(d), live: digestOf(f)}, ok: true}
	if !a.verified.has(c, a.now()) {
		return c, false
	}
	held := live.DeepCopyObject()
	reflect.ValueOf(desired).Elem().Set(reflect.ValueOf(held).Elem())
	desired.GetObjectKind().SetGroupVersionKind(gvk)
	a.forget(key) // the cache has caught up, as in a whole comparison
	return c, true
}

// fingerprint identifies the version of live a comparison read.
func fingerprint(gk schema.GroupKind, live client.Object) ([]byte, error) {
	if !generationKinds[gk] {
		return []byte(string(live.GetUID()) + "/" + live.GetResourceVersion()), nil
	}
	return json.Marshal(struct {
		UID         string
		Generation  int64
		Labels      map[string]string
		Annotations map[string]string
		Owners      any
		Finalizers  []string
		Deleted     any
	}{string(live.GetUID()), live.GetGeneration(), live.GetLabels(), live.GetAnnotations(),
		live.GetOwnerReferences(), live.GetFinalizers(), live.GetDeletionTimestamp()})
}
