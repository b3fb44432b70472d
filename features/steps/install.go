package steps

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/cucumber/godog"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// chart/README.md's cluster-wide install is helm install dynamo-platform
// <chart> --namespace dynamo-system --create-namespace (ClusterRelease,
// ClusterNamespace). The simulator suite's own operator is this release.
const (
	// ChartPath is the dynamo-platform chart, relative to the repository.
	ChartPath = "chart/dynamo-platform"
	// helmTimeout bounds one helm command that waits (--wait).
	helmTimeout = "3m"
)

// install is a scenario's helm state: the releases it installed (removed
// when it ends) and whether it uninstalled the suite's release (installed
// again when it ends, so later scenarios keep their operator).
type install struct {
	releases              map[string]string // release name -> namespace
	clusterReleaseRemoved bool
	// refusal is the output of the last refused helm command.
	refusal string
	// deletedLeader is the pod deleted as the leader, and when.
	deletedLeader string
	deletedAt     time.Time
}

func registerInstallSteps(sc *godog.ScenarioContext, w *world) {
	sc.Step(`^I install the operator as chart/README.md says$`, w.installAsChartReadme)
	sc.Step(`^I install the chart as `+quoted+` in this namespace$`, func(ctx context.Context, name string) error {
		return w.installChart(ctx, name, "")
	})
	sc.Step(`^I install the chart as `+quoted+` in this namespace with `+quoted+`$`, w.installChart)
	sc.Step(`^installing the chart as `+quoted+` in this namespace is refused with a message containing `+quoted+`$`, unquote2(w.installRefused))
	sc.Step(`^I upgrade the release `+quoted+` with `+quoted+`$`, w.upgradeRelease)
	sc.Step(`^I uninstall the release `+quoted+`$`, w.uninstallRelease)
	sc.Step(`^the webhooks of the release `+quoted+` are called through its Service `+quoted+`$`, w.webhooksThroughService)
	sc.Step(`^nothing of the release `+quoted+` is left in the cluster but the CRDs$`, w.nothingLeft)
}

