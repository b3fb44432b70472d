package metrics_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/dynamoctl/dynamo-operator/internal/testenv"
	"github.com/dynamoctl/dynamo-operator/operator/app"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	os.Exit(run(m))
}

// run is testenv.Run, stopping the shared operator and its Deployment
// driver before the API server: their open watches would keep it from
// stopping in time.
func run(m *testing.M) int {
	e, err := testenv.Start()
	if err != nil {
		fmt.Fprintf(os.Stderr, "testenv: %v\n", err)
		return 1
	}
	env = e
	code := m.Run()
	stopShared()
	if err := e.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "testenv: stopping control plane: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// running is the operator the tests of this package share, as the binary
// runs it: webhooks on, /metrics over HTTPS behind TokenReview and
// SubjectAccessReview, logging JSON at V(2) into logs so tests can read
// what each level would show.
type running struct {
	op         *testenv.Operator
	metricsURL string
	scrape     func(context.Context) ([]byte, error)
	logs       *syncBuffer
	// ctx lives as long as the test binary; (re)starts run under it.
	ctx context.Context
}

var (
	// stopShared ends the shared operator and the Deployment driver.
	stopShared = func() {}
	shared     *running
	sharedErr  error
	sharedOnce sync.Once
)

// operator starts the shared operator on first use; it lives as long as
// the test binary.
func operator(t *testing.T) *running {
	t.Helper()
	sharedOnce.Do(func() {
		ctx, cancel := context.WithCancel(context.Background())
		r := &running{logs: &syncBuffer{}, ctx: ctx}
		certDir, err := os.MkdirTemp("", "metrics-certs-")
		if err != nil {
			sharedErr = err
			cancel()
			return
		}
		stopShared = func() {
			if r.op != nil {
				r.op.Stop()
			}
			cancel()
			_ = os.RemoveAll(certDir)
		}
		var metricsArgs []string
		metricsArgs, r.metricsURL, sharedErr = testenv.MetricsArgs()
		if sharedErr != nil {
			return
		}
		logger := zap.New(zap.WriteTo(r.logs), zap.JSONEncoder(), zap.Level(zapcore.Level(-2)))
		args := append(env.WebhookArgsIn(t, certDir), metricsArgs...)
		r.op, sharedErr = env.NewOperator(args, app.Deps{Customize: func(o *manager.Options) { o.Logger = logger }})
		if sharedErr != nil {
			return
		}
		if sharedErr = env.StartDeploymentDriver(ctx, 100*time.Millisecond); sharedErr != nil {
			return
		}
		if sharedErr = r.op.Start(ctx); sharedErr != nil {
			return
		}
		if sharedErr = env.WaitForWebhooks(ctx, 30*time.Second); sharedErr != nil {
			return
		}
		r.scrape, sharedErr = env.Scraper(ctx, r.metricsURL)
		shared = r
	})
	if sharedErr != nil {
		t.Fatalf("starting the operator: %v", sharedErr)
	}
	return shared
}

// syncBuffer is a log sink safe for the operator's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// since returns what was written after the first n bytes, and the length now.
func (b *syncBuffer) since(n int) ([]byte, int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	all := b.buf.Bytes()
	return append([]byte(nil), all[n:]...), len(all)
}

func (b *syncBuffer) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Len()
}
