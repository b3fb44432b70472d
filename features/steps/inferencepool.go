package steps

import (
	"context"
	"time"

	"github.com/cucumber/godog"

	"github.com/dynamoctl/dynamo-operator/internal/await"
	"github.com/dynamoctl/dynamo-operator/internal/testenv"
)

// A cluster with the Gateway API inference extension's InferencePool API:
// the steps install its CRD (testenv.InferencePoolCRD), as the extension's
// release manifests do. It stays installed for the scenarios after: an API
// an operator found served stays served.

func registerInferencePoolSteps(sc *godog.ScenarioContext, w *world) {
	sc.Step(`^the cluster serves the inference extension's InferencePool API$`, w.installInferencePoolAPI)
	sc.Step(`^within a minute the dgd `+quoted+` has its InferencePool$`, unquote1(w.hasInferencePool))
}

func (w *world) installInferencePoolAPI(ctx context.Context) error {
	return testenv.InstallInferencePoolAPI(ctx, w.cluster.Client)
}

// hasInferencePool waits until the graph's InferencePool condition is
// True: an operator that looked for the API before it was installed looks
// again within a minute (discovery is not watchable).
func (w *world) hasInferencePool(ctx context.Context, name string) error {
	return w.eventually(ctx, "the dgd "+name+" with its InferencePool", func() error {
		return w.fieldEquals(ctx, "dgd", name, `.status.conditions[?(@.type=="InferencePool")].status`, "True")
	}, await.Within(time.Minute+w.timeout()))
}
