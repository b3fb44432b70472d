package steps

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/cucumber/godog"
	"github.com/dynamoctl/dynamo-operator/internal/await"
)

func registerOperatorSteps(sc *godog.ScenarioContext, w *world) {
	sc.Step(`^the operator restarts$`, w.operatorRestarts)
	sc.Step(`^the operator makes no writes in this namespace within (\d+) seconds$`, w.noWritesFor)
}

// OperatorControl is what steps about the operator itself need; the
// envtest suite runs the operator in process and provides it.
type OperatorControl interface {
	// Restart stops the operator and starts it again with empty caches.
	Restart(ctx context.Context) error
	// Writes counts the write requests the operator has made so far.
	Writes() int64
	// WritesSince lists the writes after the first n, as "METHOD path".
	WritesSince(n int64) []string
}

func (w *world) operator() (OperatorControl, error) {
	if w.cluster.Operator == nil {
		return nil, fmt.Errorf("this suite cannot observe the operator's requests")
	}
	return w.cluster.Operator, nil
}

func (w *world) operatorRestarts(ctx context.Context) error {
	op, err := w.operator()
	if err != nil {
		return err
	}
	w.writesMark = op.Writes()
	return op.Restart(ctx)
}

// settled waits until the operator has written nothing in the scenario's
// namespace for quiet, and returns its write count at the start of that
// quiet period. It fails when the operator is still writing after 30 s.
func (w *world) settled(ctx context.Context, op OperatorControl, quiet time.Duration) (int64, error) {
	var mark int64
	err := await.Until(ctx, "the operator quiet in this namespace for "+quiet.String(), func() error {
		mark = op.Writes()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(quiet):
		}
		var writes []string
		for _, wr := range op.WritesSince(mark) {
			if strings.Contains(wr, "/namespaces/"+w.namespace+"/") {
				writes = append(writes, wr)
			}
		}
		if len(writes) > 0 {
			return fmt.Errorf("it still writes, for instance:\n  %s", strings.Join(writes, "\n  "))
		}
		return nil
	}, await.Within(30*time.Second))
	if err != nil {
		return 0, err
	}
	return mark, nil
}

// noWritesFor watches the operator for a quiet period. A restarted operator
// reconciles every object it finds, so this asserts that a reconcile with
// nothing to change writes nothing and emits no event.
func (w *world) noWritesFor(ctx context.Context, seconds int) error {
	op, err := w.operator()
	if err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Duration(seconds) * time.Second):
	}
	// Other scenarios' namespaces are being torn down meanwhile; only this
	// scenario's objects are quiet by construction.
	var writes []string
	for _, wr := range op.WritesSince(w.writesMark) {
		if strings.Contains(wr, "/namespaces/"+w.namespace+"/") {
			writes = append(writes, wr)
		}
	}
	if len(writes) != 0 {
		return fmt.Errorf("the operator made %d writes with nothing to change:\n  %s", len(writes), strings.Join(writes, "\n  "))
	}
	return nil
}
