// Package apitest runs the operator's admission webhooks behind a real
// kube-apiserver: the API server calls the operator's own webhook server,
// as configured by the webhook configurations the operator maintains.
package apitest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/onsi/gomega"
	"go.uber.org/zap/zapcore"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/dynamoctl/dynamo-operator/internal/await"
	"github.com/dynamoctl/dynamo-operator/internal/builders"
	"github.com/dynamoctl/dynamo-operator/internal/testenv"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/app"
	"github.com/dynamoctl/dynamo-operator/operator/webhooks"
	"github.com/dynamoctl/dynamo-operator/operator/webhooks/rules"
)

var (
	env *testenv.Env
	op  *testenv.Operator
)

func TestMain(m *testing.M) {
	// Only the operator's errors reach the test output.
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	var err error
	if env, err = testenv.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "testenv: %v\n", err)
		os.Exit(1)
	}
	code := m.Run()
	// The operator goes first: the API server's shutdown waits for the
	// connections its webhook server holds.
	if op != nil {
		op.Stop()
	}
	if certDir != "" {
		_ = os.RemoveAll(certDir)
	}
	if err := env.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "testenv: stopping control plane: %v\n", err)
		code = max(code, 1)
	}
	os.Exit(code)
}

// operator starts the operator with webhooks once for the package; its
// certificates live in certDir, removed by TestMain after it stopped.
var (
	startOnce sync.Once
	certDir   string
	opURL     string // where op serves its webhooks, conversion included
)

func operator(t *testing.T) *testenv.Operator {
	t.Helper()
	startOnce.Do(func() {
		var err error
		if certDir, err = os.MkdirTemp("", "admission-certs-"); err != nil {
			t.Fatal(err)
		}
		args := append(env.WebhookArgsIn(t, certDir), "--operator-version=1.2.3")
		for _, a := range args {
			if p, ok := strings.CutPrefix(a, "--webhook-port="); ok {
				opURL = "https://127.0.0.1:" + p
			}
		}
		o, err := env.NewOperator(args, app.Deps{})
		if err != nil {
			t.Fatal(err)
		}
		if err := o.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		op = o
	})
	if op == nil {
		t.Fatal("operator did not start")
	}
	waitForWebhooks(t, env.Client)
	return op
}

// waitForWebhooks waits until the API server sends graphs to the webhook.
func waitForWebhooks(t *testing.T, c client.Client) {
	t.Helper()
	ns := env.Namespace(t, "wait")
	await.New(t).Eventually(func() error {
		return c.Create(context.Background(), badGraph(ns), client.DryRunAll)
	}).Should(gomega.MatchError(gomega.And(gomega.ContainSubstring("admission webhook"), gomega.ContainSubstring("denied the request"))),
		"the webhook judges a graph")
}

func badGraph(ns string) *v1alpha1.DynamoGraphDeployment {
	return builders.MakeGraph("bad", ns).
		SpecLabel("bad key!", "x").
		Service("my_worker", builders.MakeEmptyService()).
		Service("Worker", builders.MakeEmptyService().
			EnvFromSecret("HF_TOKEN").
			Resources(&v1alpha1.Resources{Limits: &v1alpha1.ResourceItem{GPU: "one"}}).
			VolumeMount("missing", "")).
		Obj()
}

func TestInvalidGraphIsRejectedWithEveryViolation(t *testing.T) {
	operator(t)
	ns := env.Namespace(t, "invalid")
	err := env.Client.Create(context.Background(), badGraph(ns))
	if !apierrors.IsInvalid(err) {
		t.Fatalf("want an Invalid error, got %v", err)
	}
	for _, want := range []string{
		`admission webhook "validate.dynamographdeployments.nvidia.com" denied the request`,
		`spec.services.my_worker: Invalid value: "bad-my_worker"`,
		`spec.services.Worker.envFromSecret: Invalid value: "HF_TOKEN": must be a valid Secret name`,
		`spec.services.Worker.resources.limits.gpu: Invalid value: "one": must be a non-negative integer`,
		`spec.services.Worker.volumeMounts[0].name: Invalid value: "missing": not found in the graph's spec.pvcs`,
		`spec.labels: Invalid value: "bad key!"`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the rejection lacks %q:\n%v", want, err)
		}
	}
	if causes := len(err.(apierrors.APIStatus).Status().Details.Causes); causes != 5 {
		t.Errorf("%d causes, want 5: %v", causes, err)
	}
}

