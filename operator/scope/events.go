package scope

import (
	"context"

	"github.com/go-logr/logr"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/runtime"
	eventsv1client "k8s.io/client-go/kubernetes/typed/events/v1"
	"k8s.io/client-go/tools/events"
)

// Events gives the controllers event recorders whose writes ask the gate.
//
// An Event is a write in its object's namespace like any other, but
// client-go sends it asynchronously, after the reconcile that emitted it has
// returned: asking the gate when the event is emitted is too early (an
// operator handing a namespace back saw its event land 47 ms after it had
// deleted its Lease). So the gate is asked by the sink, at the moment of the
// write, the way the gated client asks it: an event still queued when the
// namespace changes hands is dropped, and one being written holds the
// hand-over (Gate.release waits for it) until it has landed.
//
// controller-runtime's own recorder cannot be given another sink, hence a
// broadcaster of our own, set up as controller-runtime sets up its own.
type Events struct {
	broadcaster events.EventBroadcaster
	scheme      *runtime.Scheme
	log         logr.Logger
}

// NewEvents returns the recorders' provider; events are written once Start
// runs.
func NewEvents(c eventsv1client.EventsV1Interface, scheme *runtime.Scheme, g *Gate, log logr.Logger) *Events {
	sink := &gatedSink{next: &events.EventSinkImpl{Interface: c}, gate: g}
	return &Events{broadcaster: events.NewBroadcaster(sink), scheme: scheme, log: log}
}

// Recorder returns the recorder of the named controller.
func (e *Events) Recorder(name string) events.EventRecorder {
	return e.broadcaster.NewRecorder(e.scheme, name)
}

// NeedLeaderElection is false: a standby replica's webhooks may emit events.
func (e *Events) NeedLeaderElection() bool { return false }

// Start writes the recorded events until ctx ends. Events are logged at
// V(1) as controller-runtime's recorder logs them.
func (e *Events) Start(ctx context.Context) error {
	ctx = logr.NewContext(ctx, e.log)
	if err := e.broadcaster.StartRecordingToSinkWithContext(ctx); err != nil {
		return err
	}
	stopLogging, err := e.broadcaster.StartLogging(e.log.V(1))
	if err != nil {
		return err
	}
	<-ctx.Done()
	stopLogging()
	// What is still queued is dropped: the gate would refuse it anyway
	// once the namespace is handed back.
	e.broadcaster.Shutdown()
	return nil
}

// gatedSink writes an event only while the gate allows its namespace, and
// counts the write in flight meanwhile.
type gatedSink struct {
	next events.EventSink
	gate *Gate
}

// enter admits the write of ev. A refused event is dropped silently: the
// sink's caller takes (nil, nil) as "nothing to record, do not retry".
func (s *gatedSink) enter(ctx context.Context, ev *eventsv1.Event) (done func(), ok bool) {
	done, err := s.gate.enterConfirmed(ctx, ev.Regarding.Namespace)
	return done, err == nil
}

func (s *gatedSink) Create(ctx context.Context, ev *eventsv1.Event) (*eventsv1.Event, error) {
	done, ok := s.enter(ctx, ev)
	if !ok {
		return nil, nil
	}
	defer done()
	return s.next.Create(ctx, ev)
}

func (s *gatedSink) Update(ctx context.Context, ev *eventsv1.Event) (*eventsv1.Event, error) {
	done, ok := s.enter(ctx, ev)
	if !ok {
		return nil, nil
	}
	defer done()
	return s.next.Update(ctx, ev)
}

func (s *gatedSink) Patch(ctx context.Context, ev *eventsv1.Event, data []byte) (*eventsv1.Event, error) {
	done, ok := s.enter(ctx, ev)
	if !ok {
		return nil, nil
	}
	defer done()
	return s.next.Patch(ctx, ev, data)
}
