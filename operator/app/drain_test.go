package app

import (
	"context"
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
