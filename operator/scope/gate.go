// Package scope decides which namespaces this operator may act in. A
// namespace-scoped operator owns its namespace only while it holds the marker
// Lease there (Holder); a cluster-wide operator stays out of every namespace
// whose marker Lease is unexpired (Tracker). Both answer through a Gate that
// the controllers consult before a reconcile and before every write, so work
// already queued or in flight when ownership changes writes nothing.
package scope

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Clock is what lease timing needs: now, tickers, and timers for expiries.
// clock.RealClock and the fake clocks of k8s.io/utils/clock/testing
// implement it.
type Clock interface {
	clock.WithTicker
	AfterFunc(d time.Duration, f func()) clock.Timer
}

// ErrNotOwned is returned for a write in a namespace this operator does not
// own at the moment. Reconcilers drop such work: whoever gives the namespace
// back re-enqueues everything in it.
var ErrNotOwned = errors.New("namespace is not owned by this operator")

// Gate answers whether this operator may write in a namespace now, and
// counts the writes in flight so that ownership is only handed over once
// they have finished.
type Gate struct {
	clock clock.PassiveClock
	// restrict is the namespace of a namespace-scoped operator, "" for a
	// cluster-wide one.
	restrict string

	mu sync.Mutex
	// ready closes once the gate knows ownership: the Lease is held (scoped)
	// or the marker Leases have been listed (cluster-wide).
	ready     chan struct{}
	readyOnce sync.Once
	// heldUntil is when a namespace-scoped operator must stop writing: the
	// Lease's expiry as it last renewed it, less a safety margin. Zero when
	// it does not hold the Lease.
	heldUntil time.Time
	// excluded maps namespaces with an unexpired marker Lease to the
	// Lease's expiry (cluster-wide operator).
	excluded map[string]time.Time
	inflight int
	idle     *sync.Cond
	// confirm, when set, checks with the API server that a namespace has no
	// marker Lease before a write there (Tracker.Confirm).
	confirm func(ctx context.Context, namespace string) error
}

// Confirm returns ErrNotOwned when a live read finds that another operator
// holds namespace although no watch event has said so yet, nil when this
// operator may go on writing there, or the read's error. A gate without a
// confirmation (a namespace-scoped operator's) confirms everything.
func (g *Gate) Confirm(ctx context.Context, namespace string) error {
	g.mu.Lock()
	confirm := g.confirm
	g.mu.Unlock()
	if confirm == nil || namespace == "" {
		return nil
	}
	return confirm(ctx, namespace)
}

// NewClusterGate returns the gate of a cluster-wide operator: every
// namespace is allowed except those a Tracker excludes. It is not ready
// until the Tracker has listed the marker Leases.
func NewClusterGate(c clock.PassiveClock) *Gate { return newGate(c, "") }

// NewNamespaceGate returns the gate of an operator restricted to namespace:
// nothing is allowed until a Holder holds the marker Lease there.
func NewNamespaceGate(c clock.PassiveClock, namespace string) *Gate { return newGate(c, namespace) }

func newGate(c clock.PassiveClock, restrict string) *Gate {
	g := &Gate{clock: c, restrict: restrict, ready: make(chan struct{}), excluded: map[string]time.Time{}}
	g.idle = sync.NewCond(&g.mu)
	return g
}

// Allowed reports whether the operator may act in namespace now.
// Cluster-scoped objects (namespace "") are always allowed.
func (g *Gate) Allowed(namespace string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.allowedLocked(namespace)
}

func (g *Gate) allowedLocked(namespace string) bool {
	if namespace == "" {
		return true
	}
	now := g.clock.Now()
	if g.restrict != "" {
		return namespace == g.restrict && now.Before(g.heldUntil)
	}
	until, ok := g.excluded[namespace]
	return !ok || !now.Before(until)
}

// Excluded reports whether another operator owns namespace: the
// cluster-wide operator's webhooks allow objects there without judging.
func (g *Gate) Excluded(namespace string) bool {
	if g.restrict != "" {
		return false
	}
	return !g.Allowed(namespace)
}

// Enter admits one write in namespace, or returns ErrNotOwned. The caller
// must call the returned function when the write has finished.
func (g *Gate) Enter(namespace string) (done func(), err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.allowedLocked(namespace) {
		return nil, fmt.Errorf("%w: %s", ErrNotOwned, namespace)
	}
	g.inflight++
	var once sync.Once
	return func() {
		once.Do(func() {
			g.mu.Lock()
			g.inflight--
			if g.inflight == 0 {
				g.idle.Broadcast()
			}
			g.mu.Unlock()
		})
	}, nil
}

// WaitReady blocks until the gate knows who owns what, so that a reconcile
// started before the marker Leases were read does not write where it must
// not.
func (g *Gate) WaitReady(ctx context.Context) error {
	select {
	case <-g.ready:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Ready reports whether WaitReady would return at once.
func (g *Gate) Ready() bool {
	select {
	case <-g.ready:
		return true
	default:
		return false
	}
}

func (g *Gate) markReady() { g.readyOnce.Do(func() { close(g.ready) }) }

// hold records that the namespace-scoped operator may write until until.
func (g *Gate) hold(until time.Time) {
	g.mu.Lock()
	g.heldUntil = until
	g.mu.Unlock()
	g.markReady()
}

// release stops the namespace-scoped operator's writes and waits, at most
// until ctx ends, for those in flight to finish.
func (g *Gate) release(ctx context.Context) error {
	g.mu.Lock()
	g.heldUntil = time.Time{}
	g.mu.Unlock()
	return g.waitIdle(ctx)
}

func (g *Gate) waitIdle(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() {
		g.mu.Lock()
		g.idle.Broadcast()
		g.mu.Unlock()
	})
	defer stop()
	g.mu.Lock()
	defer g.mu.Unlock()
	for g.inflight > 0 {
		if ctx.Err() != nil {
			return fmt.Errorf("%d writes still in flight: %w", g.inflight, ctx.Err())
		}
		g.idle.Wait()
	}
	return nil
}

// exclude keeps the cluster-wide operator out of namespace until until.
// It reports whether the namespace was allowed before.
func (g *Gate) exclude(namespace string, until time.Time) (wasAllowed bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	wasAllowed = g.allowedLocked(namespace)
	g.excluded[namespace] = until
	return wasAllowed
}

// readmit lets the cluster-wide operator back into namespace when its
// exclusion ends no later than until (a renewal in the meantime keeps it
// out). It reports whether the namespace was excluded.
func (g *Gate) readmit(namespace string, until time.Time) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	cur, ok := g.excluded[namespace]
	if !ok || cur.After(until) {
		return false
	}
	delete(g.excluded, namespace)
	return true
}

// ExcludedNamespaces lists the namespaces currently excluded, with the
// expiry of their marker Lease.
func (g *Gate) ExcludedNamespaces() map[string]time.Time {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.clock.Now()
	out := make(map[string]time.Time, len(g.excluded))
	for ns, until := range g.excluded {
		if now.Before(until) {
			out[ns] = until
		}
	}
	return out
}

// enterConfirmed is Enter after Confirm: the gated client's way in.
func (g *Gate) enterConfirmed(ctx context.Context, namespace string) (done func(), err error) {
	if err := g.Confirm(ctx, namespace); err != nil {
		return nil, err
	}
	return g.Enter(namespace)
}
