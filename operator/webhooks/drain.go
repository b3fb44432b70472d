package webhooks

import (
	"context"
	"errors"
	"net/http"
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
// The manager stops its webhook server last, after the controllers and
// caches; Server delays that stop by the drain, so a stopping operator
// writes nothing more and only answers admissions.
type Drain struct{ draining atomic.Bool }

// Server wraps srv so that, when the manager stops it, the drain begins
// and srv serves on for wait before it stops.
func (d *Drain) Server(srv webhook.Server, wait time.Duration, clk clock.Clock) webhook.Server {
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
		case <-s.clock.After(s.wait):
		case <-serving.Done():
		}
		stop()
	}()
	return s.Server.Start(serving)
}

// Begin starts draining.
func (d *Drain) Begin() { d.draining.Store(true) }

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
