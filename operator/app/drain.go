package app

import (
	"context"
	"time"

	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/dynamoctl/dynamo-operator/operator/webhooks"
)

// drainFirst is the manager with the webhook drain ahead of its stop: when
// the context Start was given ends (SIGTERM), the drain begins (readiness
// fails, each admission answer closes its connection) and everything runs
// on for wait, the leader reconciling and holding its Lease; then the
// manager stops. The pod's endpoint has left the webhook Service by then,
// so no admission is sent to a replica that no longer answers, and the
// Lease is released the moment the controllers stop, not after the drain.
type drainFirst struct {
	manager.Manager
	drain *webhooks.Drain
	wait  time.Duration
	clock clock.Clock
}

func (m drainFirst) Start(ctx context.Context) error {
	run, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	go func() {
		select {
		case <-ctx.Done():
		case <-run.Done():
			return // the manager stopped by itself
		}
		m.drain.Begin()
		select {
		case <-m.clock.After(m.wait):
		case <-run.Done():
		}
		stop()
	}()
	return m.Manager.Start(run)
}
