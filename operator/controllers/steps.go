package controllers

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// step is one named step of a reconcile, working on the reconcile's state
// s: it hands on to the next step (next), or ends the reconcile with res
// and err. An error always ends it.
type step[S any] func(ctx context.Context, s S) (res reconcile.Result, next bool, err error)

// runSteps runs a reconcile's steps in order until one ends it. Each
// reconciler reads as its list of steps (the controller-runtime projects'
// style: jobset's, kueue's).
func runSteps[S any](ctx context.Context, s S, steps ...step[S]) (reconcile.Result, error) {
	for _, st := range steps {
		res, next, err := st(ctx, s)
		if err != nil || !next {
			return res, err
		}
	}
	return reconcile.Result{}, nil
}

// proceed hands on to the next step.
func proceed() (reconcile.Result, bool, error) { return reconcile.Result{}, true, nil }

// stop ends the reconcile with res and err.
func stop(res reconcile.Result, err error) (reconcile.Result, bool, error) { return res, false, err }
