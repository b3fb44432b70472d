package controllers

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/scope"
)

// owned runs a reconcile only in namespaces this operator owns. Work queued
// for a namespace that another operator has taken is dropped rather than
// retried: whoever hands the namespace back re-enqueues all of it (Resync).
type owned struct {
	gate *scope.Gate
	next reconcile.Reconciler
}

func (o owned) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	res, err := o.reconcile(ctx, req)
	if webhookUnreachable(err) {
		// Our own admission webhooks have no endpoint yet: right after an
		// install, a take-over or a fail-over the controllers start before the
		// operator's pod is Ready, and the API server refuses writes to our
		// kinds until the Service lists it. That is not a failure to log at
		// error level nor to back off from exponentially: try again shortly.
		logf.FromContext(ctx).V(levelChild).Info("admission webhook not reachable yet; retrying", "after", webhookRetry, "error", err.Error())
		return reconcile.Result{RequeueAfter: webhookRetry}, nil
	}
	return res, err
}

// webhookRetry is how soon a reconcile refused by an unreachable admission
// webhook runs again: about the time a new pod takes to join its endpoints.
const webhookRetry = 2 * time.Second

// webhookUnreachable reports whether the API server refused a write because
// it could not call an admission webhook (no endpoints, connection refused,
// a certificate not yet served), as opposed to the webhook denying it.
func webhookUnreachable(err error) bool {
	if err == nil || !apierrors.IsInternalError(err) {
		return false
	}
	return strings.Contains(err.Error(), "failed calling webhook")
}

func (o owned) reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if o.gate == nil {
		return o.next.Reconcile(ctx, req)
	}
	// Until the marker Leases are known, nobody can say who owns what.
	if err := o.gate.WaitReady(ctx); err != nil {
		return reconcile.Result{}, err
	}
	if !o.gate.Allowed(req.Namespace) {
		logf.FromContext(ctx).V(levelNothing).Info("namespace owned by another operator; nothing to do")
		return reconcile.Result{}, nil
	}
	res, err := o.next.Reconcile(ctx, req)
	if errors.Is(err, scope.ErrNotOwned) {
		// The namespace changed hands during this reconcile; its gated
		// client refused the write.
		logf.FromContext(ctx).Info("namespace handed over to another operator during the reconcile; it takes over from here")
		return reconcile.Result{}, nil
	}
	return res, err
}

// Resync re-enqueues every graph and component of a namespace, for when
// this operator (re)gains it: objects changed while another operator owned
// it must be acted on, though their events were dropped back then.
type Resync struct {
	reader     client.Reader
	graphs     chan event.TypedGenericEvent[*v1alpha1.DynamoGraphDeployment]
	components chan event.TypedGenericEvent[*v1alpha1.DynamoComponentDeployment]
}

func newResync(reader client.Reader) *Resync {
	return &Resync{
		reader:     reader,
		graphs:     make(chan event.TypedGenericEvent[*v1alpha1.DynamoGraphDeployment], 1024),
		components: make(chan event.TypedGenericEvent[*v1alpha1.DynamoComponentDeployment], 1024),
	}
}

func (r *Resync) graphSource() source.Source {
	return source.Channel(r.graphs, &handler.TypedEnqueueRequestForObject[*v1alpha1.DynamoGraphDeployment]{})
}

func (r *Resync) componentSource() source.Source {
	return source.Channel(r.components, &handler.TypedEnqueueRequestForObject[*v1alpha1.DynamoComponentDeployment]{})
}

// Namespace re-enqueues everything in namespace. It returns at once; the
// listing and enqueueing happen in the background until ctx ends, so that
// callers on a watch or timer goroutine are never blocked. A failed list is
// retried: dropping it would leave changes made meanwhile unreconciled.
func (r *Resync) Namespace(ctx context.Context, namespace string) {
	go func() {
		log := logf.FromContext(ctx).WithValues("namespace", namespace)
		graphs := &v1alpha1.DynamoGraphDeploymentList{}
		if !listRetrying(ctx, log, func() error { return r.reader.List(ctx, graphs, client.InNamespace(namespace)) }) {
			return
		}
		for i := range graphs.Items {
			select {
			case r.graphs <- event.TypedGenericEvent[*v1alpha1.DynamoGraphDeployment]{Object: &graphs.Items[i]}:
			case <-ctx.Done():
				return
			}
		}
		components := &v1alpha1.DynamoComponentDeploymentList{}
		if !listRetrying(ctx, log, func() error { return r.reader.List(ctx, components, client.InNamespace(namespace)) }) {
			return
		}
		for i := range components.Items {
			select {
			case r.components <- event.TypedGenericEvent[*v1alpha1.DynamoComponentDeployment]{Object: &components.Items[i]}:
			case <-ctx.Done():
				return
			}
		}
	}()
}

// listRetrying calls list until it succeeds, backing off up to 10 s, and
// reports false when ctx ended first.
func listRetrying(ctx context.Context, log logr.Logger, list func() error) bool {
	wait := 100 * time.Millisecond
	for {
		err := list()
		if err == nil {
			return true
		}
		log.Error(err, "listing objects to re-enqueue; retrying", "after", wait)
		select {
		case <-ctx.Done():
			return false
		case <-time.After(wait):
		}
		wait = min(2*wait, 10*time.Second)
	}
}
