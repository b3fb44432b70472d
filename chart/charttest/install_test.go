package charttest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/crds"
	"github.com/dynamoctl/dynamo-operator/internal/await"
	"github.com/dynamoctl/dynamo-operator/internal/builders"
	"github.com/dynamoctl/dynamo-operator/internal/testenv"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/app"
	"github.com/dynamoctl/dynamo-operator/operator/config"
	"github.com/dynamoctl/dynamo-operator/operator/crdinstall"
)

// requestLog records the operator's requests that the API server refused
// (403) and those to one path, to prove what it did and did not do.
type requestLog struct {
	mu        sync.Mutex
	forbidden []string
	requests  []string
}

func (l *requestLog) wrap(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(req *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(req)
			l.mu.Lock()
			defer l.mu.Unlock()
			line := req.Method + " " + req.URL.Path
			if resp != nil {
				line += " " + strconv.Itoa(resp.StatusCode)
				if resp.StatusCode == http.StatusForbidden {
					l.forbidden = append(l.forbidden, line)
				}
			}
			l.requests = append(l.requests, line)
			return resp, err
		})
	})
	return cfg
}

func (l *requestLog) Forbidden() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.forbidden)
}

// Matching returns the requests whose line contains s.
func (l *requestLog) Matching(s string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, r := range l.requests {
		if strings.Contains(r, s) {
			out = append(out, r)
		}
	}
	return out
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// asServiceAccount is a client configuration with exactly the rights of the
// chart's ServiceAccount: the admin impersonates it, as a pod's token would
// authenticate.
func asServiceAccount(ns, name string) *rest.Config {
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + ns + ":" + name,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
	}
	return cfg
}

