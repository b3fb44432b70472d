// Package enginetest runs the operator, against a real API server, on a
// component whose Deployment an earlier version rendered without the engine
// features its spec sets: what an upgrade keeps, and what the next spec
// change renders; and on graphs with an endpoint picker, without and then
// with the inference extension's InferencePool API. It holds only tests:
// the controllers' own package runs without an API server.
package enginetest

import (
	"context"
	"os"
	"testing"

	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/dynamoctl/dynamo-operator/internal/await"
	"github.com/dynamoctl/dynamo-operator/internal/builders"
	"github.com/dynamoctl/dynamo-operator/internal/testenv"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/controllers"
	"github.com/dynamoctl/dynamo-operator/operator/render"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.UseDevMode(true)))
	os.Exit(testenv.Run(m, func(e *testenv.Env) { env = e }))
}

// After an upgrade from v0.2.1, which accepted gpuMemoryService and
// failover without rendering them, the worker keeps the Deployment v0.2.1
// rendered, its pods untouched, and nothing its new pod template would name
// (the claim template) is created beside it; the component says so. Its
// next spec change renders the engines and the claim.
func TestUpgradeKeepsTheDeploymentWithoutEngineFeaturesUntilTheSpecChanges(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := env.Namespace(t, "engine-upgrade")
	on := &v1alpha1.EnabledSpec{Enabled: true}
	dcd := builders.MakeComponent("llm-worker", ns, builders.MakeService().Type(v1alpha1.ComponentTypeWorker).GPUs(2).
		Image("nvcr.io/nvidia/ai-dynamo/vllm-runtime:0.9.0").Command([]string{"python3", "-m", "dynamo.vllm"}).
		GPUMemoryService(on).Failover(on)).Obj()
	if err := env.Client.Create(ctx, dcd); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(dcd)

	// What v0.2.1 left: the rendering of the service without the engine
	// features, stamped with its renderer and the input it rendered.
	plain := dcd.DeepCopy()
	plain.Spec.GPUMemoryService, plain.Spec.Failover = nil, nil
	old, err := render.Deployment(plain, nil, render.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := env.CreateEarlierRendering(ctx, dcd, old, "v0.2.1"); err != nil {
		t.Fatal(err)
	}
	if err := env.StartDeploymentDriver(ctx, 0); err != nil {
		t.Fatal(err)
	}
	env.StartControllers(ctx, t)

	env.AwaitEarlierRenderingKept(ctx, t, dcd, controllers.ReasonEngineFeaturesAtNextChange, "v0.2.1", "without gpuMemoryService, failover")
	template := client.ObjectKey{Namespace: ns, Name: render.GMSResourceClaimTemplateName(dcd.Name)}
	if err := env.Client.Get(ctx, template, &resourcev1.ResourceClaimTemplate{}); !apierrors.IsNotFound(err) {
		t.Errorf("a ResourceClaimTemplate beside the kept Deployment (get: %v)", err)
	}
	env.ExpectEarlierRenderingUnwritten(ctx, t, old)

	// The next spec change: the engines share the claimed GPUs.
	patch := client.MergeFrom(dcd.DeepCopy())
	dcd.Spec.Envs = append(dcd.Spec.Envs, corev1.EnvVar{Name: "EDITED", Value: "1"})
	if err := env.Client.Patch(ctx, dcd, patch); err != nil {
		t.Fatal(err)
	}
	live := &appsv1.Deployment{}
	await.New(t).Eventually(func() bool {
		return env.Client.Get(ctx, template, &resourcev1.ResourceClaimTemplate{}) == nil && env.Client.Get(ctx, key, live) == nil &&
			render.EngineFieldsNotIn(dcd, &live.Spec.Template.Spec) == nil
	}).Should(gomega.BeTrue(), "the claim template and the engines are rendered")
	await.New(t).Eventually(func() bool {
		return env.Client.Get(ctx, key, dcd) == nil && testenv.WorkloadCurrent(dcd)
	}).Should(gomega.BeTrue(), "the component no longer says a change is pending")
}