// runHelm runs the pinned helm against the suite's cluster and returns its
// combined output.
func (w *world) runHelm(ctx context.Context, args ...string) (string, error) {
	if w.cluster.Helm == "" || w.cluster.Kubeconfig == "" {
		return "", fmt.Errorf("this suite has no helm or kubeconfig (Cluster.Helm, Cluster.Kubeconfig): run it with make features-sim")
	}
	cmd := exec.CommandContext(ctx, w.cluster.Helm, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+w.cluster.Kubeconfig)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("helm %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

func (w *world) record(name, namespace string) {
	if w.install.releases == nil {
		w.install.releases = map[string]string{}
	}
	w.install.releases[name] = namespace
}

// releaseNamespace is where a release of this scenario (or the suite's)
// lives.
func (w *world) releaseNamespace(name string) string {
	if ns, ok := w.install.releases[name]; ok {
		return ns
	}
	if name == ClusterRelease {
		return ClusterNamespace
	}
	return w.namespace
}

// installAsChartReadme runs chart/README.md's cluster-wide command as written (no --wait: the next
// step waits for the operator pod, as a user would).
func (w *world) installAsChartReadme(ctx context.Context) error {
	start := time.Now()
	if _, err := w.runHelm(ctx, "install", ClusterRelease, w.resolve(ChartPath), "--namespace", ClusterNamespace, "--create-namespace"); err != nil {
		return err
	}
	w.install.clusterReleaseRemoved = false
	w.record(ClusterRelease, ClusterNamespace)
	replicas, err := w.chartDefaultReplicas()
	if err != nil {
		return err
	}
	if err := w.eventually(ctx, "the operator pods of "+ClusterRelease+" Ready", func() error { return w.readyPods(ctx, ClusterRelease, replicas) }); err != nil {
		return err
	}
	fmt.Printf("    helm install (chart/README.md's command) to %d operator pods Ready: %.1fs\n", replicas, time.Since(start).Seconds())
	return nil
}

// chartDefaultReplicas is the operator's replica count the chart installs
// by default (its subchart's controllerManager.replicas).
func (w *world) chartDefaultReplicas() (int, error) {
	path := w.resolve(ChartPath + "/charts/dynamo-operator/values.yaml")
	raw, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	var values struct {
		ControllerManager struct {
			Replicas int `json:"replicas"`
		} `json:"controllerManager"`
	}
	if err := yaml.Unmarshal(raw, &values); err != nil {
		return 0, fmt.Errorf("reading %s: %w", path, err)
	}
	if values.ControllerManager.Replicas < 1 {
		return 0, fmt.Errorf("%s sets no controllerManager.replicas", path)
	}
	return values.ControllerManager.Replicas, nil
}

func (w *world) installChart(ctx context.Context, name, sets string) error {
	args := []string{"install", name, w.resolve(ChartPath), "--namespace", w.namespace, "--wait", "--timeout", helmTimeout}
	args = append(args, strings.Fields(sets)...)
	w.record(name, w.namespace)
	if _, err := w.runHelm(ctx, args...); err != nil {
		return err
	}
	return nil
}

func (w *world) installRefused(ctx context.Context, name, text string) error {
	out, err := w.runHelm(ctx, "install", name, w.resolve(ChartPath), "--namespace", w.namespace)
	if err == nil {
		w.record(name, w.namespace)
		return fmt.Errorf("helm install %s was not refused:\n%s", name, out)
	}
	if !strings.Contains(out, text) {
		return fmt.Errorf("helm install %s was refused, but not with %q:\n%s", name, text, out)
	}
	w.install.refusal = out
	return nil
}

func (w *world) upgradeRelease(ctx context.Context, name, sets string) error {
	args := []string{"upgrade", name, w.resolve(ChartPath), "--namespace", w.releaseNamespace(name), "--reuse-values", "--wait", "--timeout", helmTimeout}
	_, err := w.runHelm(ctx, append(args, strings.Fields(sets)...)...)
	return err
}

// removals records when a "helm uninstall" step (or a scenario's clean-up)
// began removing a release's operator, by its Deployment: the prefix
// "namespace/deployment-" of every pod it ran, a pod a rollout was still
// terminating included (one the removal's own list of pods no longer
// showed was refused its last Lease request while helm removed the RBAC).
// helm deletes the Deployment and the RBAC in one pass, so a pod shutting
// down may be refused its last requests (releasing the leader Lease); the
// suite's log check reports those apart.
var removals struct {
	sync.Mutex
	at map[string][]time.Time
}

// RecordRemoval notes that the removal of release's operator in ns begins,
// so the RBAC refusals its pods log from then on are not held against the
// chart (RemovedAt).
func RecordRemoval(ctx context.Context, c client.Client, release, ns string) error {
	var deps appsv1.DeploymentList
	if err := c.List(ctx, &deps, client.InNamespace(ns), operatorSelector(release)); err != nil {
		return err
	}
	now := time.Now()
	for _, d := range deps.Items {
		noteRemoval(ns, d.Name, now)
	}
	return nil
}

func noteRemoval(ns, deployment string, at time.Time) {
	removals.Lock()
	defer removals.Unlock()
	if removals.at == nil {
		removals.at = map[string][]time.Time{}
	}
	key := ns + "/" + deployment + "-"
	removals.at[key] = append(removals.at[key], at)
}

// RemovedAt says when a step began removing the operator pod namespace/pod,
// which had started by started: the first removal of its Deployment after
// that, so a later release of the same name does not excuse its pods.
func RemovedAt(namespace, pod string, started time.Time) (time.Time, bool) {
	removals.Lock()
	defer removals.Unlock()
	for prefix, times := range removals.at {
		if !strings.HasPrefix(namespace+"/"+pod, prefix) {
			continue
		}
		for _, at := range times {
			if !at.Before(started) {
				return at, true
			}
		}
	}
	return time.Time{}, false
}

func (w *world) uninstallRelease(ctx context.Context, name string) error {
	ns := w.releaseNamespace(name)
	if err := RecordRemoval(ctx, w.cluster.Client, name, ns); err != nil {
		return err
	}
	if _, err := w.runHelm(ctx, "uninstall", name, "--namespace", ns, "--wait", "--timeout", helmTimeout); err != nil {
		return err
	}
	delete(w.install.releases, name)
	if name == ClusterRelease && ns == ClusterNamespace {
		w.install.clusterReleaseRemoved = true
	}
	return nil
}

// cleanUpReleases uninstalls what the scenario installed, and puts the
// suite's release back if the scenario took it away.
func (w *world) cleanUpReleases() error {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var errs []string
	for name, ns := range w.install.releases {
		if name == ClusterRelease && ns == ClusterNamespace {
			continue // the suite's own operator, installed again by the scenario
		}
		// Stop the operator first: helm deletes the Deployment and the
		// RBAC in one pass, so a pod still shutting down (deleting its
		// marker Lease) would be refused.
		if err := w.stopOperator(ctx, name, ns); err != nil {
			errs = append(errs, err.Error())
		}
		if _, err := w.runHelm(ctx, "uninstall", name, "--namespace", ns, "--wait", "--timeout", helmTimeout, "--ignore-not-found"); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if w.install.clusterReleaseRemoved {
		_, err := w.runHelm(ctx, "install", ClusterRelease, w.resolve(ChartPath), "--namespace", ClusterNamespace,
			"--create-namespace", "--wait", "--timeout", helmTimeout)
		if err != nil {
			errs = append(errs, err.Error())
		}
	}
	w.install = install{}
	if len(errs) > 0 {
		return fmt.Errorf("cleaning up the scenario's releases:\n%s", strings.Join(errs, "\n"))
	}
	return nil
}

// stopOperator scales a release's operator to zero and waits until its
// pods are gone.
func (w *world) stopOperator(ctx context.Context, release, ns string) error {
	// A stopping pod drains its webhooks for a few seconds (--webhook-drain)
	// while the scenario's namespace, RBAC included, may already be going.
	if err := RecordRemoval(ctx, w.cluster.Client, release, ns); err != nil {
		return err
	}
	var deps appsv1.DeploymentList
	if err := w.cluster.Client.List(ctx, &deps, client.InNamespace(ns), operatorSelector(release)); err != nil {
		return err
	}
	for i := range deps.Items {
		patch := client.MergeFrom(deps.Items[i].DeepCopy())
		deps.Items[i].Spec.Replicas = ptr.To[int32](0)
		if err := w.cluster.Client.Patch(ctx, &deps.Items[i], patch); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return w.eventually(ctx, "the operator pods of "+release+" gone", func() error {
		pods, err := OperatorPods(ctx, w.cluster.Client, release, ns)
		if err != nil {
			return err
		}
		if len(pods) > 0 {
			return fmt.Errorf("release %s still has %d operator pods", release, len(pods))
		}
		return nil
	})
}

// webhooksThroughService checks every webhook of the release's
// configurations is called through the release's Service (not a URL).
func (w *world) webhooksThroughService(ctx context.Context, release, service string) error {
	ns := w.releaseNamespace(release)
	var vs admissionregistrationv1.ValidatingWebhookConfigurationList
	if err := w.cluster.Client.List(ctx, &vs, client.MatchingLabels{"app.kubernetes.io/instance": release}); err != nil {
		return err
	}
	var ms admissionregistrationv1.MutatingWebhookConfigurationList
	if err := w.cluster.Client.List(ctx, &ms, client.MatchingLabels{"app.kubernetes.io/instance": release}); err != nil {
		return err
	}
	var refs []*admissionregistrationv1.ServiceReference
	for _, c := range vs.Items {
		for _, h := range c.Webhooks {
			refs = append(refs, h.ClientConfig.Service)
		}
	}
	for _, c := range ms.Items {
		for _, h := range c.Webhooks {
			refs = append(refs, h.ClientConfig.Service)
		}
	}
	if len(refs) == 0 {
		return fmt.Errorf("release %s has no webhooks", release)
	}
	for _, r := range refs {
		if r == nil || r.Name != service || r.Namespace != ns {
			return fmt.Errorf("a webhook of release %s is called at %+v, want Service %s/%s", release, r, ns, service)
		}
	}
	return nil
}

// nothingLeft checks a cluster-wide release left no webhook configuration,
// ClusterRole(Binding), Lease or Secret of ours, and kept the CRDs.
func (w *world) nothingLeft(ctx context.Context, release string) error {
	ns := w.releaseNamespace(release)
	c := w.cluster.Client
	var left []string
	ours := func(name string) bool {
		return strings.Contains(name, "dynamo-operator") || strings.HasPrefix(name, release)
	}
	var vs admissionregistrationv1.ValidatingWebhookConfigurationList
	var ms admissionregistrationv1.MutatingWebhookConfigurationList
	var crs rbacv1.ClusterRoleList
	var crbs rbacv1.ClusterRoleBindingList
	var leases coordinationv1.LeaseList
	var secrets corev1.SecretList
	for _, l := range []client.ObjectList{&vs, &ms, &crs, &crbs} {
		if err := c.List(ctx, l); err != nil {
			return err
		}
	}
	for _, l := range []client.ObjectList{&leases, &secrets} {
		if err := c.List(ctx, l, client.InNamespace(ns)); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	for _, o := range vs.Items {
		if ours(o.Name) {
			left = append(left, "ValidatingWebhookConfiguration "+o.Name)
		}
	}
	for _, o := range ms.Items {
		if ours(o.Name) {
			left = append(left, "MutatingWebhookConfiguration "+o.Name)
		}
	}
	for _, o := range crs.Items {
		if ours(o.Name) || o.Labels["app.kubernetes.io/instance"] == release {
			left = append(left, "ClusterRole "+o.Name)
		}
	}
	for _, o := range crbs.Items {
		if ours(o.Name) || o.Labels["app.kubernetes.io/instance"] == release {
			left = append(left, "ClusterRoleBinding "+o.Name)
		}
	}
	for _, o := range leases.Items {
		left = append(left, "Lease "+ns+"/"+o.Name)
	}
	for _, o := range secrets.Items {
		left = append(left, "Secret "+ns+"/"+o.Name)
	}
	if len(left) > 0 {
		return fmt.Errorf("helm uninstall %s left:\n  %s", release, strings.Join(left, "\n  "))
	}
	for _, name := range []string{"dynamographdeployments.nvidia.com", "dynamocomponentdeployments.nvidia.com"} {
		crd := &metav1.PartialObjectMetadata{}
		crd.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
		if err := c.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
			return fmt.Errorf("the CRD %s should stay after uninstall: %w", name, err)
		}
	}
	return nil
}
