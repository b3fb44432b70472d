package apply

import (
	"crypto/sha256"
	"encoding/json"
	"reflect"
	"sync"

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

// verifiedSet maps a digest of an object's key to its last verification.
type verifiedSet struct {
	mu      sync.Mutex
	entries map[digest]verification
}

// check is a lookup in a verifiedSet, kept to record its answer.
type check struct {
	key digest
	v   verification
	ok  bool // false: this pair cannot be checked this way
}

func (s *verifiedSet) has(c check) bool {
	if !c.ok {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	v, found := s.entries[c.key]
	return found && v == c.v
}

func (s *verifiedSet) put(c check, limit int) {
	if !c.ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.entries == nil {
		s.entries = map[digest]verification{}
	}
	if limit <= 0 {
		limit = DefaultMaxVerified
	}
	if _, replacing := s.entries[c.key]; !replacing && len(s.entries) >= limit {
		for k := range s.entries {
			delete(s.entries, k)
			break
		}
	}
	s.entries[c.key] = c.v
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
	if gvk.Empty() {
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
	key := gvk.GroupKind().String() + "/" + desired.GetNamespace() + "/" + desired.GetName()
	c := check{key: digestOf([]byte(key)), v: verification{desired: digestOf(d), live: digestOf(f)}, ok: true}
	if !a.verified.has(c) {
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
