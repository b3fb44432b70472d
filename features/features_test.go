// Package features runs the Gherkin feature files of this folder with godog
// against a real kube-apiserver (envtest). Run one feature or tag with
// GODOG_PATHS=api.feature or GODOG_TAGS=@api.
package features

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cucumber/godog"

	"github.com/dynamoctl/dynamo-operator/features/steps"
	"github.com/dynamoctl/dynamo-operator/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, func(e *testenv.Env) { env = e }))
}

func TestFeatures(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	cluster := &steps.Cluster{
		Client:          env.Client,
		Config:          env.Config,
		CreateNamespace: env.CreateNamespace,
		DeleteNamespace: env.DeleteNamespace,
		RepoRoot:        root,
		EventualTimeout: 30 * time.Second,
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
			Tags:     os.Getenv("GODOG_TAGS"),
			Strict:   true, // an undefined or pending step fails the run
			TestingT: t,
		},
	}
	if suite.Run() != 0 {
		t.Fatal("feature scenarios failed")
	}
}
