package enginetest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/internal/await"
	"github.com/dynamoctl/dynamo-operator/internal/builders"
	"github.com/dynamoctl/dynamo-operator/internal/testenv"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/controllers"
	"github.com/dynamoctl/dynamo-operator/operator/render"
)

// pickerConfig is an inline eppConfig.config of one plugin.
func pickerConfig(plugin string) *v1alpha1.EPPConfig {
	return &v1alpha1.EPPConfig{Config: &runtime.RawExtension{Raw: []byte(`{"plugins":[{"type":"` + plugin + `"}]}`)}}
}

// pickerGraph is a graph of a worker and an endpoint picker configured
// inline.
func pickerGraph(ns string) *v1alpha1.DynamoGraphDeployment {
	return builders.MakeGraph("qwen", ns).
		Service("Epp", builders.MakeService().Type(v1alpha1.ComponentTypeEPP).EPPConfig(pickerConfig("max-score-picker"))).
		Service("Worker", builders.MakeService().Type(v1alpha1.ComponentTypeWorker)).
		Obj()
}

// graphCondition waits until the graph has observed its generation and
// returns its condition of type, nil when it has none.
func graphCondition(ctx context.Context, t *testing.T, key client.ObjectKey, conditionType string, present bool) *metav1.Condition {
	t.Helper()
	dgd := &v1alpha1.DynamoGraphDeployment{}
	await.New(t).Eventually(func() error {
		if err := env.Client.Get(ctx, key, dgd); err != nil {
			return err
		}
		if dgd.Status.ObservedGeneration != dgd.Generation {
			return fmt.Errorf("status of generation %d, the graph is at %d", dgd.Status.ObservedGeneration, dgd.Generation)
		}
		if c := meta.FindStatusCondition(dgd.Status.Conditions, conditionType); (c != nil) != present {
			return fmt.Errorf("condition %s: %+v", conditionType, c)
		}
		return nil
	}).Should(gomega.Succeed(), "the graph's %s condition", conditionType)
	return meta.FindStatusCondition(dgd.Status.Conditions, conditionType)
}

// The operator's first phase runs on a cluster without the Gateway API
// inference extension's InferencePool API, the second after it is
// installed (it stays for the API server's life, and no other test of this
// package reads it): subtests, so that they run in this order.
func TestInferencePool(t *testing.T) {
	t.Run("without the API the graph runs and says why it has no pool", withoutTheAPI)
	t.Run("with the API the graph owns its pool and a new configuration rolls the picker", withTheAPI)
}

// Without the API the picker and its workers run all the same, the graph
// is not failed, and its InferencePool condition says what to install.
func withoutTheAPI(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := env.Namespace(t, "nopool")
	if err := env.StartDeploymentDriver(ctx, 0); err != nil {
		t.Fatal(err)
	}
	env.StartControllers(ctx, t)
	dgd := pickerGraph(ns)
	if err := env.Client.Create(ctx, dgd); err != nil {
		t.Fatal(err)
	}
	c := graphCondition(ctx, t, client.ObjectKeyFromObject(dgd), controllers.ConditionInferencePool, true)
	want := metav1.Condition{
		Type: controllers.ConditionInferencePool, Status: metav1.ConditionFalse, Reason: controllers.ReasonAPINotServed,
		ObservedGeneration: 1,
		Message: "the cluster serves no inference.networking.k8s.io/v1 InferencePool API, so the InferencePool qwen-pool the " +
			"endpoint picker qwen-epp picks for is not created: install the Gateway API inference extension's CRDs; the " +
			"operator creates it within a minute, without a restart",
	}
	if diff := cmp.Diff(want, *c, cmpIgnoreTime); diff != "" {
		t.Errorf("InferencePool condition (-want +got):\n%s", diff)
	}
	await.New(t).Eventually(func() (v1alpha1.GraphState, error) {
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(dgd), dgd)
		return dgd.Status.State, err
	}).Should(gomega.Equal(v1alpha1.GraphStateSuccessful), "the graph is ready without the pool")
}

