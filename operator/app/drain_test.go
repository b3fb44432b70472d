package app

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/onsi/gomega"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/dynamoctl/dynamo-operator/internal/await"
	"github.com/dynamoctl/dynamo-operator/operator/webhooks"
)

// runningManager runs until the context Start got ends.
type runningManager struct {
	manager.Manager
	stopped chan struct{}
}

func (m *runningManager) Start(ctx context.Context) error {
	<-ctx.Done()
	close(m.stopped)
	return nil
}

// On SIGTERM the drain begins at once (readiness fails) while the manager
// runs on, reconciling and holding its Lease, for the drain; then it stops.
func TestDrainFirstStopsTheManagerAtTheDrainsEnd(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	drain := &webhooks.Drain{}
	inner := &runningManager{stopped: make(chan struct{})}
	m := drainFirst{Manager: inner, drain: drain, wait: 10 * time.Second, clock: clk}
	ctx, sigterm := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Start(ctx) }()

	sigterm()
	await.New(t).Eventually(drain.Draining).WithPolling(time.Millisecond).Should(gomega.BeTrue(), "draining from SIGTERM on")
	await.New(t).Eventually(clk.HasWaiters).WithPolling(time.Millisecond).Should(gomega.BeTrue(), "the drain waits on the clock")
	clk.Step(10*time.Second - time.Millisecond)
	select {
	case <-inner.stopped:
		t.Fatal("the manager stopped before the drain's end")
	case <-time.After(100 * time.Millisecond):
	}
	clk.Step(time.Millisecond)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Start: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the manager did not stop at the drain's end")
	}
}

// stoppingManager stops by itself (leadership lost): it stops its webhook
// server, whose drain begins, and returns at once.
type stoppingManager struct {
	manager.Manager
	drain *webhooks.Drain
}

func (m stoppingManager) Start(context.Context) error {
	m.drain.Begin()
	return errors.New("leader election lost")
}

// A manager that stops by itself returns only at the drain's end: the
// process exits once the replica has left the webhook Service.
func TestDrainFirstReturnsAtTheDrainsEndWhenTheManagerStopsByItself(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	drain := &webhooks.Drain{}
	_ = drain.Server(nil, 5*time.Second, clk) // gives the drain its clock, as app.New does
	m := drainFirst{Manager: stoppingManager{drain: drain}, drain: drain, wait: 5 * time.Second, clock: clk}
	done := make(chan error, 1)
	go func() { done <- m.Start(context.Background()) }()

	await.New(t).Eventually(clk.HasWaiters).WithPolling(time.Millisecond).Should(gomega.BeTrue(), "Start waits for the drain")
	clk.Step(5*time.Second - time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("Start returned (%v) before the drain's end", err)
	case <-time.After(100 * time.Millisecond):
	}
	clk.Step(time.Millisecond)
	select {
	case err := <-done:
		if err == nil || err.Error() != "leader election lost" {
			t.Fatalf("Start: %v, want the manager's error", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Start did not return at the drain's end")
	}
}