// warnings collects the API server's warning headers.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, text)
}

func TestValidGraphIsDefaultedAndDeprecatedFieldsWarn(t *testing.T) {
	operator(t)
	ns := env.Namespace(t, "valid")
	w := &warnings{}
	cfg := rest.CopyConfig(env.Config)
	cfg.WarningHandler = w
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	dgd := builders.MakeGraph("llm", ns).
		Service("Frontend", builders.MakeEmptyService().Type(v1alpha1.ComponentTypeFrontend)).
		Service("Worker", builders.MakeEmptyService().Replicas(0).Autoscaling(&v1alpha1.Autoscaling{Enabled: true})).
		Obj()
	if err := c.Create(context.Background(), dgd); err != nil {
		t.Fatal(err)
	}
	if r := dgd.Spec.Services["Frontend"].Replicas; r == nil || *r != 1 {
		t.Errorf("Frontend replicas = %v, want 1", r)
	}
	if r := dgd.Spec.Services["Worker"].Replicas; r == nil || *r != 0 {
		t.Errorf("Worker replicas = %v, want 0 as written", r)
	}
	if v := dgd.Annotations[rules.OriginVersionAnnotation]; v != "1.2.3" {
		t.Errorf("origin version %q, want 1.2.3", v)
	}
	w.mu.Lock()
	got := strings.Join(w.msgs, "\n")
	w.mu.Unlock()
	if !strings.Contains(got, "spec.services.Worker.autoscaling: deprecated and has no effect") {
		t.Errorf("warnings %q lack the autoscaling deprecation", got)
	}

	// The origin version is the creator's, not the last updater's. (Patches,
	// not updates, here and below: the controllers write these objects too.)
	patch := client.MergeFrom(dgd.DeepCopy())
	dgd.Annotations[rules.OriginVersionAnnotation] = "0.1.0"
	if err := c.Patch(context.Background(), dgd, patch); err != nil {
		t.Fatal(err)
	}
	if v := dgd.Annotations[rules.OriginVersionAnnotation]; v != "0.1.0" {
		t.Errorf("update rewrote the origin version to %q", v)
	}
}

func TestImmutableFieldsAreRejectedOnUpdate(t *testing.T) {
	operator(t)
	ns := env.Namespace(t, "immutable")
	ctx := context.Background()
	dgd := builders.MakeGraph("llm", ns).
		Backend(v1alpha1.BackendFrameworkVLLM).
		Service("Frontend", builders.MakeEmptyService().Type(v1alpha1.ComponentTypeFrontend)).
		Obj()
	if err := env.Client.Create(ctx, dgd); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(dgd.DeepCopy())
	dgd.Spec.BackendFramework = v1alpha1.BackendFrameworkSGLang
	dgd.Spec.Services["Frontend"].Multinode = &v1alpha1.MultinodeSpec{NodeCount: 2}
	err := env.Client.Patch(ctx, dgd, patch)
	for _, want := range []string{
		`spec.backendFramework: Invalid value: "sglang": field is immutable; delete and recreate the DynamoGraphDeployment to change it`,
		`spec.services.Frontend.multinode: Invalid value: field is immutable: the service was single-node and would become multinode`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("update: want %q, got %v", want, err)
		}
	}

	dm := builders.MakeModel("qwen", ns, "qwen", "Qwen/Qwen3-0.6B").Type("").Obj()
	if err := env.Client.Create(ctx, dm); err != nil {
		t.Fatal(err)
	}
	patch = client.MergeFrom(dm.DeepCopy())
	dm.Spec.BaseModelName = "Qwen/Qwen3-8B"
	if err := env.Client.Patch(ctx, dm, patch); err == nil || !strings.Contains(err.Error(), "spec.baseModelName") ||
		!strings.Contains(err.Error(), "delete and recreate the DynamoModel") {
		t.Errorf("DynamoModel baseModelName change: %v", err)
	}

	dcd := builders.MakeComponent("decode", ns, builders.MakeEmptyService()).DynamoComponent("decode:v1").Obj()
	if err := env.Client.Create(ctx, dcd); err != nil {
		t.Fatal(err)
	}
	patch = client.MergeFrom(dcd.DeepCopy())
	dcd.Spec.DynamoComponent = "decode:v2"
	if err := env.Client.Patch(ctx, dcd, patch); err == nil || !strings.Contains(err.Error(), "spec.dynamoComponent: Invalid value: \"decode:v2\": field is immutable") {
		t.Errorf("DCD dynamoComponent change: %v", err)
	}
}

