// Package features runs the Gherkin feature files of this folder with godog
// against a real kube-apiserver (envtest) with the operator's controllers
// running in process. Run one feature or tag with GODOG_PATHS=api.feature
// or GODOG_TAGS=@api.
package features

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cucumber/godog"
	"go.uber.org/zap/zapcore"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/dynamoctl/dynamo-operator/features/steps"
	"github.com/dynamoctl/dynamo-operator/internal/testenv"
	"github.com/dynamoctl/dynamo-operator/internal/workerfarm"
	"github.com/dynamoctl/dynamo-operator/operator/app"
	"github.com/dynamoctl/dynamo-operator/sim/workers"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	// Only the operator's errors reach the test output. Set before the
	// test environment starts its servers, whose first log lines would
	// otherwise race with it.
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	os.Exit(testenv.Run(m, func(e *testenv.Env) { env = e }))
}

// restartable lets scenarios restart the in-process operator. The new run
// lives as long as the suite, not as long as the step that asked for it.
type restartable struct {
	*testenv.Operator
	suite context.Context
}

func (r restartable) Restart(context.Context) error {
	r.Stop()
	return r.Start(r.suite)
}

// StartLocal runs a namespace-scoped operator in process beside the
// cluster-wide one, with lease timings short enough for scenarios to watch
// a lease expire.
func (r restartable) StartLocal(_ context.Context, namespace, version string) (steps.LocalOperator, error) {
	op, err := env.NewOperator([]string{
		"--restrict-namespace=" + namespace, "--operator-version=" + version,
		"--namespace-lease-duration=2s", "--namespace-lease-renew-interval=500ms",
	}, app.Deps{})
	if err != nil {
		return nil, err
	}
	if err := op.Start(r.suite); err != nil {
		return nil, err
	}
	return op, nil
}

// farmWorkers gives the steps the farm's workers.
type farmWorkers struct{ f *workerfarm.Farm }

func (w farmWorkers) Serve(_ context.Context, namespace string) error {
	w.f.Serve(namespace)
	return nil
}

func (w farmWorkers) Calls(context.Context) ([]workers.Call, error) { return w.f.Recorder.Calls(), nil }

func (w farmWorkers) LoRAs(context.Context) (map[string][]string, error) { return w.f.AllLoRAs(), nil }

func (w farmWorkers) Restart(ctx context.Context, pod string) error {
	return w.f.RestartWorker(ctx, pod)
}

func (w farmWorkers) Forget(_ context.Context, pod string) error { return w.f.ForgetWorker(pod) }

// envtestTags leaves out the scenarios tagged @sim-only: they need a
// kubelet that runs pods and their probes, which envtest lacks (the
// simulator's suite, features/sim, leaves out @envtest-only in turn).
func envtestTags(tags string) string {
	if tags == "" {
		return "~@sim-only"
	}
	return tags + " && ~@sim-only"
}

func TestFeatures(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	// envtest has no Deployment controller or kubelets; the driver moves
	// Deployment status as a rollout would, slowly enough for scenarios to
	// see a graph leave Ready during a rollout.
	if err := env.StartDeploymentDriver(ctx, 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	// Multinode compat graphs run as LeaderWorkerSets: their API and a
	// stand-in for its controller.
	if err := env.StartLWSDriver(ctx); err != nil {
		t.Fatal(err)
	}
	// Admission webhooks are on, as in a real install: every scenario's
	// objects pass the operator's own webhooks, called by the API server.
	// /metrics is served as the binary serves it (HTTPS, TokenReview,
	// SubjectAccessReview) and scraped as a ServiceAccount allowed to.
	metricsArgs, metricsURL, err := testenv.MetricsArgs()
	if err != nil {
		t.Fatal(err)
	}
	// Dynamo workers: pods of the namespaces a scenario asks for, each with
	// an in-process fake worker the operator reaches at the pod's address.
	farm := workerfarm.New(env.Client, clock.RealClock{})
	farm.Run(ctx)
	args := append(env.WebhookArgs(t), metricsArgs...)
	const modelCheck = 2 * time.Second
	args = append(args, "--model-check-interval="+modelCheck.String())
	op, err := env.NewOperator(args, app.Deps{ModelHTTP: farm.HTTPClient()})
	if err != nil {
		t.Fatal(err)
	}
	if err := op.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(op.Stop)
	// The first scenario must already meet the webhooks.
	if err := env.WaitForWebhooks(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}

	scrape, err := env.Scraper(ctx, metricsURL)
	if err != nil {
		t.Fatal(err)
	}
	cluster := &steps.Cluster{
		ScrapeMetrics:      scrape,
		Client:             env.Client,
		Config:             env.Config,
		CreateNamespace:    env.CreateNamespace,
		DeleteNamespace:    env.DeleteNamespace,
		RepoRoot:           root,
		EventualTimeout:    30 * time.Second,
		Operator:           restartable{Operator: op, suite: ctx},
		Workers:            farmWorkers{farm},
		ModelCheckInterval: modelCheck,
	}
	paths := []string{"."}
	if p := os.Getenv("GODOG_PATHS"); p != "" {
		paths = strings.Split(p, ",")
	}
	suite := godog.TestSuite{
		Name:                "features",
		ScenarioInitializer: cluster.InitializeScenario,
		Options: &godog.Options{
			Format:   "pretty",
			Paths:    paths,
			Tags:     envtestTags(os.Getenv("GODOG_TAGS")),
			Strict:   true, // an undefined or pending step fails the run
			TestingT: t,
		},
	}
	if suite.Run() != 0 {
		t.Fatal("feature scenarios failed")
	}
}
