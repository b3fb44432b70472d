package charttest

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/internal/await"
	"github.com/dynamoctl/dynamo-operator/internal/builders"
)

// TestNamespaceAdminInstallsNamespaceScoped: a user who is only admin of
// one namespace installs a namespace-scoped operator (webhooks and metrics
// off: both need cluster-scoped objects) with helm, and the operator,
// holding only the rights the chart gave its ServiceAccount, reconciles a
// graph there without a single forbidden request.
//
// What a cluster administrator provides first: the CRDs (testenv installs
// them) and the chart's ClusterRoles aggregated into admin/edit/view,
// which a cluster-wide release renders (rbac.aggregateToDefaultRoles); a
// namespace admin cannot grant what it does not hold.
func TestNamespaceAdminInstallsNamespaceScoped(t *testing.T) {
	ctx := context.Background()
	h := newHelm(t)
	ns := env.Namespace(t, "team")
	const user = "alice"

	for _, o := range h.template("platform-roles", "dynamo-system") {
		if o.GetKind() == "ClusterRole" && strings.Contains(o.GetName(), "-aggregate-to-") {
			apply(t, o)
			t.Cleanup(func() { _ = env.Client.Delete(context.Background(), o) })
		}
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "alice-admin", Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "admin"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: user}},
	}
	if err := env.Client.Create(ctx, binding); err != nil {
		t.Fatal(err)
	}
	eventually(t, await.Long, "nvidia.com aggregated into admin", func(ctx context.Context) (bool, error) {
		admin := &rbacv1.ClusterRole{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: "admin"}, admin); err != nil {
			return false, err
		}
		for _, r := range admin.Rules {
			for _, res := range r.Resources {
				if res == "dynamographdeployments/status" {
					return true, nil
				}
			}
		}
		return false, nil
	})

	sets := []string{
		"--set", "dynamo-operator.namespaceRestriction.enabled=true",
		"--set", "dynamo-operator.webhook.enabled=false",
		"--set", "dynamo-operator.metricsService.enabled=false",
		"--set", "dynamo-operator.topology.checkNodeLabels=false",
		"--set", "dynamo-operator.controllerManager.manager.image.tag=v2.0.0-beta",
	}
	started := time.Now()
	h.mustRun(append([]string{"install", "dynamo-test", chartDir(t), "--namespace", ns, "--kube-as-user", user}, sets...)...)
	t.Logf("helm install as namespace admin: %s", time.Since(started).Round(time.Millisecond))
	objs := h.template("dynamo-test", ns, sets...)
	log := &requestLog{}
	op := startChartOperator(t, objs, ns, log)

	// The marker Lease names the operator version, as docs/tasks/hybrid.md's
	// example shows with kubectl get lease.
	eventually(t, await.Long, "marker Lease held by v2.0.0-beta", func(ctx context.Context) (bool, error) {
		l := &coordinationv1.Lease{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "dynamo-operator-namespace-scope"}, l); err != nil {
			return false, nil
		}
		return l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity == "v2.0.0-beta", nil
	})

	// Alice creates a graph; the operator reconciles it into a Deployment.
	aliceCfg := rest.CopyConfig(env.Config)
	aliceCfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
	alice, err := client.New(aliceCfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	graph := builders.MakeGraph("llm", ns).Service("Worker", builders.MakeService().GPUs(1)).Obj()
	if err := alice.Create(ctx, graph); err != nil {
		t.Fatal(err)
	}
	eventually(t, await.Long, "graph's Deployment created", func(ctx context.Context) (bool, error) {
		list := &appsv1.DeploymentList{}
		if err := env.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
			return false, err
		}
		for _, d := range list.Items {
			if d.Name != "dynamo-test-dynamo-operator" {
				return true, nil
			}
		}
		return false, nil
	})
	if f := log.Forbidden(); len(f) > 0 {
		t.Errorf("the namespace-scoped operator was refused with the chart's RBAC: %v", f)
	}

	// Alice uninstalls; the operator's pod stops; nothing of the release stays.
	if err := alice.Delete(ctx, graph); err != nil {
		t.Fatal(err)
	}
	h.mustRun("uninstall", "dynamo-test", "--namespace", ns, "--kube-as-user", user, "--wait")
	op.Stop()
	assertNothingLeftExcept(t, ns, "dynamo-test", "alice-admin")
}

// assertNothingLeftExcept is assertNothingLeft in a namespace that also
// holds the test's own RoleBinding and the graph's children, which the
// garbage collector removes after the graph.
func assertNothingLeftExcept(t *testing.T, ns, release, binding string) {
	t.Helper()
	ctx := context.Background()
	rb := &rbacv1.RoleBinding{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: binding}, rb); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Delete(ctx, rb); err != nil {
		t.Fatal(err)
	}
	eventually(t, await.Long, "graph children collected", func(ctx context.Context) (bool, error) {
		deployments, services := &appsv1.DeploymentList{}, &corev1.ServiceList{}
		if err := env.Client.List(ctx, deployments, client.InNamespace(ns)); err != nil {
			return false, err
		}
		if err := env.Client.List(ctx, services, client.InNamespace(ns)); err != nil {
			return false, err
		}
		return len(deployments.Items) == 0 && len(services.Items) == 0, nil
	})
	assertNothingLeft(t, ns, release)
}

// apply server-side applies o as the cluster administrator.
func apply(t *testing.T, o *unstructured.Unstructured) {
	t.Helper()
	if err := env.Client.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(o.DeepCopy()),
		client.FieldOwner("chart-test"), client.ForceOwnership); err != nil {
		t.Fatalf("applying %s %s: %v", o.GetKind(), o.GetName(), err)
	}
}
