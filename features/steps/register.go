package steps

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/cucumber/godog"
)

// The one place the steps are registered. Each file of a domain has one
// function registering its steps; the feature files' suite (Cluster, on
// envtest or the simulator) and the upgrade and fault scenarios' suite
// (Suite, a simulator per scenario or chain) each list theirs here.

// featureSteps register the steps of the feature files (features/*.feature).
var featureSteps = []func(*godog.ScenarioContext, *world){
	registerModeSteps,
	registerManifestSteps,
	registerLifecycleSteps,
	registerAPISteps,
	registerOperatorSteps,
	registerCompatSteps,
	registerWebhookSteps,
	registerServingSteps,
	registerRolloutSteps,
	registerRestartSteps,
	registerMetricsSteps,
	registerInstallSteps,
	registerOperatorPodSteps,
	registerComponentSteps,
	registerModelSteps,
	registerMultinodeSteps,
	registerGangSteps,
	registerGroupSteps,
	registerLWSAPISteps,
	registerIstioSteps,
	registerInferencePoolSteps,
	registerTopologySteps,
	registerAutoscalingSteps,
}

// scenarioSteps register the steps of the upgrade and fault scenarios
// (scenarios/*.feature).
var scenarioSteps = []func(*godog.ScenarioContext, *simWorld){
	registerReleaseSteps,
	registerCRDSteps,
	registerFaultSteps,
	registerFaultChildrenSteps,
	registerNodeLossSteps,
	registerCertExpirySteps,
	registerHASteps,
	registerGraphSteps,
	registerDayTwoSteps,
	registerHandoverSteps,
	registerMigrationSteps,
	registerMigrationV1beta1Steps,
	registerMigrationInventorySteps,
	registerMigrationStatusSteps,
	registerMigrationHybridSteps,
	registerProbeSteps,
	registerRenderSteps,
	registerWatchSteps,
}

// InitializeScenario is the feature files' (Cluster): it registers the
// feature steps and gives each scenario a namespace of its own, deleted
// when the scenario ends.
func (c *Cluster) InitializeScenario(sc *godog.ScenarioContext) {
	w := &world{cluster: c}
	sc.Before(func(ctx context.Context, s *godog.Scenario) (context.Context, error) {
		ns, err := c.CreateNamespace(ctx, s.Name)
		if err != nil {
			return ctx, fmt.Errorf("creating the scenario's namespace: %w", err)
		}
		w.namespace = ns
		return ctx, nil
	})
	sc.After(func(ctx context.Context, _ *godog.Scenario, err error) (context.Context, error) {
		// Releases first: an operator in a namespace being deleted would
		// lose its RoleBinding before it stops.
		cleanErr := errors.Join(w.cleanUpReleases(), w.undoFaults())
		if w.namespace != "" {
			c.DeleteNamespace(context.Background(), w.namespace)
		}
		return ctx, cleanErr
	})

	for _, register := range featureSteps {
		register(sc, w)
	}
}

// InitializeScenario is the upgrade and fault scenarios' (Suite): it gives
// each scenario a simWorld, registers the scenario steps, and when the scenario ends stops what it started
// (background activities, then cleanups newest first, then the simulator)
// and records its result.
func (s *Suite) InitializeScenario(sc *godog.ScenarioContext) {
	w := &simWorld{Suite: s, EventualTimeout: 5 * time.Minute}
	sc.Before(func(ctx context.Context, sn *godog.Scenario) (context.Context, error) {
		w.figures = nil
		w.name = strings.TrimSuffix(filepath.Base(sn.Uri), ".feature") + ": " + sn.Name
		w.started = time.Now()
		return ctx, nil
	})
	// Each step's duration, so a slow one shows in the run's output.
	var stepStart time.Time
	sc.StepContext().Before(func(ctx context.Context, _ *godog.Step) (context.Context, error) {
		stepStart = time.Now()
		return ctx, nil
	})
	sc.StepContext().After(func(ctx context.Context, st *godog.Step, _ godog.StepResultStatus, _ error) (context.Context, error) {
		fmt.Printf("    (%.1fs) %s\n", time.Since(stepStart).Seconds(), st.Text)
		return ctx, nil
	})
	sc.After(func(ctx context.Context, _ *godog.Scenario, err error) (context.Context, error) {
		duration := time.Since(w.started)
		cleanErr := w.tearDown(err == nil)
		if s.Report != nil {
			s.Report.Add(Result{Scenario: w.name, Err: errors.Join(err, cleanErr), Duration: duration, Figures: w.figures})
		}
		return ctx, cleanErr
	})
	for _, register := range scenarioSteps {
		register(sc, w)
	}
}
