package steps

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// admissionSender dry-runs graphs through the operator's admission webhooks
// at a steady pace, in the background, and counts what it sent and what
// failed: the load a user's GitOps tool keeps on the webhooks while a
// scenario renews their certificate or upgrades the operator. The feature
// steps ("I keep sending admission requests") and the scenario steps ("a
// client dry-runs a graph through admission every N ms") both run one.
type admissionSender struct {
	sent, failed atomic.Int64
	mu           sync.Mutex
	failures     []string
	failedAt     []time.Time
	stop         context.CancelFunc
	done         chan struct{}
}

// startAdmissionSender dry-run creates next(i) for the i-th request, every
// interval, until halt. check, when not nil, looks at an admitted object
// (as the webhooks returned it); its error counts as a failure.
func startAdmissionSender(c client.Client, interval time.Duration, next func(i int) *unstructured.Unstructured, check func(*unstructured.Unstructured) error) *admissionSender {
	ctx, cancel := context.WithCancel(context.Background())
	a := &admissionSender{stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(a.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			obj := next(i)
			reqCtx, cancelReq := context.WithTimeout(ctx, 10*time.Second)
			err := c.Create(reqCtx, obj, client.DryRunAll)
			cancelReq()
			if ctx.Err() != nil {
				return // stopped mid-request: not the webhooks' failure
			}
			if err == nil && check != nil {
				err = check(obj)
			}
			a.sent.Add(1)
			if err != nil {
				a.failed.Add(1)
				a.mu.Lock()
				now := time.Now()
				a.failures = append(a.failures, now.Format("15:04:05.000")+" "+obj.GetName()+": "+firstLine(err.Error()))
				a.failedAt = append(a.failedAt, now)
				a.mu.Unlock()
			}
		}
	}()
	return a
}

// halt stops the sender and waits until it has.
func (a *admissionSender) halt() {
	a.stop()
	<-a.done
}

// Failures are the failed requests so far, each with its time.
func (a *admissionSender) Failures() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.failures...)
}

// FailedAt are the times of the failed requests so far.
func (a *admissionSender) FailedAt() []time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]time.Time(nil), a.failedAt...)
}
