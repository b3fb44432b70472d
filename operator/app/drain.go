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
//
// A manager that stops by itself (leadership lost: controller-runtime
// stops everything at once and returns) began the drain as it stopped its
// webhook server, which serves on meanwhile; Start returns only at the
// drain's end, so that the process exits once the replica has left the
// webhook Service, not under the admissions still routed to it.
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
	err := m.Manager.Start(run)
	if m.drain.Draining() {
		if left := m.drain.Left(m.wait); left > 0 {
			<-m.clock.After(left)
		}
	}
	return err
}
