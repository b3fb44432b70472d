package testenv

import (
	"context"
	"fmt"
	"net/http"
	"sync"

	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/dynamoctl/dynamo-operator/operator/app"
	"github.com/dynamoctl/dynamo-operator/operator/config"
)

// Operator runs the operator, as app.New assembles it for the binary, in
// the test process against the Env, and records every write it makes, so
// tests can assert that a reconcile with nothing to do writes nothing.
type Operator struct {
	env  *Env
	opts *config.Options
	deps app.Deps

	mu      sync.Mutex
	cancel  context.CancelFunc
	stopped chan struct{}

	logMu sync.Mutex
	log   []string // "METHOD path" of every write (events included), across restarts
}

// operatorTestDefaults keep in-process operators from opening ports that
// several operators in one test process would fight over; args given to
// NewOperator come after them and win.
var operatorTestDefaults = []string{
	"--metrics-bind-address=0",
	"--health-probe-bind-address=0",
	"--enable-webhooks=false",
	"--max-concurrent-reconciles=4",
}

// NewOperator prepares an operator configured with the manager's own
// command-line flags; Start runs it.
func (e *Env) NewOperator(args []string, deps app.Deps) (*Operator, error) {
	o, err := config.Parse(append(append([]string(nil), operatorTestDefaults...), args...),
		func(string) (string, bool) { return "", false })
	if err != nil {
		return nil, err
	}
	return &Operator{env: e, opts: o, deps: deps}, nil
}

// Options is the operator's configuration.
func (o *Operator) Options() *config.Options { return o.opts }

// Start runs the controllers until Stop or until ctx ends, and waits for
// their caches to sync.
func (o *Operator) Start(ctx context.Context) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.cancel != nil {
		return fmt.Errorf("operator already running")
	}
	cfg := rest.CopyConfig(o.env.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &countingTransport{next: rt, op: o} })
	deps := o.deps
	deps.Customize = func(mo *manager.Options) {
		// Restarts and second operators register the same controllers
		// again in this process.
		mo.Controller.SkipNameValidation = ptr.To(true)
		if o.deps.Customize != nil {
			o.deps.Customize(mo)
		}
	}
	mgr, err := app.New(cfg, o.opts, deps)
	if err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(ctx)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		if err := mgr.Start(runCtx); err != nil {
			fmt.Printf("testenv: operator stopped: %v\n", err)
		}
	}()
	if !mgr.GetCache().WaitForCacheSync(runCtx) {
		cancel()
		<-stopped
		return fmt.Errorf("operator caches did not sync")
	}
	o.cancel, o.stopped = cancel, stopped
	return nil
}

// Stop ends the controllers and waits until they have stopped.
func (o *Operator) Stop() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.cancel == nil {
		return
	}
	o.cancel()
	<-o.stopped
	o.cancel, o.stopped = nil, nil
}

// Writes is the number of write requests the operator has made.
func (o *Operator) Writes() int64 {
	o.logMu.Lock()
	defer o.logMu.Unlock()
	return int64(len(o.log))
}

// WritesSince lists the writes after the first n, as "METHOD path".
func (o *Operator) WritesSince(n int64) []string {
	o.logMu.Lock()
	defer o.logMu.Unlock()
	if n >= int64(len(o.log)) {
		return nil
	}
	return append([]string(nil), o.log[n:]...)
}

type countingTransport struct {
	next http.RoundTripper
	op   *Operator
}

func (t *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		t.op.logMu.Lock()
		t.op.log = append(t.op.log, req.Method+" "+req.URL.Path)
		t.op.logMu.Unlock()
	}
	return resp, err
}
