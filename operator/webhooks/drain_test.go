package webhooks

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/onsi/gomega"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/dynamoctl/dynamo-operator/internal/await"
)

func TestDrainClosesEachConnectionAfterItsAnswer(t *testing.T) {
	d := &Drain{}
	srv := httptest.NewServer(d.Wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "{}")
	})))
	defer srv.Close()
	get := func() *http.Response {
		t.Helper()
		resp, err := srv.Client().Post(srv.URL, "application/json", nil)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return resp
	}
	if resp := get(); resp.Close {
		t.Errorf("before draining: the server closed the connection (Connection: %q); want it kept alive", resp.Header.Get("Connection"))
	}
	if err := d.Check(nil); err != nil {
		t.Errorf("before draining: readiness = %v, want ready", err)
	}
	d.Begin()
	if resp := get(); !resp.Close {
		t.Error("while draining: the connection was kept alive; want Connection: close after the answer")
	}
	if err := d.Check(nil); !errors.Is(err, ErrDraining) {
		t.Errorf("while draining: readiness = %v, want %v", err, ErrDraining)
	}
}

func TestNilDrainChangesNothing(t *testing.T) {
	var d *Drain
	h := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	if got := d.Wrap(h); got == nil {
		t.Fatal("Wrap on nil returned nil")
	}
	if d.Draining() || d.Check(nil) != nil {
		t.Error("a nil Drain reports draining")
	}
}

// fakeServer is a webhook server that serves until its context ends.
type fakeServer struct {
	webhook.Server
	stopped chan struct{}
}

func (s *fakeServer) Start(ctx context.Context) error {
	<-ctx.Done()
	close(s.stopped)
	return nil
}

func TestDrainingServerServesOnForTheDrainAfterTheManagerStopsIt(t *testing.T) {
	d := &Drain{}
	inner := &fakeServer{stopped: make(chan struct{})}
	clk := clocktesting.NewFakeClock(time.Now())
	srv := d.Server(inner, 5*time.Second, clk)
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Start(ctx) }()

	if d.Draining() {
		t.Fatal("draining before the manager stopped the server")
	}
	stop()
	await.New(t).Eventually(clk.HasWaiters).WithPolling(time.Millisecond).Should(gomega.BeTrue(), "the drain waits on the clock")
	if !d.Draining() {
		t.Fatal("the manager stopped the server: not draining")
	}
	select {
	case <-inner.stopped:
		t.Fatal("the server stopped before the drain's end")
	default:
	}
	clk.Step(5 * time.Second)
	stoppedAtTheDrainsEnd(t, done)
}

// The drain begins at SIGTERM (Begin), before the manager stops the
// webhook server; the server stops at the drain's end counted from then,
// not from its own stop.
func TestDrainingServerCountsFromTheDrainsBeginning(t *testing.T) {
	d := &Drain{}
	inner := &fakeServer{stopped: make(chan struct{})}
	clk := clocktesting.NewFakeClock(time.Now())
	srv := d.Server(inner, 10*time.Second, clk)
	srvCtx, stopServer := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Start(srvCtx) }()

	d.Begin()
	if err := d.Check(nil); !errors.Is(err, ErrDraining) {
		t.Fatalf("after SIGTERM: readiness = %v, want %v", err, ErrDraining)
	}
	// The manager stops its webhook server 4 s into the drain (a manager
	// stopping for another reason): it serves the 6 s left.
	clk.Step(4 * time.Second)
	stopServer()
	await.New(t).Eventually(clk.HasWaiters).WithPolling(time.Millisecond).Should(gomega.BeTrue(), "the drain waits on the clock")
	clk.Step(6*time.Second - time.Millisecond)
	select {
	case <-inner.stopped:
		t.Fatal("the server stopped before the drain's end")
	case <-time.After(100 * time.Millisecond):
	}
	clk.Step(time.Millisecond)
	stoppedAtTheDrainsEnd(t, done)
}

// stoppedAtTheDrainsEnd fails unless the server's Start returned nil (done)
// within 10 s: the clock has reached the drain's end.
func stoppedAtTheDrainsEnd(t *testing.T, done <-chan error) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Start: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the server did not stop at the drain's end")
	}
}
