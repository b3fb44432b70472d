// Package await is the one way tests and steps wait: gomega's Eventually
// and Consistently, with the timeouts and polling intervals kept here, in
// one place, so that a loaded CI machine is accounted for once.
//
// In a Go test:
//
//	g := await.New(t)
//	g.Eventually(func() error { return get(...) }).Should(gomega.Succeed())
//	g.Eventually(listPods).WithTimeout(await.Long).Should(gomega.HaveLen(3))
//
// In a godog step, which returns an error rather than failing a test:
//
//	return await.Until(ctx, "the graph is Ready", func() error { ... })
//
// A failure names what was awaited and the last thing seen: gomega prints
// the last error a polled function returned, or the last value a matcher
// refused.
package await

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/onsi/gomega"
)

// The timeouts. Short is for what the API server or the operator does at
// once (a write seen by a watch, a webhook call); Long for what waits on
// controllers and the simulated kubelet (pods Ready, a roll finished);
// Rollout for what waits on several of those in turn (an upgrade, a
// migration, a fail-over).
const (
	Short   = 30 * time.Second
	Long    = 3 * time.Minute
	Rollout = 10 * time.Minute
	// Poll is the interval between two tries. Tests against the API
	// server read from it directly; 200 ms keeps a test responsive
	// without loading a 2-core machine running several suites.
	Poll = 200 * time.Millisecond
	// Steady is how long Consistently watches by default.
	Steady = 5 * time.Second
)

// New is gomega for t with this package's defaults: Eventually waits Short
// polling every Poll, Consistently watches Steady.
func New(t testing.TB) gomega.Gomega {
	t.Helper()
	g := gomega.NewWithT(t)
	g.SetDefaultEventuallyTimeout(Short)
	g.SetDefaultEventuallyPollingInterval(Poll)
	g.SetDefaultConsistentlyDuration(Steady)
	g.SetDefaultConsistentlyPollingInterval(Poll)
	return g
}

// Option changes how Until waits.
type Option func(*options)

type options struct {
	timeout, poll time.Duration
}

// Within waits up to d rather than Short.
func Within(d time.Duration) Option { return func(o *options) { o.timeout = d } }

// Every polls every d rather than Poll.
func Every(d time.Duration) Option { return func(o *options) { o.poll = d } }

// Until polls f until it returns nil, for steps and helpers that report an
// error rather than fail a test. The error names what and carries the last
// error f returned. It stops early when ctx ends.
func Until(ctx context.Context, what string, f func() error, opts ...Option) error {
	o := options{timeout: Short, poll: Poll}
	for _, opt := range opts {
		opt(&o)
	}
	var failure string
	g := gomega.NewGomega(func(message string, _ ...int) { failure = message })
	g.Eventually(ctx, f).WithTimeout(o.timeout).WithPolling(o.poll).Should(gomega.Succeed())
	if failure == "" {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("waiting for %s: %w", what, err)
	}
	return fmt.Errorf("%s: not within %s: %s", what, o.timeout, failure)
}

// ErrNotYet is what a polled function returns when it has nothing better to
// say; prefer an error that says what was seen.
var ErrNotYet = errors.New("not yet")
