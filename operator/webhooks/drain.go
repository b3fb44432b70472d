package webhooks

import (
	"errors"
	"net/http"
	"sync/atomic"
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
type Drain struct{ draining atomic.Bool }

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
