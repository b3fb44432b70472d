package steps

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/cucumber/godog"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/internal/await"
	"github.com/dynamoctl/dynamo-operator/internal/testenv"
)

// A cluster without the LeaderWorkerSet API, then with it (simulator with
// the chart-installed operator: the steps delete and re-create the CRD the
// simulator installed, and restart the operator's pods).

// lwsCRDName is the CustomResourceDefinition of LeaderWorkerSet.
const lwsCRDName = "leaderworkersets.leaderworkerset.x-k8s.io"

// lwsAPI is a scenario's state of these steps.
type lwsAPI struct {
	// removed is the CRD as it was before the scenario deleted it; nil
	// once it is installed again.
	removed *unstructured.Unstructured
	// operatorPods are the operator's pods (UID to restart count) when the
	// API was installed again.
	operatorPods map[types.UID]int32
}

func registerLWSAPISteps(sc *godog.ScenarioContext, w *world) {
	// The simulator outlives the scenario: whatever happens, the API is
	// served again for the scenarios after this one.
	sc.After(func(ctx context.Context, _ *godog.Scenario, err error) (context.Context, error) {
		if w.lwsAPI.removed == nil {
			return ctx, nil
		}
		rctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		return ctx, w.installLWSAPI(rctx)
	})
	sc.Step(`^the cluster serves no LeaderWorkerSet API, and the operator has started without it$`, w.removeLWSAPI)
	sc.Step(`^LeaderWorkerSet's API is installed again$`, w.installLWSAPI)
	sc.Step(`^the operator's pods have not restarted since LeaderWorkerSet's API was installed$`, w.operatorNotRestarted)
}

func lwsCRD() *unstructured.Unstructured {
	crd := &unstructured.Unstructured{}
	crd.SetAPIVersion("apiextensions.k8s.io/v1")
	crd.SetKind("CustomResourceDefinition")
	crd.SetName(lwsCRDName)
	return crd
}

// removeLWSAPI deletes LeaderWorkerSet's CRD (every LeaderWorkerSet goes
// with it), then restarts the operator, which thus starts on a cluster
// that has never served the API as far as it knows.
func (w *world) removeLWSAPI(ctx context.Context) error {
	crd := lwsCRD()
	if err := w.cluster.Client.Get(ctx, client.ObjectKeyFromObject(crd), crd); err != nil {
		return fmt.Errorf("reading the LeaderWorkerSet CRD: %w", err)
	}
	saved := crd.DeepCopy()
	unstructured.RemoveNestedField(saved.Object, "status")
	for _, f := range []string{"resourceVersion", "uid", "creationTimestamp", "generation", "managedFields", "deletionTimestamp", "deletionGracePeriodSeconds", "finalizers"} {
		unstructured.RemoveNestedField(saved.Object, "metadata", f)
	}
	if err := w.cluster.Client.Delete(ctx, crd); err != nil {
		return err
	}
	w.lwsAPI.removed = saved
	err := w.eventually(ctx, "the LeaderWorkerSet API gone and the operator started without it", func() error {
		err := w.cluster.Client.Get(ctx, client.ObjectKeyFromObject(crd), lwsCRD())
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("the LeaderWorkerSet CRD is still there (%v)", err)
	}, await.Within(2*time.Minute))
	if err != nil {
		return err
	}
	return w.operatorRestarts(ctx)
}

// installLWSAPI creates the CRD as it was and waits until it is
// established; it records the operator's pods then.
func (w *world) installLWSAPI(ctx context.Context) error {
	if w.lwsAPI.removed == nil {
		return fmt.Errorf("the scenario removed no LeaderWorkerSet API")
	}
	if err := testenv.InstallCRD(ctx, w.cluster.Client, w.lwsAPI.removed.DeepCopy()); err != nil {
		return err
	}
	w.lwsAPI.removed = nil
	pods, err := OperatorPods(ctx, w.cluster.Client, ClusterRelease, ClusterNamespace)
	if err != nil {
		return err
	}
	w.lwsAPI.operatorPods = map[types.UID]int32{}
	for _, p := range pods {
		w.lwsAPI.operatorPods[p.UID] = restarts(p.Status.ContainerStatuses)
	}
	return nil
}

func (w *world) operatorNotRestarted(ctx context.Context) error {
	if w.lwsAPI.operatorPods == nil {
		return fmt.Errorf("LeaderWorkerSet's API was not installed in this scenario")
	}
	pods, err := OperatorPods(ctx, w.cluster.Client, ClusterRelease, ClusterNamespace)
	if err != nil {
		return err
	}
	var problems []string
	for _, p := range pods {
		before, ok := w.lwsAPI.operatorPods[p.UID]
		switch {
		case !ok:
			problems = append(problems, "pod "+p.Name+" is new")
		case restarts(p.Status.ContainerStatuses) != before:
			problems = append(problems, fmt.Sprintf("pod %s restarted (%d restarts, %d before)", p.Name, restarts(p.Status.ContainerStatuses), before))
		}
	}
	if len(pods) != len(w.lwsAPI.operatorPods) {
		problems = append(problems, fmt.Sprintf("%d operator pods, %d before", len(pods), len(w.lwsAPI.operatorPods)))
	}
	if len(problems) > 0 {
		return fmt.Errorf("the operator restarted: %s", strings.Join(problems, "; "))
	}
	return nil
}

// restarts sums the restart counts of a pod's containers.
func restarts(statuses []corev1.ContainerStatus) int32 {
	var n int32
	for _, s := range statuses {
		n += s.RestartCount
	}
	return n
}