// startChartOperator runs the operator in-process as the chart's
// Deployment would: its args and environment, authenticated as its
// ServiceAccount. Ports are the only change (free ones, several operators
// share this process; the probes and metrics are not under test here),
// and extra flags, which come last and win.
func startChartOperator(t *testing.T, objs []*unstructured.Unstructured, ns string, log *requestLog, extra ...string) *testenv.Operator {
	t.Helper()
	args := containerArgs(t, objs)
	lookup := containerEnv(t, objs, ns)
	envVars := map[string]string{}
	for _, k := range []string{"POD_NAMESPACE", "DYNAMO_SYSTEM_NAMESPACE", "LOG_LEVEL"} {
		if v, ok := lookup(k); ok {
			envVars[k] = v
		}
	}
	port, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	args = append(args, "--health-probe-bind-address=0", "--metrics-bind-address=0",
		"--webhook-port="+strconv.Itoa(port), "--webhook-cert-dir="+t.TempDir(),
		// Renewals every half second, so the test sees several; a renewal
		// may take seconds on a loaded API server without the leader
		// giving up (the chart's own durations are longer still).
		"--leader-election-lease-duration=15s", "--leader-election-renew-deadline=10s", "--leader-election-retry-period=500ms")
	args = append(args, extra...)
	sa := find(objs, "ServiceAccount", "").GetName()
	op, err := env.NewOperatorWithConfig(log.wrap(asServiceAccount(ns, sa)), args, envVars, app.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	if err := op.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(op.Stop)
	return op
}

// eventually waits through internal/await, the project's one way to wait,
// for cond to hold; an error cond returns is retried and named on failure.
func eventually(t *testing.T, timeout time.Duration, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	ctx := context.Background()
	await.New(t).Eventually(func() error {
		ok, err := cond(ctx)
		if err != nil || ok {
			return err
		}
		return await.ErrNotYet
	}).WithTimeout(timeout).WithPolling(100*time.Millisecond).Should(gomega.Succeed(), what)
}

// TestInstallUpgradeUninstall installs the chart cluster-wide with helm,
// runs the operator with the chart's flags and RBAC, then: a second
// cluster-wide release is refused naming the first, a namespace-scoped one
// coexists, helm upgrade keeps the operator's CA and Lease, and helm
// uninstall leaves nothing of ours but the CRDs.
func TestInstallUpgradeUninstall(t *testing.T) {
	ctx := context.Background()
	h := newHelm(t)
	ns := env.Namespace(t, "dynamo-system")
	release := "dynamo-platform"
	// The webhook Service has no endpoints in this API server's world, so
	// graph writes go through with Ignore; the operator's CA injection and
	// the configurations' lifecycle are what is under test. Two replicas
	// (one runs here) bring the PodDisruptionBudget.
	sets := []string{"--set", "dynamo-operator.webhook.failurePolicy=Ignore", "--set", "dynamo-operator.controllerManager.replicas=2"}
	started := time.Now()
	h.mustRun(append([]string{"install", release, chartDir(t), "--namespace", ns}, sets...)...)
	// A failure half-way leaves no cluster-wide release behind to refuse
	// the next test's (the test's own uninstall comes first otherwise).
	t.Cleanup(func() { _, _ = h.run("uninstall", release, "--namespace", ns, "--wait", "--ignore-not-found") })
	objs := h.template(release, ns, sets...)
	pdb := &policyv1.PodDisruptionBudget{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: release + "-dynamo-operator"}, pdb); err != nil {
		t.Fatalf("the release's PodDisruptionBudget: %v", err)
	}

	log := &requestLog{}
	// The init container's step, with the chart's rights: the CRDs exist
	// (testenv installed them), so this is the upgrade path, patch by name.
	applyCRDsAsChart(t, objs, ns, log)
	stored := storedInV1beta1Too(t)
	startChartOperator(t, objs, ns, log)
	storageMigratedAsChart(t, log, stored)

	// The operator injects its CA into the release's configurations and
	// takes the release's Lease.
	eventually(t, await.Long, "CA bundle injected", func(ctx context.Context) (bool, error) {
		v := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		m := &admissionregistrationv1.MutatingWebhookConfiguration{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: "dynamo-operator-validating"}, v); err != nil {
			return false, nil
		}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: "dynamo-operator-mutating"}, m); err != nil {
			return false, nil
		}
		for _, w := range v.Webhooks {
			if len(w.ClientConfig.CABundle) == 0 {
				return false, nil
			}
		}
		return len(m.Webhooks[0].ClientConfig.CABundle) > 0, nil
	})
	t.Logf("helm install to CA injected: %s", time.Since(started).Round(time.Millisecond))
	lease := &coordinationv1.Lease{}
	eventually(t, await.Long, "leader Lease held", func(ctx context.Context) (bool, error) {
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "dynamo-operator-leader"}, lease); err != nil {
			return false, err
		}
		return lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != "", nil
	})
	secret := &corev1.Secret{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: release + "-dynamo-operator-webhook-cert"}, secret); err != nil {
		t.Fatal(err)
	}
	if len(secret.Data["tls.crt"]) == 0 {
		t.Fatal("the operator did not fill the chart's certificate Secret")
	}
	// The CRDs' conversion webhook is the release's Service, and the
	// operator, with the chart's rights, injects its CA there.
	eventually(t, await.Long, "CA bundle injected into the CRDs", func(ctx context.Context) (bool, error) {
		names, err := crdinstall.ConvertedNames()
		if err != nil || len(names) == 0 {
			return false, fmt.Errorf("CRDs converted by webhook: %v %v", names, err)
		}
		for _, name := range names {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
				return false, err
			}
			cc := crd.Spec.Conversion.Webhook.ClientConfig
			if cc.Service == nil || cc.Service.Namespace != ns || cc.Service.Name != release+"-dynamo-operator-webhook" {
				return false, fmt.Errorf("%s: conversion webhook %+v, want the release's Service", name, cc)
			}
			if string(cc.CABundle) != string(secret.Data["ca.crt"]) {
				return false, nil
			}
		}
		return true, nil
	})

	// A graph reconciles under the chart's ClusterRole.
	graphNS := env.Namespace(t, "graphs")
	graph := builders.MakeGraph("llm", graphNS).Service("Worker", builders.MakeService().GPUs(1)).Obj()
	if err := env.Client.Create(ctx, graph); err != nil {
		t.Fatal(err)
	}
	eventually(t, await.Long, "graph's Deployment created", func(ctx context.Context) (bool, error) {
		list := &appsv1.DeploymentList{}
		if err := env.Client.List(ctx, list, client.InNamespace(graphNS)); err != nil {
			return false, err
		}
		return len(list.Items) > 0, nil
	})

	// A second cluster-wide release is refused, naming the first.
	other := env.Namespace(t, "other")
	_, err := h.run("install", "second", chartDir(t), "--namespace", other)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("by release %q in namespace %q", release, ns)) {
		t.Fatalf("second cluster-wide install: got %v, want a refusal naming %s/%s", err, ns, release)
	}
	// A namespace-scoped release in another namespace coexists.
	local := env.Namespace(t, "local")
	h.mustRun("install", "dynamo-test", chartDir(t), "--namespace", local,
		"--set", "dynamo-operator.namespaceRestriction.enabled=true",
		"--set", "dynamo-operator.controllerManager.manager.image.tag=v2.0.0-beta")
	h.mustRun("uninstall", "dynamo-test", "--namespace", local, "--wait")

	// helm upgrade changing a value keeps the operator's CA and Lease.
	caBefore := string(secret.Data["ca.crt"]) + string(secret.Data["tls.crt"])
	holder := *lease.Spec.HolderIdentity
	h.mustRun(append([]string{"upgrade", release, chartDir(t), "--namespace", ns,
		"--set", "dynamo-operator.webhook.timeoutSeconds=7"}, sets...)...)
	v := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "dynamo-operator-validating"}, v); err != nil {
		t.Fatal(err)
	}
	if *v.Webhooks[0].TimeoutSeconds != 7 || len(v.Webhooks[0].ClientConfig.CABundle) == 0 {
		t.Errorf("after upgrade: timeout %d, caBundle %d bytes", *v.Webhooks[0].TimeoutSeconds, len(v.Webhooks[0].ClientConfig.CABundle))
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(secret), secret); err != nil {
		t.Fatal(err)
	}
	if string(secret.Data["ca.crt"])+string(secret.Data["tls.crt"]) != caBefore {
		t.Error("helm upgrade changed the operator's certificate")
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(lease), lease); err != nil {
		t.Fatal(err)
	}
	if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != holder {
		t.Errorf("helm upgrade changed the Lease holder from %s", holder)
	}

	if f := log.Forbidden(); len(f) > 0 {
		t.Errorf("the operator was refused with the chart's RBAC: %v", f)
	}

	// helm uninstall while the operator still runs (its pod is terminating):
	// the operator keeps trying to renew, and must not bring the Lease back.
	// (From here on its requests are refused: the release's RBAC is gone.)
	h.mustRun("uninstall", release, "--namespace", ns, "--wait")
	uninstalled := len(log.Matching("/leases/dynamo-operator-leader"))
	eventually(t, time.Minute, "operator tried to renew the deleted Lease", func(ctx context.Context) (bool, error) {
		return len(log.Matching("/leases/dynamo-operator-leader")) >= uninstalled+4, nil
	})
	if creates := log.Matching("POST /apis/coordination.k8s.io/v1/namespaces/" + ns + "/leases"); len(creates) > 0 {
		t.Errorf("the operator recreated its Lease after uninstall: %v", creates)
	}

	assertNothingLeft(t, ns, release)
}

