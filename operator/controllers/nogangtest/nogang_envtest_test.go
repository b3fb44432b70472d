// Package nogangtest runs the operator against an API server that does not
// serve the gang PodGroup API (Kubernetes' default): a control plane of its
// own, since the API is chosen when the API server starts.
package nogangtest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/dynamoctl/dynamo-operator/internal/await"
	"github.com/dynamoctl/dynamo-operator/internal/builders"
	"github.com/dynamoctl/dynamo-operator/internal/testenv"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/controllers"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr)))
	os.Exit(testenv.RunWith(m, testenv.Options{NoGangScheduling: true}, func(e *testenv.Env) { env = e }))
}

// Without the PodGroup API a multinode component still runs (its groups
// placed pod by pod) and Ready, and says, as a condition and not a failure,
// that its groups are not placed all-or-nothing and what to enable.
func TestMultinodeRunsWithoutGangSchedulingAndSaysSo(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := env.StartLWSDriver(ctx); err != nil {
		t.Fatal(err)
	}
	ns := env.Namespace(t, "nogang")
	env.StartControllers(ctx, t)

	graph := builders.MakeGraph("llm", ns).
		Service("decode", builders.MakeService().Replicas(2).VLLMGroups(2, 4)).Obj()
	if err := env.Client.Create(ctx, graph); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKey{Namespace: ns, Name: "llm-decode"}
	dcd := &v1alpha1.DynamoComponentDeployment{}
	await.New(t).Eventually(func() error {
		if err := env.Client.Get(ctx, key, dcd); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(dcd.Status.Conditions, v1alpha1.ConditionAvailable) ||
			meta.FindStatusCondition(dcd.Status.Conditions, controllers.ConditionGangScheduling) == nil {
			return fmt.Errorf("conditions %+v", dcd.Status.Conditions)
		}
		return nil
	}).WithTimeout(60*time.Second).Should(gomega.Succeed(), "the component is Available with a GangScheduling condition")
	c := meta.FindStatusCondition(dcd.Status.Conditions, controllers.ConditionGangScheduling)
	if c.Status != metav1.ConditionFalse || c.Reason != controllers.ReasonAPINotServed {
		t.Errorf("GangScheduling %s/%s, want False/%s", c.Status, c.Reason, controllers.ReasonAPINotServed)
	}
	for _, want := range []string{"scheduling.k8s.io/v1alpha2", "--runtime-config=scheduling.k8s.io/v1alpha2=true",
		"GenericWorkload=true,GangScheduling=true", "without a restart"} {
		if !strings.Contains(c.Message, want) {
			t.Errorf("message %q lacks %q", c.Message, want)
		}
	}
	if err := env.Client.Get(ctx, key, &lwsv1.LeaderWorkerSet{}); err != nil {
		t.Errorf("the groups' LeaderWorkerSet: %v", err)
	}
	g := &v1alpha1.DynamoGraphDeployment{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(graph), g); err != nil || g.Status.State == v1alpha1.GraphStateFailed {
		t.Errorf("graph state %q (%v): the missing API must not fail it", g.Status.State, err)
	}
}