func TestComponentKindsAreValidated(t *testing.T) {
	operator(t)
	ns := env.Namespace(t, "kinds")
	ctx := context.Background()
	dcd := builders.MakeComponent("decode.v1", ns, builders.MakeEmptyService()).Obj()
	if err := env.Client.Create(ctx, dcd); err == nil || !strings.Contains(err.Error(), "metadata.name: Invalid value: \"decode.v1\"") {
		t.Errorf("DCD with a dotted name: %v", err)
	}
	dc := builders.MakeDynamoComponent("frontend", ns, "frontend:v1").Timeout(-time.Minute).Obj()
	if err := env.Client.Create(ctx, dc); err == nil || !strings.Contains(err.Error(), "spec.imageBuildTimeout") {
		t.Errorf("DynamoComponent with a negative timeout: %v", err)
	}
}

// The operator keeps the CA bundle injected: an edit that removes it is
// undone, and while nothing changes the operator writes nothing.
func TestCABundleIsRestoredAndNotRewritten(t *testing.T) {
	o := operator(t)
	ctx := context.Background()
	name := webhooks.ValidatingConfigurationName("")
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, vwc); err != nil {
		t.Fatal(err)
	}
	bundle := vwc.Webhooks[0].ClientConfig.CABundle
	if len(bundle) == 0 {
		t.Fatal("no CA bundle injected")
	}

	// One write per configuration since the operator started: none repeated
	// while its cache caught up with its own writes.
	configWrites := 0
	for _, w := range o.WritesSince(0) {
		if strings.Contains(w, "webhookconfigurations") {
			configWrites++
		}
	}
	if configWrites != 2 {
		t.Errorf("%d writes of the webhook configurations since start, want 2: %v", configWrites, o.WritesSince(0))
	}

	// Quiet: no writes to configurations or the Secret for two seconds.
	mark := o.Writes()
	time.Sleep(2 * time.Second)
	for _, w := range o.WritesSince(mark) {
		if strings.Contains(w, "webhookconfigurations") || strings.Contains(w, "/secrets/") {
			t.Errorf("the operator wrote while nothing changed: %s", w)
		}
	}

	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, vwc); err != nil {
			return err
		}
		for i := range vwc.Webhooks {
			vwc.Webhooks[i].ClientConfig.CABundle = nil
		}
		return env.Client.Update(ctx, vwc)
	})
	if err != nil {
		t.Fatal(err)
	}
	await.New(t).Eventually(func(g gomega.Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: name}, vwc)).To(gomega.Succeed())
		for _, w := range vwc.Webhooks {
			g.Expect(string(w.ClientConfig.CABundle)).To(gomega.Equal(string(bundle)), "webhook %s", w.Name)
		}
	}).Should(gomega.Succeed(), "the CA bundle is restored")
	waitForWebhooks(t, env.Client)
	fmt.Println("CA bundle restored after being edited away")
}
