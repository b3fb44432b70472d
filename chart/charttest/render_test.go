package charttest

import (
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/operator/config"
	"github.com/dynamoctl/dynamo-operator/operator/crdinstall"
)

// notServedHere are kinds whose CRDs (cert-manager, Prometheus Operator) the
// test API server does not have: a dry run could only say "no matches for
// kind". Their rendered fields are checked instead.
var notServedHere = map[string]bool{"Issuer": true, "Certificate": true, "ServiceMonitor": true, "PrometheusRule": true}

// TestValueCombinations renders every documented value combination, checks
// what each must contain, that the operator accepts the Deployment's flags
// and environment, and server-side dry-runs every object against the API
// server with strict field validation.
func TestValueCombinations(t *testing.T) {
	h := newHelm(t)
	ca := base64.StdEncoding.EncodeToString([]byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"))
	cases := []struct {
		name  string
		set   []string
		check func(t *testing.T, ns string, objs []*unstructured.Unstructured, args []string)
	}{
		{name: "cluster-wide defaults", check: func(t *testing.T, ns string, objs []*unstructured.Unstructured, args []string) {
			wantKinds(t, objs, map[string]int{"Deployment": 1, "ServiceAccount": 1, "ClusterRole": 5, "ClusterRoleBinding": 2,
				"Role": 1, "RoleBinding": 1, "Service": 2, "Secret": 1, "Lease": 1,
				"ValidatingWebhookConfiguration": 1, "MutatingWebhookConfiguration": 1})
			wantArgs(t, args, "--leader-elect=true", "--leader-election-id=dynamo-operator-leader", "--webhook-cert-mode=auto",
				"--webhook-manage-configurations=false", "--leader-election-create-lease=false", "--enable-webhooks=true",
				"--migrate-storage")
			if find(objs, "ValidatingWebhookConfiguration", "dynamo-operator-validating") == nil ||
				find(objs, "MutatingWebhookConfiguration", "dynamo-operator-mutating") == nil {
				t.Error("webhook configurations not named dynamo-operator-validating/-mutating")
			}
			if !hasInitContainer(objs) {
				t.Fatal("cluster-wide install must apply the CRDs from an init container")
			}
			// The CRDs' conversion webhook is this release's Service; its
			// operator injects the CA.
			wantArgs(t, argsOf(applyCRDsContainer(objs)), "--webhook-service-name=dynamo-platform-dynamo-operator-webhook",
				"--webhook-cert-mode=auto")
			wantArgs(t, args, "--webhook-inject-crds=true")
			checkCRDRights(t, objs)
			checkChildRights(t, objs)
		}},
		{name: "namespace-scoped", set: []string{"dynamo-operator.namespaceRestriction.enabled=true"},
			check: func(t *testing.T, ns string, objs []*unstructured.Unstructured, args []string) {
				wantKinds(t, objs, map[string]int{"ClusterRole": 1, "ClusterRoleBinding": 1, "Role": 2, "RoleBinding": 2})
				wantArgs(t, args, "--restrict-namespace="+ns, "--leader-election-id=dynamo-operator-leader-"+ns,
					"--namespace-lease-duration=30s", "--namespace-lease-renew-interval=10s")
				v := find(objs, "ValidatingWebhookConfiguration", "dynamo-operator-validating-"+ns)
				if v == nil {
					t.Fatal("namespace-scoped validating configuration not suffixed with the namespace")
				}
				hooks, _, _ := unstructured.NestedSlice(v.Object, "webhooks")
				sel, _, _ := unstructured.NestedString(hooks[0].(map[string]any), "namespaceSelector", "matchLabels", "kubernetes.io/metadata.name")
				if sel != ns {
					t.Errorf("namespaceSelector selects %q, want %q", sel, ns)
				}
				if hasInitContainer(objs) {
					t.Error("a namespace-scoped install must not change cluster-wide CRDs by default")
				}
				wantArgs(t, args, "--webhook-inject-crds=false")
				checkChildRights(t, objs)
			}},
		{name: "namespace-scoped installing the CRDs", set: []string{"dynamo-operator.namespaceRestriction.enabled=true",
			"dynamo-operator.crds.install=true"},
			check: func(t *testing.T, ns string, objs []*unstructured.Unstructured, args []string) {
				// It applies the CRDs but cannot migrate their storage (config
				// refuses --migrate-storage with --restrict-namespace).
				if !hasInitContainer(objs) || slices.Contains(args, "--migrate-storage") {
					t.Errorf("init container %v, args %v", hasInitContainer(objs), args)
				}
				checkCRDRights(t, objs)
			}},
		{name: "hybrid second release from the seeds", set: []string{"dynamo-operator.namespaceRestriction.enabled=true",
			"dynamo-operator.controllerManager.manager.image.tag=v2.0.0-beta"},
			check: func(t *testing.T, ns string, objs []*unstructured.Unstructured, args []string) {
				// The marker Lease's holderIdentity is the operator version.
				wantArgs(t, args, "--operator-version=v2.0.0-beta")
				if img := managerContainer(t, objs)["image"]; img != "ghcr.io/dynamoctl/dynamo-operator:v2.0.0-beta" {
					t.Errorf("image %v", img)
				}
			}},
		{name: "webhooks off, metrics off (namespace admin)", set: []string{"dynamo-operator.namespaceRestriction.enabled=true",
			"dynamo-operator.webhook.enabled=false", "dynamo-operator.metricsService.enabled=false"},
			check: func(t *testing.T, ns string, objs []*unstructured.Unstructured, args []string) {
				for _, o := range objs {
					if o.GetNamespace() == "" {
						t.Errorf("cluster-scoped %s %s rendered; a namespace admin could not install it", o.GetKind(), o.GetName())
					}
				}
				wantArgs(t, args, "--enable-webhooks=false", "--metrics-bind-address=0")
			}},
		{name: "cert-manager self-signed", set: []string{"dynamo-operator.webhook.certManager.enabled=true"},
			check: func(t *testing.T, ns string, objs []*unstructured.Unstructured, args []string) {
				wantKinds(t, objs, map[string]int{"Issuer": 1, "Certificate": 1, "Secret": 0})
				wantArgs(t, args, "--webhook-cert-mode=cert-manager", "--webhook-inject-crds=false")
				// The init container annotates the CRDs for cert-manager.
				wantArgs(t, argsOf(applyCRDsContainer(objs)), "--webhook-cert-mode=cert-manager",
					"--webhook-cert-secret=dynamo-platform-dynamo-operator-webhook-cert")
				v := find(objs, "ValidatingWebhookConfiguration", "")
				if got := v.GetAnnotations()["cert-manager.io/inject-ca-from"]; got != ns+"/dynamo-platform-dynamo-operator-webhook-cert" {
					t.Errorf("inject-ca-from %q", got)
				}
				dns, _, _ := unstructured.NestedStringSlice(find(objs, "Certificate", "").Object, "spec", "dnsNames")
				if !slices.Contains(dns, "dynamo-platform-dynamo-operator-webhook."+ns+".svc") {
					t.Errorf("certificate dnsNames %v", dns)
				}
			}},
		{name: "cert-manager with a ClusterIssuer", set: []string{"dynamo-operator.webhook.certManager.enabled=true",
			"dynamo-operator.webhook.certManager.issuerRef.kind=ClusterIssuer", "dynamo-operator.webhook.certManager.issuerRef.name=corp-ca"},
			check: func(t *testing.T, ns string, objs []*unstructured.Unstructured, args []string) {
				wantKinds(t, objs, map[string]int{"Issuer": 0, "Certificate": 1})
			}},
		{name: "external certificate", set: []string{"dynamo-operator.webhook.certificateSecret.external=true",
			"dynamo-operator.webhook.certificateSecret.name=my-cert", "dynamo-operator.webhook.caBundle=" + ca},
			check: func(t *testing.T, ns string, objs []*unstructured.Unstructured, args []string) {
				wantKinds(t, objs, map[string]int{"Secret": 0})
				wantArgs(t, args, "--webhook-cert-mode=external", "--webhook-cert-secret=my-cert", "--webhook-inject-crds=false")
				wantArgs(t, argsOf(applyCRDsContainer(objs)), "--webhook-cert-mode=external", "--webhook-ca-bundle="+ca)
				hooks, _, _ := unstructured.NestedSlice(find(objs, "MutatingWebhookConfiguration", "").Object, "webhooks")
				if got, _, _ := unstructured.NestedString(hooks[0].(map[string]any), "clientConfig", "caBundle"); got != ca {
					t.Errorf("caBundle %q, want the value", got)
				}
			}},
		{name: "failure policy and timeout", set: []string{"dynamo-operator.webhook.failurePolicy=Ignore", "dynamo-operator.webhook.timeoutSeconds=5"},
			check: func(t *testing.T, ns string, objs []*unstructured.Unstructured, args []string) {
				hooks, _, _ := unstructured.NestedSlice(find(objs, "ValidatingWebhookConfiguration", "").Object, "webhooks")
				for _, h := range hooks {
					if h.(map[string]any)["failurePolicy"] != "Ignore" || fmt.Sprint(h.(map[string]any)["timeoutSeconds"]) != "5" {
						t.Errorf("webhook %v", h)
					}
				}
			}},
		{name: "metrics off", set: []string{"dynamo-operator.metricsService.enabled=false"},
			check: func(t *testing.T, ns string, objs []*unstructured.Unstructured, args []string) {
				wantKinds(t, objs, map[string]int{"Service": 1})
				wantArgs(t, args, "--metrics-bind-address=0")
			}},
		{name: "metrics with the Prometheus Operator", set: []string{"--api-versions=monitoring.coreos.com/v1"},
			check: func(t *testing.T, ns string, objs []*unstructured.Unstructured, args []string) {
				wantKinds(t, objs, map[string]int{"ServiceMonitor": 1})
				wantArgs(t, args, "--metrics-bind-address=:8443", "--metrics-secure=true")
			}},
		{name: "two replicas", set: []string{"dynamo-operator.controllerManager.replicas=2"},
			check: func(t *testing.T, ns string, objs []*unstructured.Unstructured, args []string) {
				if r, _, _ := unstructured.NestedFieldNoCopy(find(objs, "Deployment", "").Object, "spec", "replicas"); fmt.Sprint(r) != "2" {
					t.Errorf("replicas %v", r)
				}
				wantArgs(t, args, "--leader-elect=true")
			}},
		{name: "addresses, env, log level, pull secrets, scheduling", set: []string{
			"dynamo-operator.natsAddr=nats://nats:4222", "dynamo-operator.etcdAddr=http://etcd:2379",
			"dynamo-operator.logLevel=debug", "dynamo-operator.env[0].name=DYNAMO_IMAGE_BUILD_ENGINE",
			"dynamo-operator.env[0].value=kaniko", "dynamo-operator.imagePullSecrets[0].name=docker-imagepullsecret",
			"dynamo-operator.controllerManager.tolerations[0].key=gpu", "dynamo-operator.controllerManager.tolerations[0].operator=Exists",
			"dynamo-operator.controllerManager.leaderElection.id=my-leader", "etcd.enabled=false",
			"dynamo-operator.controllerManager.manager.image.repository=registry.example.com/dynamo-operator",
			"dynamo-operator.controllerManager.manager.image.tag=1.2.3"},
			check: func(t *testing.T, ns string, objs []*unstructured.Unstructured, args []string) {
				wantArgs(t, args, "--natsAddr=nats://nats:4222", "--etcdAddr=http://etcd:2379", "--leader-election-id=my-leader")
				if find(objs, "Lease", "my-leader") == nil {
					t.Error("the election Lease does not follow leaderElection.id")
				}
				spec := find(objs, "Deployment", "").Object["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
				if spec["imagePullSecrets"] == nil || spec["tolerations"] == nil {
					t.Errorf("pull secrets or tolerations missing: %v", spec)
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ns := env.Namespace(t, "chart")
			var flags []string
			for _, s := range tc.set {
				if strings.HasPrefix(s, "--") {
					flags = append(flags, s)
				} else {
					flags = append(flags, "--set", s)
				}
			}
			objs := h.template("dynamo-platform", ns, flags...)
			checkRestricted(t, objs)
			checkNoWildcards(t, objs)
			args := containerArgs(t, objs)
			if _, err := config.Parse(args, containerEnv(t, objs, ns)); err != nil {
				t.Errorf("the operator refuses the chart's flags: %v", err)
			}
			if init := applyCRDsContainer(objs); init != nil {
				if _, err := config.Parse(argsOf(init), envOf(init, ns)); err != nil {
					t.Errorf("the operator refuses the init container's flags: %v", err)
				}
			}
			tc.check(t, ns, objs, args)
			dryRun(t, objs)
		})
	}
}

// TestInvalidValuesRefused: mistyped or contradictory values fail the
// install with a message naming the value.
func TestInvalidValuesRefused(t *testing.T) {
	h := newHelm(t)
	for _, tc := range []struct {
		set  []string
		want string
	}{
		{[]string{"dynamo-operator.namespaceRestriction.enable=true"}, "additional properties 'enable' not allowed"},
		{[]string{"dynamo-operator.controllerManager.manager.image.tagg=x"}, "additional properties 'tagg' not allowed"},
		{[]string{"dynamo-operator.webhook.failurePolicy=fail"}, "/webhook/failurePolicy"},
		{[]string{"dynamo-operator.controllerManager.replicas=two"}, "/controllerManager/replicas"},
		{[]string{"dynamo-operator.namespaceRestriction.lease.duration=30"}, "/namespaceRestriction/lease/duration"},
		{[]string{"etcd.enabled=true"}, "/etcd/enabled"},
		{[]string{"metricsService.enabled=false"}, "additional properties 'metricsService' not allowed"},
		{[]string{"dynamo-operator.webhook.certificateSecret.external=true", "dynamo-operator.webhook.certificateSecret.name=x"},
			"dynamo-operator.webhook.caBundle: required"},
		{[]string{"dynamo-operator.webhook.caBundle=abc"}, "dynamo-operator.webhook.caBundle: only used"},
		{[]string{"dynamo-operator.webhook.enabled=false"}, "dynamo-operator.crds.install: needs webhook.enabled=true"},
		{[]string{"dynamo-operator.webhook.certManager.enabled=true", "dynamo-operator.webhook.certificateSecret.external=true"},
			"exclusive"},
	} {
		var args []string
		for _, s := range tc.set {
			args = append(args, "--set", s)
		}
		_, err := h.run(append([]string{"template", "x", chartDir(t)}, args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("--set %v: got %v, want an error containing %q", tc.set, err, tc.want)
		}
	}
}

func wantKinds(t *testing.T, objs []*unstructured.Unstructured, want map[string]int) {
	t.Helper()
	got := kinds(objs)
	for k, n := range want {
		if got[k] != n {
			t.Errorf("%d %s rendered, want %d (all: %v)", got[k], k, n, got)
		}
	}
}

func wantArgs(t *testing.T, args []string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !slices.Contains(args, w) {
			t.Errorf("manager args lack %s: %v", w, args)
		}
	}
}

func hasInitContainer(objs []*unstructured.Unstructured) bool {
	return applyCRDsContainer(objs) != nil
}

// applyCRDsContainer is the init container that applies the CRDs
// (dynamo-operator --apply-crds ...), or nil.
func applyCRDsContainer(objs []*unstructured.Unstructured) map[string]any {
	ics, _, _ := unstructured.NestedSlice(find(objs, "Deployment", "").Object, "spec", "template", "spec", "initContainers")
	for _, c := range ics {
		m := c.(map[string]any)
		if m["name"] == "apply-crds" && slices.Equal(m["command"].([]any), []any{"/dynamo-operator"}) &&
			slices.Contains(argsOf(m), "--apply-crds") {
			return m
		}
	}
	return nil
}

// containerEnv resolves the manager's environment as the kubelet would
// (POD_NAMESPACE from the pod's namespace).
func containerEnv(t *testing.T, objs []*unstructured.Unstructured, ns string) func(string) (string, bool) {
	t.Helper()
	return envOf(managerContainer(t, objs), ns)
}

// envOf resolves container c's environment in namespace ns.
func envOf(c map[string]any, ns string) func(string) (string, bool) {
	vars := map[string]string{}
	envs, _ := c["env"].([]any)
	for _, e := range envs {
		m := e.(map[string]any)
		if v, ok := m["value"].(string); ok {
			vars[m["name"].(string)] = v
		} else if p, _, _ := unstructured.NestedString(m, "valueFrom", "fieldRef", "fieldPath"); p == "metadata.namespace" {
			vars[m["name"].(string)] = ns
		}
	}
	return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
}

// checkRestricted: every container meets the restricted Pod Security Standard.
func checkRestricted(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	spec, _, _ := unstructured.NestedMap(find(objs, "Deployment", "").Object, "spec", "template", "spec")
	if nonRoot, _, _ := unstructured.NestedBool(spec, "securityContext", "runAsNonRoot"); !nonRoot {
		t.Error("pod securityContext.runAsNonRoot is not true")
	}
	var all []any
	for _, f := range []string{"containers", "initContainers"} {
		cs, _, _ := unstructured.NestedSlice(spec, f)
		all = append(all, cs...)
	}
	for _, c := range all {
		sc, _, _ := unstructured.NestedMap(c.(map[string]any), "securityContext")
		ro, _, _ := unstructured.NestedBool(sc, "readOnlyRootFilesystem")
		esc, found, _ := unstructured.NestedBool(sc, "allowPrivilegeEscalation")
		drop, _, _ := unstructured.NestedStringSlice(sc, "capabilities", "drop")
		seccomp, _, _ := unstructured.NestedString(sc, "seccompProfile", "type")
		if !ro || !found || esc || !slices.Equal(drop, []string{"ALL"}) || seccomp != "RuntimeDefault" {
			t.Errorf("container %v is not restricted: %v", c.(map[string]any)["name"], sc)
		}
	}
}

// checkNoWildcards: least privilege, never "*".
func checkNoWildcards(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() != "Role" && o.GetKind() != "ClusterRole" {
			continue
		}
		rules, _, _ := unstructured.NestedSlice(o.Object, "rules")
		for _, r := range rules {
			for _, f := range []string{"apiGroups", "resources", "verbs", "resourceNames"} {
				vals, _, _ := unstructured.NestedStringSlice(r.(map[string]any), f)
				if slices.Contains(vals, "*") {
					t.Errorf("%s %s: %s contains *", o.GetKind(), o.GetName(), f)
				}
			}
		}
	}
}

// dryRun server-side applies every object with dryRun=All, so the API
// server validates it (schema, strict fields, RBAC escalation rules)
// without storing it.
func dryRun(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	for _, o := range objs {
		if notServedHere[o.GetKind()] {
			continue
		}
		if ns := o.GetNamespace(); ns != "" {
			if err := env.EnsureNamespace(context.Background(), ns); err != nil {
				t.Fatal(err)
			}
		}
		u := o.DeepCopy()
		if err := env.Client.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(u),
			client.FieldOwner("chart-test"), client.ForceOwnership, client.DryRunAll); err != nil {
			t.Errorf("server-side dry run of %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
}

// checkCRDRights: the init container applies every CRD the operator embeds
// (crds/), so the chart's get/patch-by-name rule must name each of them;
// the operator watches and patches (caBundle) those that convert by
// webhook, and the storage migration (--migrate-storage) patches the
// status of each.
func checkCRDRights(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	all, err := crdinstall.Names()
	if err != nil {
		t.Fatal(err)
	}
	converted, err := crdinstall.ConvertedNames()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{"customresourcedefinitions get,patch": all, "customresourcedefinitions get,list,watch,patch": converted}
	if slices.Contains(containerArgs(t, objs), "--migrate-storage") {
		want["customresourcedefinitions/status patch"] = all
	}
	got := map[string][]string{}
	for _, o := range objs {
		if o.GetKind() != "ClusterRole" {
			continue
		}
		rules, _, _ := unstructured.NestedSlice(o.Object, "rules")
		for _, r := range rules {
			res, _, _ := unstructured.NestedStringSlice(r.(map[string]any), "resources")
			names, _, _ := unstructured.NestedStringSlice(r.(map[string]any), "resourceNames")
			verbs, _, _ := unstructured.NestedStringSlice(r.(map[string]any), "verbs")
			for _, resource := range res {
				if strings.HasPrefix(resource, "customresourcedefinitions") && len(names) > 0 {
					slices.Sort(names)
					got[resource+" "+strings.Join(verbs, ",")] = names
				}
			}
		}
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("ClusterRole rules on CRDs by name, by resource and verbs (-want +got):\n%s", d)
	}
}