// With the API the graph owns the pool of Dynamo's shape (the server's
// defaults filled in); a new inline configuration rolls the picker, a
// reconcile with nothing new writes nothing, and the pool goes with the
// picker.
func withTheAPI(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := testenv.InstallInferencePoolAPI(ctx, env.Client); err != nil {
		t.Fatal(err)
	}
	ns := env.Namespace(t, "pool")
	if err := env.StartDeploymentDriver(ctx, 0); err != nil {
		t.Fatal(err)
	}
	op := env.StartControllers(ctx, t)
	dgd := pickerGraph(ns)
	if err := env.Client.Create(ctx, dgd); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(dgd)

	pool := &unstructured.Unstructured{}
	pool.SetGroupVersionKind(render.InferencePoolGVK)
	poolKey := client.ObjectKey{Namespace: ns, Name: "qwen-pool"}
	await.New(t).Eventually(func() error { return env.Client.Get(ctx, poolKey, pool) }).Should(gomega.Succeed(), "the pool")
	wantSpec := map[string]any{
		"selector": map[string]any{"matchLabels": map[string]any{
			render.LabelComponentType:   "worker",
			render.LabelDynamoNamespace: ns + "-qwen",
		}},
		"targetPorts": []any{map[string]any{"number": int64(8000)}},
		"endpointPickerRef": map[string]any{
			"group": "", "kind": "Service", "name": "qwen-epp", "failureMode": "FailClose",
			"port": map[string]any{"number": int64(9002)},
		},
	}
	if diff := cmp.Diff(wantSpec, pool.Object["spec"]); diff != "" {
		t.Errorf("the pool's spec (-want +got):\n%s", diff)
	}
	if err := env.Client.Get(ctx, key, dgd); err != nil {
		t.Fatal(err)
	}
	if !metav1.IsControlledBy(pool, dgd) {
		t.Errorf("the pool's owners %v: the graph does not control it", pool.GetOwnerReferences())
	}
	c := graphCondition(ctx, t, key, controllers.ConditionInferencePool, true)
	if c.Status != metav1.ConditionTrue || c.Reason != controllers.ReasonInferencePool {
		t.Errorf("InferencePool condition %s/%s, want True/%s", c.Status, c.Reason, controllers.ReasonInferencePool)
	}
	await.New(t).Eventually(func() (v1alpha1.GraphState, error) {
		err := env.Client.Get(ctx, key, dgd)
		return dgd.Status.State, err
	}).Should(gomega.Equal(v1alpha1.GraphStateSuccessful), "the graph is ready")

	// A reconcile with nothing new, by an operator that starts afresh,
	// writes nothing: the picker is not rolled, the pool not rewritten.
	op.Stop()
	op = env.StartControllers(ctx, t)
	from := time.Now()
	await.New(t).Consistently(func() []string {
		return op.WritesIn(ns, from, time.Now())
	}).WithTimeout(3*time.Second).Should(gomega.BeEmpty(), "writes of a reconcile with nothing new")

	// A new inline configuration rolls the picker: its pod template changes.
	picker := &appsv1.Deployment{}
	pickerKey := client.ObjectKey{Namespace: ns, Name: "qwen-epp"}
	if err := env.Client.Get(ctx, pickerKey, picker); err != nil {
		t.Fatal(err)
	}
	before := picker.Spec.Template.Annotations[render.AnnotationEPPConfigHash]
	if before == "" {
		t.Fatalf("the picker's pod template has no %s: %v", render.AnnotationEPPConfigHash, picker.Spec.Template.Annotations)
	}
	patch := client.MergeFrom(dgd.DeepCopy())
	dgd.Spec.Services["Epp"].EPPConfig = pickerConfig("random-picker")
	if err := env.Client.Patch(ctx, dgd, patch); err != nil {
		t.Fatal(err)
	}
	await.New(t).Eventually(func() error {
		cm := &corev1.ConfigMap{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "qwen-epp-config"}, cm); err != nil {
			return err
		}
		if !strings.Contains(cm.Data[render.EPPConfigKey], "random-picker") {
			return fmt.Errorf("configuration %q", cm.Data[render.EPPConfigKey])
		}
		if err := env.Client.Get(ctx, pickerKey, picker); err != nil {
			return err
		}
		if h := picker.Spec.Template.Annotations[render.AnnotationEPPConfigHash]; h == before || h == "" {
			return fmt.Errorf("the picker's pod template has %s %q", render.AnnotationEPPConfigHash, h)
		}
		return nil
	}).Should(gomega.Succeed(), "the new configuration written and the picker's pod template changed")

	// The pool goes with the picker, and so does the condition.
	patch = client.MergeFrom(dgd.DeepCopy())
	dgd.Spec.Services["Epp"].EPPConfig = nil
	if err := env.Client.Patch(ctx, dgd, patch); err != nil {
		t.Fatal(err)
	}
	await.New(t).Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, poolKey, pool))
	}).Should(gomega.BeTrue(), "the pool deleted")
	graphCondition(ctx, t, key, controllers.ConditionInferencePool, false)
}

var cmpIgnoreTime = cmp.FilterPath(func(p cmp.Path) bool {
	return p.Last().String() == ".LastTransitionTime"
}, cmp.Ignore())
