package webhooks

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// Drain lets the webhook server finish cleanly when the pod stops. The API
// server keeps HTTP connections to a webhook pod alive between admissions
// and, during a rolling update, still holds some to the old pod after it
// got SIGTERM; if the old pod simply closes them, a request the API server
// is writing into one at that moment fails ("broken pipe"), and so does
// the user's write it was judging. While draining, every answer carries
// "Connection: close", so the API server drops each connection after its
// answer and opens the next one to a pod that is Ready; the pod reports
// itself not Ready so that it leaves the Service's endpoints.
//
// The drain begins at SIGTERM, before the manager stops anything (app.New
// wraps the manager's Start so): the pod fails its readiness at once and
// leaves the Service's endpoints while it still answers admissions, and,
// leading, still reconciles and holds the Lease. At the drain's end the
// manager stops, quickly: the controllers, the Lease released (a standby
// takes over at once), the webhook server last. A manager that stops for
// another reason (leadership lost) drains its webhook server then: Server
// keeps it serving until the drain's end, counted from its beginning.
type Drain struct {
	draining atomic.Bool
	mu       sync.Mutex
	began    time.Time
	clock    clock.Clock
}

// Server wraps srv so that it serves on until wait after the drain began
// (at the latest when the manager stops srv) before it stops.
func (d *Drain) Server(srv webhook.Server, wait time.Duration, clk clock.Clock) webhook.Server {
	d.mu.Lock()
	d.clock = clk
	d.mu.Unlock()
	return &drainingServer{Server: srv, drain: d, wait: wait, clock: clk}
}

type drainingServer struct {
	webhook.Server
	drain *Drain
	wait  time.Duration
	clock clock.Clock
}

// Start runs the server until wait after ctx ends, draining meanwhile.
func (s *drainingServer) Start(ctx context.Context) error {
	serving, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	go func() {
		select {
		case <-ctx.Done():
		case <-serving.Done():
			return // the server stopped by itself
		}
		s.drain.Begin()
		select {
		case <-s.clock.After(s.drain.Left(s.wait)):
		case <-serving.Done():
		}
		stop()
	}()
	return s.Server.Start(serving)
}

// Begin starts draining; the drain's time counts from its first call.
func (d *Drain) Begin() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.draining.Load() {
		return
	}
	if d.clock != nil {
		d.began = d.clock.Now()
	}
	d.draining.Store(true)
}

// Left is how much of a drain of wait is left now: wait before it began,
// nothing once it is over.
func (d *Drain) Left(wait time.Duration) time.Duration {
	if !d.Draining() {
		return wait
	}
	d.mu.Lock()
	clk := d.clock
	d.mu.Unlock()
	if clk == nil {
		return 0 // no Server: nothing serves on
	}
	return max(wait-clk.Since(d.beganAt()), 0)
}

// beganAt is when the drain began (zero before, or without a clock).
func (d *Drain) beganAt() time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.began
}

// Draining reports whether Begin was called.
func (d *Drain) Draining() bool { return d != nil && d.draining.Load() }

// Wrap makes next close each connection after its answer while draining.
func (d *Drain) Wrap(next http.Handler) http.Handler {
	if d == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if d.Draining() {
			w.Header().Set("Connection", "close")
		}
		next.ServeHTTP(w, r)
	})
}

// ErrDraining is the readiness check's answer while draining.
var ErrDraining = errors.New("draining: the operator is stopping")

// Check is a readiness check that fails while draining.
func (d *Drain) Check(*http.Request) error {
	if d.Draining() {
		return ErrDraining
	}
	return nil
}
