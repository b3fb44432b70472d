package storagemigration

import (
	"context"
	"math"
	"slices"
	"time"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
)

// FieldManager names the migration's writes in managedFields and audit logs.
const FieldManager = "dynamo-operator-storage-migration"

// Defaults of the Migrator's tunables.
const (
	DefaultPageSize = 500
	// readyPoll is how often the webhook server is asked whether it serves.
	readyPoll = time.Second
	// maxConflicts bounds the re-reads of one object that others keep
	// writing; the pass is then retried with backoff.
	maxConflicts = 5
	// maxReported is how many failed objects an error names.
	maxReported = 5
)

// DefaultBackoff spaces the passes over CRDs whose migration failed: from a
// second, doubling, up to five minutes between passes, forever (an object
// refused as invalid may be fixed by its owner).
func DefaultBackoff() wait.Backoff {
	return wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.1, Cap: 5 * time.Minute, Steps: math.MaxInt32}
}

var crdResource = apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions")

// Migrator migrates the storage of the named CRDs once, as a manager
// runnable on the leader (see the package doc).
type Migrator struct {
	// Client reads and writes the CRDs and their objects.
	Client dynamic.Interface
	// CRDs are the names of the CRDs to migrate; one not installed is
	// skipped.
	CRDs []string
	// Ready says whether the operator's webhook server serves, so the
	// conversion webhook can answer; nil starts at once.
	Ready func() error
	// Clock times the waits, the backoff and what is logged.
	Clock clock.Clock
	// Recorder, when set, records what was done as events on each CRD.
	Recorder events.EventRecorder
	Log      logr.Logger
	// PageSize is the limit of each list; DefaultPageSize when 0.
	PageSize int64
	// Backoff spaces the retries; DefaultBackoff when its Duration is 0.
	Backoff wait.Backoff
}

// NeedLeaderElection is true: one replica migrates, and a standby elected
// later starts over (objects already rewritten are not written again by
// the API server).
func (m *Migrator) NeedLeaderElection() bool { return true }

// Start migrates every CRD that needs it, retrying failed ones with backoff
// until each is migrated or ctx ends. It returns nil either way: a
// migration not done yet must not stop the operator.
func (m *Migrator) Start(ctx context.Context) error {
	if m.Clock == nil {
		m.Clock = clock.RealClock{}
	}
	if m.PageSize == 0 {
		m.PageSize = DefaultPageSize
	}
	backoff := m.Backoff
	if backoff.Duration == 0 {
		backoff = DefaultBackoff()
	}
	if !m.waitReady(ctx) {
		return nil
	}
	pending := slices.Clone(m.CRDs)
	for len(pending) > 0 {
		var again []string
		for _, name := range pending {
			if err := m.migrate(ctx, name); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				m.report(name, err)
				again = append(again, name)
			}
		}
		pending = again
		if len(pending) > 0 && !m.sleep(ctx, backoff.Step()) {
			return nil
		}
	}
	return nil
}

// waitReady waits until Ready says the webhook server serves; false when
// ctx ended first.
func (m *Migrator) waitReady(ctx context.Context) bool {
	for logged := false; m.Ready != nil; logged = true {
		err := m.Ready()
		if err == nil {
			break
		}
		if !logged {
			m.Log.V(1).Info("waiting for the webhook server before reading stored objects", "reason", err.Error())
		}
		if !m.sleep(ctx, readyPoll) {
			return false
		}
	}
	return true
}

func (m *Migrator) sleep(ctx context.Context, d time.Duration) bool {
	t := m.Clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
		return true
	}
}
