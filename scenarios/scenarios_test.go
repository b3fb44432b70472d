// Package scenarios runs the upgrade and fault regression scenarios
// (scenarios/*.feature) with godog on the simulator. A scenario starts a
// simulator with no operator, or continues on the one the scenario before
// it kept, and installs operator releases built from git with helm
// (scenarios/harness, and the step library features/steps).
//
// It runs only when DYNAMO_SCENARIOS=1 (make scenarios). GODOG_PATHS
// (feature files, relative to scenarios/, comma-separated) and GODOG_TAGS
// narrow it. SCENARIO_PREVIOUS names the previous release (default: the
// newest tag before HEAD). The JUnit XML (godog's junit formatter) and a
// text summary with each scenario's figures go to $SCENARIO_REPORT_DIR
// (default scenarios/report/): junit.xml and summary.txt.
package scenarios

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cucumber/godog"
	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/dynamoctl/dynamo-operator/features/steps"
	"github.com/dynamoctl/dynamo-operator/internal/testenv"
	"github.com/dynamoctl/dynamo-operator/scenarios/harness"
)

func TestMain(m *testing.M) {
	if os.Getenv("DYNAMO_SCENARIOS") != "1" {
		fmt.Println("scenarios: skipped; DYNAMO_SCENARIOS=1 runs them (make scenarios)")
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func TestScenarios(t *testing.T) {
	// The clients' own logs are noise here; errors reach the steps.
	ctrl.SetLogger(logr.Discard())
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	helm := envOr("HELM", filepath.Join(root, ".cache", "bin", "helm"))
	previous := os.Getenv("SCENARIO_PREVIOUS")
	if previous == "" {
		if previous, err = harness.PreviousTag(ctx, root); err != nil {
			t.Fatal(err)
		}
	}
	reportDir := envOr("SCENARIO_REPORT_DIR", filepath.Join(root, "scenarios", "report"))
	if err := os.MkdirAll(reportDir, 0o755); err != nil {
		t.Fatal(err)
	}
	suite := &steps.Suite{
		Root:     root,
		SimBin:   envOr("DYNAMO_SIM_BIN", filepath.Join(root, "bin", "dynamo-sim")),
		Helm:     helm,
		BinDir:   os.Getenv("KUBEBUILDER_ASSETS"),
		StateDir: filepath.Join(root, ".cache", "scenarios", "sim"),
		Builder:  &harness.Builder{Root: root, Helm: helm, Log: func(f string, a ...any) { fmt.Printf("scenarios: "+f+"\n", a...) }},
		Previous: previous,
		Report:   &steps.Report{},
	}
	start := time.Now()
	if err := suite.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	fmt.Printf("scenarios: releases built in %.1fs\n", time.Since(start).Seconds())

	paths := []string{filepath.Join(root, "scenarios")}
	if p := os.Getenv("GODOG_PATHS"); p != "" {
		paths = nil
		for _, s := range strings.Split(p, ",") {
			paths = append(paths, filepath.Join(root, "scenarios", s))
		}
	}
	// Every scenario runs: none is left out by default. Scenarios that
	// continue on the simulator the one before kept fail, saying so, when
	// GODOG_TAGS leaves that one out.
	tags := os.Getenv("GODOG_TAGS")
	junit := filepath.Join(reportDir, "junit.xml")
	status := godog.TestSuite{
		Name:                "scenarios",
		ScenarioInitializer: suite.InitializeScenario,
		Options: &godog.Options{
			Format:   "pretty,junit:" + junit,
			Paths:    paths,
			Tags:     tags,
			Strict:   true,
			TestingT: t,
		},
	}.Run()
	if err := suite.DownKept(ctx); err != nil {
		t.Error(err)
	}
	summary := filepath.Join(reportDir, "summary.txt")
	if err := suite.Report.WriteSummary(summary); err != nil {
		t.Error(err)
	}
	fmt.Printf("\n== scenario summary (%s, JUnit %s)\n%s", summary, junit, suite.Report.Summary())
	if status != 0 {
		t.Fatal("scenarios failed")
	}
}
