package charttest

import (
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
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
			wantKinds(t, objs, map[string]int{"Deployment": 1, "ServiceAccount": 1, "ClusterRole": 6, "ClusterRoleBinding": 2,
				"Role": 1, "RoleBinding": 1, "Service": 2, "Secret": 1, "Lease": 1,
				"ValidatingWebhookConfiguration": 1, "MutatingWebhookConfiguration": 1, "PodDisruptionBudget": 1})
			// Two replicas, a leader and a standby, one of which a drain
			// must leave running.
			if r := ptr.Deref(deployment(t, objs).Spec.Replicas, 0); r != 2 {
				t.Errorf("replicas %d, want 2", r)
			}
			wantPDB(t, objs, policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(1))})
			// Restricted, with no fixed user (OpenShift assigns one), and
			// replicas spread across nodes.
			spec := deployment(t, objs).Spec.Template.Spec
			if d := cmp.Diff(defaultPodSecurityContext(), spec.SecurityContext); d != "" {
				t.Errorf("pod securityContext (-want +got):\n%s", d)
			}
			for _, c := range append(spec.InitContainers, spec.Containers...) {
				if d := cmp.Diff(defaultContainerSecurityContext(), c.SecurityContext); d != "" {
					t.Errorf("container %s securityContext (-want +got):\n%s", c.Name, d)
				}
			}
			if d := cmp.Diff(defaultAffinity(), spec.Affinity); d != "" {
				t.Errorf("affinity (-want +got):\n%s", d)
			}
			if d := cmp.Diff(defaultSpread(), spec.TopologySpreadConstraints); d != "" {
				t.Errorf("topologySpreadConstraints (-want +got):\n%s", d)
			}
			// Prometheus's scrapes are authorized as kube-rbac-proxy's are.
			reader := find(objs, "ClusterRole", "dynamo-platform-dynamo-operator-"+ns+"-metrics-reader")
			if reader == nil {
				t.Fatal("no metrics-reader ClusterRole")
			}
			wantRules := []any{map[string]any{"nonResourceURLs": []any{"/metrics"}, "verbs": []any{"get"}}}
			if d := cmp.Diff(wantRules, reader.Object["rules"]); d != "" {
				t.Errorf("metrics-reader rules (-want +got):\n%s", d)
			}
			wantArgs(t, args, "--leader-elect=true", "--leader-election-id=dynamo-operator-leader", "--webhook-cert-mode=auto",
				"--webhook-manage-configurations=false", "--leader-election-create-lease=false", "--enable-webhooks=true",
				"--migrate-storage", "--topology-domain-labels="+config.DefaultTopologyDomainLabels,
				"--leader-election-lease-duration=8s", "--leader-election-renew-deadline=6s", "--leader-election-retry-period=1s",
				"--webhook-drain=5s")
			// A stopping pod answers admissions for the drain, then stops
			// well within its grace period.
			if g := ptr.Deref(deployment(t, objs).Spec.Template.Spec.TerminationGracePeriodSeconds, 0); g != 30 {
				t.Errorf("terminationGracePeriodSeconds %d, want 30", g)
			}
			// Nodes are listed to name a topology label no node carries.
			cluster := find(objs, "ClusterRole", "dynamo-platform-dynamo-operator-"+ns+"-cluster")
			if cluster == nil || !strings.Contains(fmt.Sprint(cluster.Object["rules"]), "resources:[nodes] verbs:[list]") {
				t.Errorf("the cluster-scoped ClusterRole grants no list on nodes: %v", cluster)
			}
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
				// The cluster-scoped extras and the metrics reader.
				wantKinds(t, objs, map[string]int{"ClusterRole": 2, "ClusterRoleBinding": 1, "Role": 2, "RoleBinding": 2})
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
		{name: "hybrid second release as docs/tasks/hybrid.md installs it", set: []string{"dynamo-operator.namespaceRestriction.enabled=true",
			"dynamo-operator.controllerManager.manager.image.tag=v2.0.0-beta"},
			check: func(t *testing.T, ns string, objs []*unstructured.Unstructured, args []string) {
				// The marker Lease's holderIdentity is the operator version.
				wantArgs(t, args, "--operator-version=v2.0.0-beta")
				if img := managerContainer(t, objs)["image"]; img != "ghcr.io/dynamoctl/dynamo-operator:v2.0.0-beta" {
					t.Errorf("image %v", img)
				}
			}},
		{name: "webhooks off, metrics off (namespace admin)", set: []string{"dynamo-operator.namespaceRestriction.enabled=true",
			"dynamo-operator.webhook.enabled=false", "dynamo-operator.metricsService.enabled=false",
			"dynamo-operator.topology.checkNodeLabels=false"},
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
				if r := find(objs, "ClusterRole", "dynamo-platform-dynamo-operator-"+ns+"-metrics-reader"); r != nil {
					t.Error("metrics-reader ClusterRole rendered with metrics off")
				}
			}},
		{name: "metrics with the Prometheus Operator", set: []string{"--api-versions=monitoring.coreos.com/v1"},
			check: func(t *testing.T, ns string, objs []*unstructured.Unstructured, args []string) {
				wantKinds(t, objs, map[string]int{"ServiceMonitor": 1})
				wantArgs(t, args, "--metrics-bind-address=:8443", "--metrics-secure=true")
			}},
		{name: "one replica: no PodDisruptionBudget, which would block every drain", set: []string{"dynamo-operator.controllerManager.replicas=1"},
			check: func(t *testing.T, ns string, objs []*unstructured.Unstructured, args []string) {
				if r, _, _ := unstructured.NestedFieldNoCopy(find(objs, "Deployment", "").Object, "spec", "replicas"); fmt.Sprint(r) != "1" {
					t.Errorf("replicas %v", r)
				}
				wantArgs(t, args, "--leader-elect=true")
				wantKinds(t, objs, map[string]int{"PodDisruptionBudget": 0})
			}},
		{name: "a longer drain, within a longer grace period", set: []string{"dynamo-operator.webhook.drainSeconds=20",
			"dynamo-operator.controllerManager.terminationGracePeriodSeconds=45"},
			check: func(t *testing.T, ns string, objs []*unstructured.Unstructured, args []string) {
				wantArgs(t, args, "--webhook-drain=20s")
				if g := ptr.Deref(deployment(t, objs).Spec.Template.Spec.TerminationGracePeriodSeconds, 0); g != 45 {
					t.Errorf("terminationGracePeriodSeconds %d, want 45", g)
				}
			}},
		{name: "faster fail-over", set: []string{"dynamo-operator.controllerManager.leaderElection.leaseDuration=4s",
			"dynamo-operator.controllerManager.leaderElection.renewDeadline=3s", "dynamo-operator.controllerManager.leaderElection.retryPeriod=500ms"},
			check: func(t *testing.T, ns string, objs []*unstructured.Unstructured, args []string) {
				wantArgs(t, args, "--leader-election-lease-duration=4s", "--leader-election-renew-deadline=3s", "--leader-election-retry-period=500ms")
			}},
		{name: "three replicas, PodDisruptionBudget by maxUnavailable", set: []string{"dynamo-operator.controllerManager.replicas=3",
			"dynamo-operator.controllerManager.podDisruptionBudget.maxUnavailable=1"},
			check: func(t *testing.T, ns string, objs []*unstructured.Unstructured, args []string) {
				wantPDB(t, objs, policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromInt32(1))})
			}},
		{name: "two replicas, PodDisruptionBudget off", set: []string{"dynamo-operator.controllerManager.replicas=2",
			"dynamo-operator.controllerManager.podDisruptionBudget.enabled=false"},
			check: func(t *testing.T, ns string, objs []*unstructured.Unstructured, args []string) {
				wantKinds(t, objs, map[string]int{"PodDisruptionBudget": 0})
			}},
		{name: "one replica, PodDisruptionBudget asked for", set: []string{"dynamo-operator.controllerManager.replicas=1",
			"dynamo-operator.controllerManager.podDisruptionBudget.enabled=true",
			"--set-string=dynamo-operator.controllerManager.podDisruptionBudget.minAvailable=50%"},
			check: func(t *testing.T, ns string, objs []*unstructured.Unstructured, args []string) {
				wantPDB(t, objs, policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromString("50%"))})
			}},
		{name: "an existing ServiceAccount", set: []string{"dynamo-operator.serviceAccount.create=false",
			"dynamo-operator.serviceAccount.name=platform-operator"},
			check: func(t *testing.T, ns string, objs []*unstructured.Unstructured, args []string) {
				wantKinds(t, objs, map[string]int{"ServiceAccount": 0})
				if got := deployment(t, objs).Spec.Template.Spec.ServiceAccountName; got != "platform-operator" {
					t.Errorf("pod serviceAccountName %q", got)
				}
				for _, o := range objs {
					if !strings.HasSuffix(o.GetKind(), "Binding") {
						continue
					}
					want := []any{map[string]any{"kind": "ServiceAccount", "name": "platform-operator", "namespace": ns}}
					if d := cmp.Diff(want, o.Object["subjects"]); d != "" {
						t.Errorf("%s %s subjects (-want +got):\n%s", o.GetKind(), o.GetName(), d)
					}
				}
			}},
		{name: "labels and annotations", set: []string{"dynamo-operator.commonLabels.team=inference",
			"dynamo-operator.controllerManager.podLabels.cost-center=ml", "dynamo-operator.controllerManager.podAnnotations.owner=platform",
			"dynamo-operator.serviceAccount.annotations.role=operator", "--api-versions=monitoring.coreos.com/v1"},
			check: func(t *testing.T, ns string, objs []*unstructured.Unstructured, args []string) {
				for _, o := range objs {
					if o.GetLabels()["team"] != "inference" {
						t.Errorf("%s %s lacks the common label: %v", o.GetKind(), o.GetName(), o.GetLabels())
					}
				}
				tmpl := deployment(t, objs).Spec.Template
				wantLabels := map[string]string{"app.kubernetes.io/name": "dynamo-operator", "app.kubernetes.io/instance": "dynamo-platform",
					"app.kubernetes.io/version": chartAppVersion(t), "team": "inference", "cost-center": "ml"}
				if d := cmp.Diff(wantLabels, tmpl.Labels); d != "" {
					t.Errorf("pod labels (-want +got):\n%s", d)
				}
				wantAnnotations := map[string]string{"kubectl.kubernetes.io/default-container": "manager", "owner": "platform"}
				if d := cmp.Diff(wantAnnotations, tmpl.Annotations); d != "" {
					t.Errorf("pod annotations (-want +got):\n%s", d)
				}
				if got := find(objs, "ServiceAccount", "").GetAnnotations(); got["role"] != "operator" {
					t.Errorf("ServiceAccount annotations %v", got)
				}
			}},
		{name: "security contexts overridden", set: []string{"dynamo-operator.controllerManager.manager.containerSecurityContext.runAsUser=1000",
			"dynamo-operator.controllerManager.podSecurityContext.fsGroup=2000"},
			check: func(t *testing.T, ns string, objs []*unstructured.Unstructured, args []string) {
				// Merged key by key with the defaults.
				spec := deployment(t, objs).Spec.Template.Spec
				wantPod := defaultPodSecurityContext()
				wantPod.FSGroup = ptr.To[int64](2000)
				if d := cmp.Diff(wantPod, spec.SecurityContext); d != "" {
					t.Errorf("pod securityContext (-want +got):\n%s", d)
				}
				wantContainer := defaultContainerSecurityContext()
				wantContainer.RunAsUser = ptr.To[int64](1000)
				for _, c := range append(spec.InitContainers, spec.Containers...) {
					if d := cmp.Diff(wantContainer, c.SecurityContext); d != "" {
						t.Errorf("container %s securityContext (-want +got):\n%s", c.Name, d)
					}
				}
			}},
		{name: "no spreading", set: []string{"dynamo-operator.controllerManager.podAntiAffinity=none",
			"--set-json=dynamo-operator.controllerManager.topologySpreadConstraints=[]"},
			check: func(t *testing.T, ns string, objs []*unstructured.Unstructured, args []string) {
				spec := deployment(t, objs).Spec.Template.Spec
				if spec.Affinity != nil || spec.TopologySpreadConstraints != nil {
					t.Errorf("affinity %v, topologySpreadConstraints %v", spec.Affinity, spec.TopologySpreadConstraints)
				}
			}},
		{name: "own affinity and spreading", set: []string{
			`--set-json=dynamo-operator.controllerManager.affinity={"podAntiAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[{"topologyKey":"kubernetes.io/hostname","labelSelector":{"matchLabels":{"app":"x"}}}]}}`,
			`--set-json=dynamo-operator.controllerManager.topologySpreadConstraints=[{"maxSkew":1,"topologyKey":"topology.kubernetes.io/zone","whenUnsatisfiable":"DoNotSchedule"}]`},
			check: func(t *testing.T, ns string, objs []*unstructured.Unstructured, args []string) {
				spec := deployment(t, objs).Spec.Template.Spec
				// The user's podAntiAffinity replaces the chart's.
				wantAffinity := &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
					RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: "kubernetes.io/hostname",
						LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}}}}}
				if d := cmp.Diff(wantAffinity, spec.Affinity); d != "" {
					t.Errorf("affinity (-want +got):\n%s", d)
				}
				// A constraint without a labelSelector selects the release's pods.
				wantSpread := []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "topology.kubernetes.io/zone",
					WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: selectorLabels}}}
				if d := cmp.Diff(wantSpread, spec.TopologySpreadConstraints); d != "" {
					t.Errorf("topologySpreadConstraints (-want +got):\n%s", d)
				}
			}},
		{name: "image by digest", set: []string{"dynamo-operator.controllerManager.manager.image.digest=" + testDigest},
			check: func(t *testing.T, ns string, objs []*unstructured.Unstructured, args []string) {
				if img := managerContainer(t, objs)["image"]; img != "ghcr.io/dynamoctl/dynamo-operator@"+testDigest {
					t.Errorf("manager image %v", img)
				}
				if img := applyCRDsContainer(objs)["image"]; img != "ghcr.io/dynamoctl/dynamo-operator@"+testDigest {
					t.Errorf("apply-crds image %v", img)
				}
				// The version is still appVersion's.
				wantArgs(t, args, "--operator-version="+chartAppVersion(t))
			}},
		{name: "ServiceMonitor options", set: []string{"--api-versions=monitoring.coreos.com/v1",
			"dynamo-operator.metricsService.serviceMonitor.namespace=monitoring", "dynamo-operator.metricsService.serviceMonitor.interval=15s",
			"dynamo-operator.metricsService.serviceMonitor.labels.release=prometheus",
			`--set-json=dynamo-operator.metricsService.serviceMonitor.relabelings=[{"action":"replace","sourceLabels":["__meta_kubernetes_pod_node_name"],"targetLabel":"node"}]`,
			`--set-json=dynamo-operator.metricsService.serviceMonitor.metricRelabelings=[{"action":"drop","sourceLabels":["__name__"],"regex":"go_gc_.*"}]`},
			check: func(t *testing.T, ns string, objs []*unstructured.Unstructured, args []string) {
				sm := find(objs, "ServiceMonitor", "")
				if sm.GetNamespace() != "monitoring" || sm.GetLabels()["release"] != "prometheus" {
					t.Errorf("ServiceMonitor in %q labelled %v", sm.GetNamespace(), sm.GetLabels())
				}
				want := map[string]any{
					"selector": map[string]any{"matchLabels": map[string]any{"app.kubernetes.io/name": "dynamo-operator",
						"app.kubernetes.io/instance": "dynamo-platform", "app.kubernetes.io/component": "metrics"}},
					// The metrics Service stays in the release namespace.
					"namespaceSelector": map[string]any{"matchNames": []any{ns}},
					"endpoints": []any{map[string]any{
						"port": "https-metrics", "scheme": "https", "path": "/metrics", "interval": "15s",
						"relabelings":       []any{map[string]any{"action": "replace", "sourceLabels": []any{"__meta_kubernetes_pod_node_name"}, "targetLabel": "node"}},
						"metricRelabelings": []any{map[string]any{"action": "drop", "sourceLabels": []any{"__name__"}, "regex": "go_gc_.*"}},
						"bearerTokenFile":   "/var/run/secrets/kubernetes.io/serviceaccount/token",
						"tlsConfig":         map[string]any{"insecureSkipVerify": true},
					}},
				}
				if d := cmp.Diff(want, sm.Object["spec"]); d != "" {
					t.Errorf("ServiceMonitor spec (-want +got):\n%s", d)
				}
			}},
		{name: "every optional value on", set: []string{"--values=" + everythingOn, "--api-versions=monitoring.coreos.com/v1"},
			check: func(t *testing.T, ns string, objs []*unstructured.Unstructured, args []string) {
				wantKinds(t, objs, map[string]int{"PodDisruptionBudget": 1, "ServiceMonitor": 1, "Certificate": 1, "Issuer": 0})
				d := deployment(t, objs)
				if *d.Spec.Replicas != 3 || d.Spec.Template.Spec.Containers[0].Image != "registry.example.com/dynamo-operator@"+testDigest {
					t.Errorf("replicas %d, image %s", *d.Spec.Replicas, d.Spec.Template.Spec.Containers[0].Image)
				}
				if n := len(d.Spec.Template.Spec.TopologySpreadConstraints); n != 2 {
					t.Errorf("%d topology spread constraints, want 2", n)
				}
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
		{[]string{"dynamo-operator.controllerManager.leaderElection.leaseDuration=8"}, "/controllerManager/leaderElection/leaseDuration"},
		{[]string{"etcd.enabled=true"}, "/etcd/enabled"},
		{[]string{"metricsService.enabled=false"}, "additional properties 'metricsService' not allowed"},
		{[]string{"dynamo-operator.webhook.certificateSecret.external=true", "dynamo-operator.webhook.certificateSecret.name=x"},
			"dynamo-operator.webhook.caBundle: required"},
		{[]string{"dynamo-operator.webhook.caBundle=abc"}, "dynamo-operator.webhook.caBundle: only used"},
		{[]string{"dynamo-operator.webhook.enabled=false"}, "dynamo-operator.crds.install: needs webhook.enabled=true"},
		{[]string{"dynamo-operator.webhook.certManager.enabled=true", "dynamo-operator.webhook.certificateSecret.external=true"},
			"exclusive"},
		{[]string{"dynamo-operator.controllerManager.replicas=2", "dynamo-operator.controllerManager.leaderElection.enabled=false"},
			"dynamo-operator.controllerManager.leaderElection.enabled: needs to be true with more than one replica"},
		{[]string{"dynamo-operator.serviceAccount.create=false"}, "dynamo-operator.serviceAccount.name: required"},
		{[]string{"dynamo-operator.webhook.drainSeconds=30"}, "dynamo-operator.webhook.drainSeconds: must be less than controllerManager.terminationGracePeriodSeconds"},
		{[]string{"dynamo-operator.webhook.drainSeconds=5s"}, "/webhook/drainSeconds"},
		{[]string{"dynamo-operator.dockerRegistry.username=x"}, "additional properties 'username' not allowed"},
		{[]string{"dynamo-operator.controllerManager.podAntiAffinity=hard"}, "/controllerManager/podAntiAffinity"},
		{[]string{"dynamo-operator.controllerManager.podDisruptionBudget.enabled=always"}, "/controllerManager/podDisruptionBudget/enabled"},
		{[]string{"dynamo-operator.controllerManager.manager.image.digest=latest"}, "/controllerManager/manager/image/digest"},
	} {
		var args []string
		for _, s := range tc.set {
			args = append(args, "--set", s)
		}
		_, err := h.run(h.templateArgs(chartDir(t), "x", "default", args...)...)
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

// everythingOn sets every optional value at once (make chart-lint lints it too).
const everythingOn = "testdata/everything-on.yaml"

// testDigest is an image digest as registries print them.
const testDigest = "sha256:4c1e8f2b0a6d3e5f7a9b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f"

// selectorLabels select the operator pods of release dynamo-platform.
var selectorLabels = map[string]string{"app.kubernetes.io/name": "dynamo-operator", "app.kubernetes.io/instance": "dynamo-platform"}

// defaultPodSecurityContext is the chart's default pod securityContext.
func defaultPodSecurityContext() *corev1.PodSecurityContext {
	return &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}
}

// defaultContainerSecurityContext is the chart's default container
// securityContext: restricted, with no user of its own.
func defaultContainerSecurityContext() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		ReadOnlyRootFilesystem:   ptr.To(true),
		RunAsNonRoot:             ptr.To(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// defaultAffinity is the chart's preferred anti-affinity by hostname.
func defaultAffinity() *corev1.Affinity {
	return &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 100,
			PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: "kubernetes.io/hostname",
				LabelSelector: &metav1.LabelSelector{MatchLabels: selectorLabels}}}}}}
}

// defaultSpread is the chart's default topology spread: across nodes, never
// leaving a replica unscheduled for it.
func defaultSpread() []corev1.TopologySpreadConstraint {
	return []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "kubernetes.io/hostname",
		WhenUnsatisfiable: corev1.ScheduleAnyway, LabelSelector: &metav1.LabelSelector{MatchLabels: selectorLabels}}}
}

// wantPDB compares the one rendered PodDisruptionBudget's spec with want,
// which selects the release's operator pods.
func wantPDB(t *testing.T, objs []*unstructured.Unstructured, want policyv1.PodDisruptionBudgetSpec) {
	t.Helper()
	want.Selector = &metav1.LabelSelector{MatchLabels: selectorLabels}
	if d := cmp.Diff(want, rendered[policyv1.PodDisruptionBudget](t, objs, "PodDisruptionBudget").Spec); d != "" {
		t.Errorf("PodDisruptionBudget spec (-want +got):\n%s", d)
	}
}
