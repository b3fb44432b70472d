package app

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/utils/clock"
)

// leaseFence keeps a replica that has lost the election from writing.
//
// client-go's elector gives leadership up only once renewals have failed
// for the renew deadline, and the manager then takes a while to stop its
// controllers; meanwhile another replica may have taken the Lease over (it
// waits the lease duration from the last renewal it saw) and two replicas
// write at once. The fence closes on the clock instead: a replica that has
// led sends a mutating request only while its last successful renewal was
// sent less than the renew deadline ago. The stored renewTime is at most
// that send time, and a rival takes over no sooner than the lease duration
// (longer than the renew deadline) after it, so the fence closes before
// any rival can lead, with the difference between the two as the margin
// for clocks that run at different rates. The process still exits when the
// elector gives up (controller-runtime's "leader election lost").
//
// A replica that has never led runs no controller; the one writer it runs
// is the webhook certificate's first-install bootstrap (certs.Options.Leading),
// which the fence lets through.
type leaseFence struct {
	clock    clock.PassiveClock
	deadline time.Duration
	id       string

	mu sync.Mutex
	// led: this process has held the Lease once; from then on writes need
	// a fresh renewal.
	led bool
	// renewed is when the last successful acquisition or renewal was sent;
	// zero once the Lease was released.
	renewed time.Time
}

func newLeaseFence(clk clock.PassiveClock, renewDeadline time.Duration, id string) *leaseFence {
	return &leaseFence{clock: clk, deadline: renewDeadline, id: id}
}

// held records the outcome of a write of the Lease sent at sent: a success
// that names this process as holder is a renewal (or an acquisition); any
// other successful write (a release) ends the term.
func (f *leaseFence) held(sent time.Time, holder string, err error) {
	if err != nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if holder == f.id {
		f.led, f.renewed = true, sent
		return
	}
	f.renewed = time.Time{}
}

// check is nil while writes may go: the process has never led, or its
// last renewal was sent less than the renew deadline ago.
func (f *leaseFence) check() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.led {
		return nil
	}
	if f.renewed.IsZero() {
		return fmt.Errorf("leader election fence: this replica released the Lease; it no longer writes")
	}
	if age := f.clock.Since(f.renewed); age >= f.deadline {
		return fmt.Errorf("leader election fence: the last Lease renewal was sent %s ago, not less than the renew deadline %s; this replica no longer writes", age.Round(time.Millisecond), f.deadline)
	}
	return nil
}

// lock wraps the election lock so that its writes feed the fence.
func (f *leaseFence) lock(l resourcelock.Interface) resourcelock.Interface {
	return fencedLock{Interface: l, fence: f}
}

type fencedLock struct {
	resourcelock.Interface
	fence *leaseFence
}

func (l fencedLock) Create(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	sent := l.fence.clock.Now()
	err := l.Interface.Create(ctx, r)
	l.fence.held(sent, r.HolderIdentity, err)
	return err
}

func (l fencedLock) Update(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	sent := l.fence.clock.Now()
	err := l.Interface.Update(ctx, r)
	l.fence.held(sent, r.HolderIdentity, err)
	return err
}

// transport refuses, without sending it, every request of rt that could
// change the cluster while the fence is closed. Reads (GET, HEAD, which
// include lists and watches) always go, and so do the reviews the metrics
// endpoint asks for (TokenReview, SubjectAccessReview: POSTs that store
// nothing).
func (f *leaseFence) transport(rt http.RoundTripper) http.RoundTripper {
	return fenceTransport{next: rt, fence: f}
}

type fenceTransport struct {
	next  http.RoundTripper
	fence *leaseFence
}

func (t fenceTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if mutating(r) {
		if err := t.fence.check(); err != nil {
			return nil, fmt.Errorf("%s %s: %w", r.Method, r.URL.Path, err)
		}
	}
	return t.next.RoundTrip(r)
}

// mutating reports whether r may change what the API server stores.
func mutating(r *http.Request) bool {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	if r.Method == http.MethodPost {
		for _, group := range []string{"/apis/authentication.k8s.io/", "/apis/authorization.k8s.io/"} {
			if strings.HasPrefix(r.URL.Path, group) {
				return false
			}
		}
	}
	return true
}
