package scope

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

// recordingSink is the API server's side of the sink: it counts the events
// written and can hold a write until told to finish it.
type recordingSink struct {
	written []string
	entered chan struct{}
	finish  chan struct{}
}

func (s *recordingSink) write(ev *eventsv1.Event) (*eventsv1.Event, error) {
	if s.entered != nil {
		s.entered <- struct{}{}
		<-s.finish
	}
	s.written = append(s.written, ev.Regarding.Namespace+"/"+ev.Reason)
	return ev, nil
}

func (s *recordingSink) Create(_ context.Context, ev *eventsv1.Event) (*eventsv1.Event, error) {
	return s.write(ev)
}
func (s *recordingSink) Update(_ context.Context, ev *eventsv1.Event) (*eventsv1.Event, error) {
	return s.write(ev)
}
func (s *recordingSink) Patch(_ context.Context, ev *eventsv1.Event, _ []byte) (*eventsv1.Event, error) {
	return s.write(ev)
}

func event(ns, reason string) *eventsv1.Event {
	return &eventsv1.Event{Reason: reason, Regarding: corev1.ObjectReference{Namespace: ns, Name: "llm"}}
}

// The gate is asked when the event is written, not when it was emitted: an
// event queued before the namespace was handed back is dropped, without an
// error the broadcaster would log or retry.
func TestEventSinkAsksTheGateAtTheWrite(t *testing.T) {
	clk := clocktesting.NewFakeClock(epoch)
	g := NewNamespaceGate(clk, "team-a")
	next := &recordingSink{}
	sink := &gatedSink{next: next, gate: g}
	ctx := context.Background()

	if got, err := sink.Create(ctx, event("team-a", "BeforeTheLease")); got != nil || err != nil {
		t.Errorf("an event before the lease is held = (%v, %v), want it dropped as (nil, nil)", got, err)
	}
	g.hold(epoch.Add(time.Minute))
	for _, write := range []func(context.Context, *eventsv1.Event) (*eventsv1.Event, error){
		sink.Create, sink.Update, func(ctx context.Context, ev *eventsv1.Event) (*eventsv1.Event, error) {
			return sink.Patch(ctx, ev, nil)
		},
	} {
		if _, err := write(ctx, event("team-a", "Held")); err != nil {
			t.Fatal(err)
		}
		if got, err := write(ctx, event("team-b", "Elsewhere")); got != nil || err != nil {
			t.Errorf("an event in another namespace = (%v, %v), want it dropped", got, err)
		}
	}
	if err := g.release(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := sink.Create(ctx, event("team-a", "AfterRelease")); got != nil || err != nil {
		t.Errorf("an event after the release = (%v, %v), want it dropped", got, err)
	}
	want := []string{"team-a/Held", "team-a/Held", "team-a/Held"}
	if len(next.written) != len(want) {
		t.Fatalf("written %v, want %v", next.written, want)
	}
	for i := range want {
		if next.written[i] != want[i] {
			t.Fatalf("written %v, want %v", next.written, want)
		}
	}
}

// An event being written holds the hand-over: the Lease is deleted only
// once it has landed.
func TestReleaseWaitsForAnEventBeingWritten(t *testing.T) {
	clk := clocktesting.NewFakeClock(epoch)
	g := NewNamespaceGate(clk, "team-a")
	g.hold(epoch.Add(time.Minute))
	next := &recordingSink{entered: make(chan struct{}), finish: make(chan struct{})}
	sink := &gatedSink{next: next, gate: g}
	wrote := make(chan error, 1)
	go func() {
		_, err := sink.Create(context.Background(), event("team-a", "Scaled"))
		wrote <- err
	}()
	<-next.entered
	released := make(chan error, 1)
	go func() { released <- g.release(context.Background()) }()
	select {
	case err := <-released:
		t.Fatalf("release returned (%v) while an event was being written", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(next.finish)
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	if err := <-released; err != nil {
		t.Fatal(err)
	}
}
