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
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/dynamoctl/dynamo-operator/features/steps"
	"github.com/dynamoctl/dynamo-operator/internal/testenv"
	"github.com/dynamoctl/dynamo-operator/operator/app"
)

var env *testenv.Env

func TestMain(m *testing.M) {
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

func TestFeatures(t *testing.T) {
	// Only the operator's errors reach the test output.
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
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
	// Admission webhooks are on, as in a real install: every scenario's
	// objects pass the operator's own webhooks, called by the API server.
	op, err := env.NewOperator(env.WebhookArgs(t), app.Deps{})
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

	cluster := &steps.Cluster{
		Client:          env.Client,
		Config:          env.Config,
		CreateNamespace: env.CreateNamespace,
		DeleteNamespace: env.DeleteNamespace,
		RepoRoot:        root,
		EventualTimeout: 30 * time.Second,
		Operator:        restartable{Operator: op, suite: ctx},
	}
	paths := []string{"."}
	if p := os.Getenv("GODOG_PATHS"); p != "" {
		paths = strings.Split(p, ",")
	}
	// @sim-only scenarios need pods that run (the chart-installed
	// operator): envtest has no kubelet.
	tags := "~@sim-only"
	if t := os.Getenv("GODOG_TAGS"); t != "" {
		tags = t + " && " + tags
	}
	suite := godog.TestSuite{
		Name:                "features",
		ScenarioInitializer: cluster.InitializeScenario,
		Options: &godog.Options{
			Format:   "pretty",
			Paths:    paths,
			Tags:     tags,
			Strict:   true, // an undefined or pending step fails the run
			TestingT: t,
		},
	}
	if suite.Run() != 0 {
		t.Fatal("feature scenarios failed")
	}
}
