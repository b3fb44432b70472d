package scope

import (
	"context"
	"errors"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestClusterGateExcludesUntilExpiry(t *testing.T) {
	clk := clocktesting.NewFakeClock(epoch)
	g := NewClusterGate(clk)
	if !g.Allowed("a") || g.Excluded("a") {
		t.Fatal("a namespace without a marker lease must be allowed")
	}
	if !g.exclude("a", epoch.Add(30*time.Second)) {
		t.Error("exclude must report that the namespace was allowed before")
	}
	if g.exclude("a", epoch.Add(40*time.Second)) {
		t.Error("a renewal must not report a new exclusion")
	}
	if g.Allowed("a") || !g.Excluded("a") || !g.Allowed("b") || !g.Allowed("") {
		t.Error("only namespace a must be excluded")
	}
	if _, err := g.Enter("a"); !errors.Is(err, ErrNotOwned) {
		t.Errorf("Enter(a) = %v, want ErrNotOwned", err)
	}
	// The timer of the first expiry fires after the renewal: a stays out.
	if g.readmit("a", epoch.Add(30*time.Second)) {
		t.Error("readmit for an expiry that a renewal superseded must not readmit")
	}
	clk.SetTime(epoch.Add(40 * time.Second))
	if !g.Allowed("a") {
		t.Error("an expired exclusion must allow the namespace even before its timer fires")
	}
	if !g.readmit("a", epoch.Add(40*time.Second)) || len(g.ExcludedNamespaces()) != 0 {
		t.Error("readmit at the expiry must end the exclusion")
	}
}

func TestNamespaceGateAllowsOnlyItsNamespaceWhileHeld(t *testing.T) {
	clk := clocktesting.NewFakeClock(epoch)
	g := NewNamespaceGate(clk, "team-a")
	if g.Allowed("team-a") {
		t.Fatal("nothing is allowed before the lease is held")
	}
	g.hold(epoch.Add(27 * time.Second))
	if !g.Allowed("team-a") || g.Allowed("team-b") || g.Excluded("team-a") {
		t.Error("a holder owns its namespace and no other; it never excludes")
	}
	clk.SetTime(epoch.Add(27 * time.Second))
	if g.Allowed("team-a") {
		t.Error("a holder that did not renew must stop at its deadline")
	}
}

func TestReleaseWaitsForWritesInFlight(t *testing.T) {
	clk := clocktesting.NewFakeClock(epoch)
	g := NewNamespaceGate(clk, "team-a")
	g.hold(epoch.Add(time.Minute))
	done, err := g.Enter("team-a")
	if err != nil {
		t.Fatal(err)
	}
	released := make(chan error, 1)
	go func() { released <- g.release(context.Background()) }()
	select {
	case err := <-released:
		t.Fatalf("release returned (%v) while a write was in flight", err)
	case <-time.After(50 * time.Millisecond):
	}
	if _, err := g.Enter("team-a"); !errors.Is(err, ErrNotOwned) {
		t.Errorf("a new write during release = %v, want ErrNotOwned", err)
	}
	done()
	done() // idempotent
	if err := <-released; err != nil {
		t.Errorf("release = %v", err)
	}

	// A write that never finishes makes release give up when ctx ends.
	g.hold(epoch.Add(time.Minute))
	if _, err := g.Enter("team-a"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := g.release(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("release with a stuck write = %v, want deadline exceeded", err)
	}
}

func TestWaitReady(t *testing.T) {
	g := NewClusterGate(clocktesting.NewFakeClock(epoch))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := g.WaitReady(ctx); err == nil {
		t.Error("WaitReady must not return nil before the gate is ready")
	}
	g.markReady()
	g.markReady()
	if err := g.WaitReady(context.Background()); err != nil {
		t.Error(err)
	}
}
