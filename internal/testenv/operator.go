package testenv

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/dynamoctl/dynamo-operator/operator/app"
	"github.com/dynamoctl/dynamo-operator/operator/config"
	"github.com/dynamoctl/dynamo-operator/operator/scope"
)

// Operator runs the operator, as app.New assembles it for the binary, in
// the test process against the Env, and records every write it makes, so
// tests can assert that a reconcile with nothing to do writes nothing.
type Operator struct {
	env  *Env
	opts *config.Options
	deps app.Deps
	// config authenticates the operator, as its own user when one was named.
	config *rest.Config
	// partitioned makes every request fail as if the network were gone,
	// so Kill can stop the operator without its goodbyes reaching the API.
	partitioned atomic.Bool

	mu      sync.Mutex
	cancel  context.CancelFunc
	stopped chan struct{}

	logMu sync.Mutex
	log   []write // every write (events included), across restarts
}

// operatorTestDefaults keep in-process operators from opening ports that
// several operators in one test process would fight over; args given to
// NewOperator come after them and win.
var operatorTestDefaults = []string{
	"--metrics-bind-address=0",
	"--health-probe-bind-address=0",
	"--enable-webhooks=false",
	"--max-concurrent-reconciles=4",
	// Tests stop and restart operators often; the drain on stop is tested
	// in operator/webhooks and on the simulator (install.feature).
	"--webhook-drain=0s",
}

// NewOperator prepares an operator configured with the manager's own
// command-line flags; Start runs it.
func (e *Env) NewOperator(args []string, deps app.Deps) (*Operator, error) {
	return e.NewOperatorAs("", args, deps)
}

// ControllersOnly are the flags of an operator that runs only its
// controllers: no webhooks, metrics or health endpoints, so that a test
// needs neither certificates nor ports.
var ControllersOnly = []string{"--enable-webhooks=false", "--metrics-bind-address=0", "--health-probe-bind-address=0"}

// StartControllers starts an operator with ControllersOnly and args, and
// stops it when the test ends.
func (e *Env) StartControllers(ctx context.Context, t testing.TB, args ...string) *Operator {
	t.Helper()
	return e.StartOperator(ctx, t, append(append([]string(nil), ControllersOnly...), args...)...)
}

// StartOperator starts an operator with the manager's flags args (after
// the test defaults) and stops it when the test ends.
func (e *Env) StartOperator(ctx context.Context, t testing.TB, args ...string) *Operator {
	t.Helper()
	op, err := e.NewOperator(args, app.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	if err := op.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(op.Stop)
	return op
}

// NewOperatorAs is NewOperator authenticating as user (a cluster admin), so
// that the audit log tells this operator's writes from others'. An empty
// user is the Env's own administrator.
func (e *Env) NewOperatorAs(user string, args []string, deps app.Deps) (*Operator, error) {
	o, err := config.Parse(append(append([]string(nil), operatorTestDefaults...), args...),
		func(string) (string, bool) { return "", false })
	if err != nil {
		return nil, err
	}
	cfg := e.Config
	if user != "" {
		u, err := e.env.AddUser(envtest.User{Name: user, Groups: []string{"system:masters"}}, nil)
		if err != nil {
			return nil, err
		}
		cfg = u.Config()
	}
	return &Operator{env: e, opts: o, deps: deps, config: cfg}, nil
}

// NewOperatorWithConfig is NewOperator authenticating with cfg (e.g. one
// impersonating the chart's ServiceAccount, so the operator has exactly the
// chart's RBAC) and seeing env as its environment (POD_NAMESPACE, ...).
func (e *Env) NewOperatorWithConfig(cfg *rest.Config, args []string, env map[string]string, deps app.Deps) (*Operator, error) {
	o, err := config.Parse(append(append([]string(nil), operatorTestDefaults...), args...),
		func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		return nil, err
	}
	return &Operator{env: e, opts: o, deps: deps, config: cfg}, nil
}

// Start runs the controllers until Stop or until ctx ends, and waits for
// their caches to sync.
func (o *Operator) Start(ctx context.Context) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.cancel != nil {
		return fmt.Errorf("operator already running")
	}
	o.partitioned.Store(false)
	cfg := rest.CopyConfig(o.config)
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

// Kill stops the operator as if its process died: nothing it would say on
// the way out (releasing leases) reaches the API server.
func (o *Operator) Kill() {
	o.partitioned.Store(true)
	o.Stop()
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
	out := make([]string, 0, len(o.log)-int(n))
	for _, w := range o.log[n:] {
		out = append(out, w.String())
	}
	return out
}

// WritesIn lists the writes in namespace sent in [from, to), as "METHOD
// path sent at time": when the operator had decided to write, however long
// a loaded API server then took to answer.
func (o *Operator) WritesIn(namespace string, from, to time.Time) []string {
	o.logMu.Lock()
	defer o.logMu.Unlock()
	var out []string
	for _, w := range o.log {
		if strings.Contains(w.path, "/namespaces/"+namespace+"/") && !w.sent.Before(from) && w.sent.Before(to) {
			out = append(out, w.String()+" sent at "+w.sent.Format(time.RFC3339Nano))
		}
	}
	return out
}

// LeaseRenewals lists each successful PUT or PATCH of the Lease name in
// namespace: when it was sent (a Lease holder sets renewTime just before it
// sends, so the renewal's time as the Lease records it) and when its answer
// came (the stored Lease says the renewal from then on).
func (o *Operator) LeaseRenewals(namespace, name string) []scope.Renewal {
	var out []scope.Renewal
	for _, w := range o.leaseWrites(namespace, name, http.MethodPut, http.MethodPatch) {
		out = append(out, scope.Renewal{Sent: w.sent, Landed: w.at})
	}
	return out
}

// leaseWrites are the successful writes of the Lease name in namespace
// with one of methods, in the order they were answered.
func (o *Operator) leaseWrites(namespace, name string, methods ...string) []write {
	o.logMu.Lock()
	defer o.logMu.Unlock()
	var out []write
	suffix := "/namespaces/" + namespace + "/leases/" + name
	for _, w := range o.log {
		if w.ok && slices.Contains(methods, w.method) && strings.HasSuffix(w.path, suffix) {
			out = append(out, w)
		}
	}
	return out
}

// LeaseReleased is when the operator sent its first successful DELETE of
// the Lease name in namespace (a holder giving its namespace back, as on
// any stop, a lost election's included), and whether it did.
func (o *Operator) LeaseReleased(namespace, name string) (time.Time, bool) {
	if deletes := o.leaseWrites(namespace, name, http.MethodDelete); len(deletes) > 0 {
		return deletes[0].sent, true
	}
	return time.Time{}, false
}

// write is one write request, recorded when its response arrived.
type write struct {
	method, path string
	// sent and at are when the request was sent and its response arrived;
	// ok is a 2xx response.
	sent, at time.Time
	ok       bool
}

func (w write) String() string { return w.method + " " + w.path }

type countingTransport struct {
	next http.RoundTripper
	op   *Operator
}

func (t *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.op.partitioned.Load() {
		return nil, errors.New("testenv: operator killed")
	}
	sent := time.Now()
	resp, err := t.next.RoundTrip(req)
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		ok := err == nil && resp.StatusCode >= 200 && resp.StatusCode < 300
		t.op.logMu.Lock()
		t.op.log = append(t.op.log, write{method: req.Method, path: req.URL.Path, sent: sent, at: time.Now(), ok: ok})
		t.op.logMu.Unlock()
	}
	return resp, err
}
