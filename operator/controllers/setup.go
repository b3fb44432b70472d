// Package controllers holds the operator's reconcilers: graphs
// (DynamoGraphDeployment) into components, components
// (DynamoComponentDeployment) into workloads, Services and Ingresses.
package controllers

import (
	"context"
	"fmt"
	"net/http"
	"time"

	eventsv1client "k8s.io/client-go/kubernetes/typed/events/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/dynamoctl/dynamo-operator/operator/apply"
	"github.com/dynamoctl/dynamo-operator/operator/render"
	"github.com/dynamoctl/dynamo-operator/operator/scope"
)

// Options configure the controllers.
type Options struct {
	// Workers is the number of concurrent reconciles per controller.
	Workers int
	// Render carries the operator-wide settings workloads are rendered with.
	Render render.Options
	// Clock stamps condition transitions; the real clock when nil.
	Clock clock.PassiveClock
	// Renderer identifies this operator's rendering (RendererID of its
	// version): children another renderer wrote keep their content until
	// their spec changes.
	Renderer string
	// Gate says which namespaces this operator owns (deployment modes);
	// nil means all of them.
	Gate *scope.Gate
	// Build carries the image-builder settings DynamoComponents' build
	// Jobs are rendered with.
	Build render.ImageBuildOptions
	// Model configures the DynamoModel controller (zero: its defaults).
	Model ModelOptions
	// Events returns the named controller's event recorder. When nil:
	// with a Gate, recorders whose writes ask it (scope.Events); without,
	// the manager's.
	Events func(controller string) events.EventRecorder
}

// ModelOptions configure the DynamoModel controller; see ModelReconciler.
type ModelOptions struct {
	HTTP          *http.Client
	CheckInterval time.Duration
	UnloadTimeout time.Duration
}

// Setup registers every controller with the manager. The returned Resync
// re-enqueues a namespace's objects when this operator (re)gains it.
func Setup(mgr manager.Manager, o Options) (*Resync, error) {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Workers < 1 {
		o.Workers = 1
	}
	if err := registerIndexes(context.Background(), mgr); err != nil {
		return nil, fmt.Errorf("indexing the cache: %w", err)
	}
	c, recorder, err := writers(mgr, o)
	if err != nil {
		return nil, err
	}
	resync := newResync(mgr.GetClient())
	applier := &apply.Applier{Client: c, FieldOwner: FieldOwner, Clock: o.Clock}
	for _, setup := range []func() error{
		func() error {
			return (&GraphReconciler{indexed: true, Client: c, Applier: applier,
				Recorder: recorder("dynamo-graph-controller"), Clock: o.Clock, Reader: mgr.GetAPIReader(),
				Renderer: o.Renderer}).SetupWithManager(mgr, o.Workers, o.Gate, resync)
		},
		func() error {
			return (&ComponentReconciler{indexed: true, Client: c, Applier: applier,
				Recorder: recorder("dynamo-component-controller"), Clock: o.Clock, Render: o.Render,
				Reader: mgr.GetAPIReader(), Renderer: o.Renderer}).SetupWithManager(mgr, o.Workers, o.Gate, resync)
		},
		func() error {
			return (&DynamoComponentReconciler{Client: c, Recorder: recorder("dynamo-image-build-controller"),
				Clock: o.Clock, Build: o.Build}).SetupWithManager(mgr, o.Workers, o.Gate)
		},
		func() error {
			return (&ModelReconciler{Client: c, Recorder: recorder("dynamo-model-controller"), Clock: o.Clock,
				HTTP: o.Model.HTTP, CheckInterval: o.Model.CheckInterval, UnloadTimeout: o.Model.UnloadTimeout,
			}).SetupWithManager(mgr, o.Workers, o.Gate)
		},
	} {
		if err := setup(); err != nil {
			return nil, err
		}
	}
	return resync, nil
}

// writers are the client the controllers read and write with and their
// event recorders by controller name.
func writers(mgr manager.Manager, o Options) (client.Client, func(string) events.EventRecorder, error) {
	// The cache packs large fields (cache_transform.go); every read
	// unpacks them.
	var c client.Client = unpackingClient{mgr.GetClient()}
	recorder := o.Events
	if o.Gate != nil {
		// Every write, events included, asks the gate first, so work in
		// flight when a namespace changes hands stops there.
		c = scope.GatedClient(c, o.Gate)
		if recorder == nil {
			r, err := gatedEvents(mgr, o.Gate)
			if err != nil {
				return nil, nil, err
			}
			recorder = r
		}
	}
	if recorder == nil {
		recorder = func(name string) events.EventRecorder { return mgr.GetEventRecorder(name) }
	}
	return c, recorder, nil
}

// gatedEvents returns recorders whose writes ask gate, sending events for
// as long as mgr runs.
func gatedEvents(mgr manager.Manager, gate *scope.Gate) (func(string) events.EventRecorder, error) {
	c, err := eventsv1client.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return nil, fmt.Errorf("building the events client: %w", err)
	}
	ev := scope.NewEvents(c, mgr.GetScheme(), gate, mgr.GetLogger().WithName("events"))
	if err := mgr.Add(ev); err != nil {
		return nil, err
	}
	return ev.Recorder, nil
}
