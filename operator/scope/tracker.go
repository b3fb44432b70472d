package scope

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// never stands for the expiry of a marker Lease without a duration.
var never = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)

// Tracker keeps a cluster-wide operator out of namespaces that a
// namespace-scoped operator owns. It watches only the marker Leases (the
// cache must select them by name, see LeaseCacheOptions), excludes each
// namespace until its Lease expires, and hands the namespace back the moment
// the Lease expires or is deleted, re-enqueueing everything there so that
// changes made meanwhile are acted on.
type Tracker struct {
	Gate  *Gate
	Cache cache.Informers
	Clock Clock
	// Resume re-enqueues every object in a namespace given back.
	Resume func(ctx context.Context, namespace string)
	Log    logr.Logger
	// Reader, when set, reads a namespace's marker Lease from the API server
	// before writes there (Confirm): the watch can lag behind a Lease just
	// created, most of all on a loaded API server.
	Reader client.Reader

	mu     sync.Mutex
	ctx    context.Context
	timers map[string]clock.Timer
	// confirmed is when Confirm last found no marker Lease in a namespace.
	confirmed map[string]time.Time
}

// ConfirmTTL is how long a live read that found no marker Lease in a
// namespace stands before writes there read again. It is below the second a
// Holder settles after acquiring a Lease before its first write, so the
// two operators' writes never interleave, whatever the watch's lag.
const ConfirmTTL = 500 * time.Millisecond

// Confirm checks namespace's marker Lease with a live read, at most once
// per ConfirmTTL per namespace, and excludes the namespace at once when a
// Lease is there: see Gate.Confirm.
func (t *Tracker) Confirm(ctx context.Context, namespace string) error {
	if !t.Gate.Allowed(namespace) {
		return fmt.Errorf("%w: %s", ErrNotOwned, namespace)
	}
	now := t.Clock.Now()
	t.mu.Lock()
	last, ok := t.confirmed[namespace]
	t.mu.Unlock()
	if ok && now.Sub(last) < ConfirmTTL {
		return nil
	}
	l := &coordinationv1.Lease{}
	err := t.Reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: LeaseName}, l)
	switch {
	case apierrors.IsNotFound(err):
		t.mu.Lock()
		if t.confirmed == nil {
			t.confirmed = map[string]time.Time{}
		}
		t.confirmed[namespace] = now
		t.mu.Unlock()
		return nil
	case err != nil:
		return fmt.Errorf("reading the marker Lease of namespace %s: %w", namespace, err)
	}
	t.observe(l)
	if !t.Gate.Allowed(namespace) {
		return fmt.Errorf("%w: %s", ErrNotOwned, namespace)
	}
	return nil
}

// NeedLeaderElection is false: standby replicas serve webhooks, which must
// know the excluded namespaces too.
func (t *Tracker) NeedLeaderElection() bool { return false }

// Start watches the marker Leases until ctx ends. The gate becomes ready
// once every existing Lease has been seen.
func (t *Tracker) Start(ctx context.Context) error {
	t.mu.Lock()
	t.ctx = ctx
	t.timers = map[string]clock.Timer{}
	t.mu.Unlock()
	if t.Reader != nil {
		t.Gate.mu.Lock()
		t.Gate.confirm = t.Confirm
		t.Gate.mu.Unlock()
	}

	inf, err := t.Cache.GetInformer(ctx, &coordinationv1.Lease{})
	if err != nil {
		return fmt.Errorf("watching namespace marker leases: %w", err)
	}
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { t.observe(obj) },
		UpdateFunc: func(_, obj any) { t.observe(obj) },
		DeleteFunc: t.deleted,
	})
	if err != nil {
		return fmt.Errorf("watching namespace marker leases: %w", err)
	}
	if !toolscache.WaitForCacheSync(ctx.Done(), reg.HasSynced) {
		return ctx.Err()
	}
	t.Gate.markReady()
	<-ctx.Done()
	t.mu.Lock()
	for _, timer := range t.timers {
		timer.Stop()
	}
	t.mu.Unlock()
	return nil
}

func (t *Tracker) observe(obj any) {
	l, ok := obj.(*coordinationv1.Lease)
	if !ok || l.Name != LeaseName {
		return
	}
	expiry, expires := LeaseExpiry(l)
	if !expires {
		expiry = never
	}
	now := t.Clock.Now()
	if !now.Before(expiry) {
		t.handBack(l.Namespace, expiry, "marker lease expired")
		return
	}
	if t.Gate.exclude(l.Namespace, expiry) {
		t.Log.Info("namespace excluded: a namespace-scoped operator holds it",
			"namespace", l.Namespace, "holder", holder(l), "until", expiry)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if old := t.timers[l.Namespace]; old != nil {
		old.Stop()
	}
	ns := l.Namespace
	t.timers[ns] = t.Clock.AfterFunc(expiry.Sub(now), func() {
		t.handBack(ns, expiry, "marker lease expired")
	})
}

func (t *Tracker) deleted(obj any) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	l, ok := obj.(*coordinationv1.Lease)
	if !ok || l.Name != LeaseName {
		return
	}
	t.mu.Lock()
	if timer := t.timers[l.Namespace]; timer != nil {
		timer.Stop()
		delete(t.timers, l.Namespace)
	}
	t.mu.Unlock()
	t.handBack(l.Namespace, never, "marker lease deleted")
}

// handBack readmits namespace unless its Lease was renewed past expiry in
// the meantime, and re-enqueues what is there.
func (t *Tracker) handBack(namespace string, expiry time.Time, why string) {
	if !t.Gate.readmit(namespace, expiry) {
		return
	}
	t.Log.Info("namespace resumed: "+why, "namespace", namespace)
	t.mu.Lock()
	ctx := t.ctx
	t.mu.Unlock()
	if t.Resume != nil && ctx != nil && ctx.Err() == nil {
		t.Resume(ctx, namespace)
	}
}

func holder(l *coordinationv1.Lease) string {
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}