// assertNothingLeft lists every kind the chart creates (and the operator
// might) and fails on any of ours that remains.
func assertNothingLeft(t *testing.T, ns, release string) {
	t.Helper()
	ctx := context.Background()
	ours := client.MatchingLabels{"app.kubernetes.io/instance": release}
	lists := map[string]client.ObjectList{
		"ValidatingWebhookConfiguration": &admissionregistrationv1.ValidatingWebhookConfigurationList{},
		"MutatingWebhookConfiguration":   &admissionregistrationv1.MutatingWebhookConfigurationList{},
		"ClusterRole":                    &rbacv1.ClusterRoleList{},
		"ClusterRoleBinding":             &rbacv1.ClusterRoleBindingList{},
	}
	for kind, list := range lists {
		if err := env.Client.List(ctx, list, ours); err != nil {
			t.Fatal(err)
		}
		if n := count(list); n > 0 {
			t.Errorf("%d %s of the release left after uninstall", n, kind)
		}
	}
	for _, name := range []string{"dynamo-operator-validating", "dynamo-operator-mutating"} {
		var obj client.Object = &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if strings.HasSuffix(name, "mutating") {
			obj = &admissionregistrationv1.MutatingWebhookConfiguration{}
		}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, obj); !apierrors.IsNotFound(err) {
			t.Errorf("webhook configuration %s still there after uninstall (err %v)", name, err)
		}
	}
	nsLists := map[string]client.ObjectList{
		"Lease":               &coordinationv1.LeaseList{},
		"Secret":              &corev1.SecretList{},
		"Service":             &corev1.ServiceList{},
		"ServiceAccount":      &corev1.ServiceAccountList{},
		"Deployment":          &appsv1.DeploymentList{},
		"PodDisruptionBudget": &policyv1.PodDisruptionBudgetList{},
		"Role":                &rbacv1.RoleList{},
		"RoleBinding":         &rbacv1.RoleBindingList{},
	}
	for kind, list := range nsLists {
		if err := env.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		for _, name := range names(list) {
			if kind == "ServiceAccount" && name == "default" {
				continue
			}
			t.Errorf("%s %s/%s left after uninstall", kind, ns, name)
		}
	}
	// The CRDs stay, by design.
	if err := env.Client.List(ctx, &v1alpha1.DynamoGraphDeploymentList{}); err != nil {
		t.Errorf("CRDs gone after uninstall: %v", err)
	}
}

func count(list client.ObjectList) int { return len(names(list)) }

func names(list client.ObjectList) []string {
	items, _ := apimeta.ExtractList(list)
	var out []string
	for _, i := range items {
		if a, err := apimeta.Accessor(i); err == nil {
			out = append(out, a.GetName())
		}
	}
	return out
}

// storedInV1beta1Too stores a graph and makes the API server list
// v1beta1 among the graphs' stored versions, as after objects were written
// in v1beta1: the operator's storage migration then runs, with the chart's
// rights. It returns the graph.
func storedInV1beta1Too(t *testing.T) *v1alpha1.DynamoGraphDeployment {
	t.Helper()
	ctx := context.Background()
	graph := builders.MakeGraph("stored", env.Namespace(t, "stored")).Service("Worker", builders.MakeService()).Obj()
	if err := env.Client.Create(ctx, graph); err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: graphsCRD}, crd); err != nil {
		t.Fatal(err)
	}
	crd.Status.StoredVersions = []string{"v1beta1", "v1alpha1"}
	if err := env.Client.Status().Update(ctx, crd); err != nil {
		t.Fatal(err)
	}
	return graph
}

const graphsCRD = "dynamographdeployments.nvidia.com"

// storageMigratedAsChart waits until the operator rewrote the graph and
// trimmed the graphs' storedVersions; a refusal shows in log.Forbidden.
func storageMigratedAsChart(t *testing.T, log *requestLog, graph *v1alpha1.DynamoGraphDeployment) {
	t.Helper()
	eventually(t, await.Long, "the graphs' storedVersions trimmed", func(ctx context.Context) (bool, error) {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: graphsCRD}, crd); err != nil {
			return false, err
		}
		return slices.Equal(crd.Status.StoredVersions, []string{"v1alpha1"}), nil
	})
	for _, want := range []string{
		"PUT /apis/nvidia.com/v1alpha1/namespaces/" + graph.Namespace + "/dynamographdeployments/" + graph.Name + " 200",
		"PATCH /apis/apiextensions.k8s.io/v1/customresourcedefinitions/" + graphsCRD + "/status 200",
	} {
		// Once, unless a pass was retried (e.g. the conversion webhook not
		// serving yet).
		if len(log.Matching(want)) == 0 {
			t.Errorf("the storage migration made no %s: %v", want, log.Matching("nvidia.com"))
		}
	}
}

// applyCRDsAsChart runs what the apply-crds init container runs
// (dynamo-operator --apply-crds with its flags and environment) as the
// chart's ServiceAccount.
func applyCRDsAsChart(t *testing.T, objs []*unstructured.Unstructured, ns string, log *requestLog) {
	t.Helper()
	init := applyCRDsContainer(objs)
	if init == nil {
		t.Fatal("no apply-crds init container")
	}
	o, err := config.Parse(argsOf(init), envOf(init, ns))
	if err != nil {
		t.Fatalf("the operator refuses the init container's flags: %v", err)
	}
	scheme := runtime.NewScheme()
	if err := errors.Join(apiextensionsv1.AddToScheme(scheme), corev1.AddToScheme(scheme)); err != nil {
		t.Fatal(err)
	}
	sa := find(objs, "ServiceAccount", "").GetName()
	c, err := client.New(log.wrap(asServiceAccount(ns, sa)), client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	conv, err := crdinstall.InstallerConversion(context.Background(), c, o)
	if err != nil {
		t.Fatalf("reading the certificate Secret's CA with the chart's RBAC: %v", err)
	}
	if err := crdinstall.Apply(context.Background(), c, 30*time.Second, conv); err != nil {
		t.Fatalf("applying the CRDs with the chart's RBAC: %v", err)
	}
	// The release's Service has no endpoints here: conversion goes back to
	// the test environment's own when the test ends.
	t.Cleanup(func() {
		if err := env.ApplyCRDs(context.Background(), env.Conversion()); err != nil {
			t.Errorf("routing conversion back to the test environment: %v", err)
		}
	})
	// One server-side apply per CRD the binary embeds, none refused.
	want, err := fs.Glob(crds.FS, "*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := log.Matching("PATCH /apis/apiextensions.k8s.io/v1/customresourcedefinitions/"); len(got) != len(want) {
		t.Errorf("want %d CRD patches (%v), got %v", len(want), want, log.Matching("customresourcedefinitions"))
	}
}
