package steps

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/cucumber/godog"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// A release's operator pods: how many run Ready, with what, and which one
// leads (the one leader lookup of both suites, operatorLeader).

func registerOperatorPodSteps(sc *godog.ScenarioContext, w *world) {
	sc.Step(`^the release `+quoted+` runs (\d+) Ready operator pods?$`, w.releaseRunsReadyPods)
	sc.Step(`^the release `+quoted+` runs its operator with `+quoted+`$`, unquote2(w.releaseRunsWith))
	sc.Step(`^one pod of the release `+quoted+` holds its leader election Lease$`, w.onePodLeads)
	sc.Step(`^I delete the leader pod of the release `+quoted+`$`, w.deleteLeaderPod)
	sc.Step(`^another pod of the release `+quoted+` becomes the leader$`, w.anotherPodLeads)
}

// operatorSelector selects the pods of a release's operator (the chart's
// selector labels).
func operatorSelector(release string) client.MatchingLabels {
	return client.MatchingLabels{"app.kubernetes.io/name": "dynamo-operator", "app.kubernetes.io/instance": release}
}

// OperatorPods lists a release's operator pods, by name.
func OperatorPods(ctx context.Context, c client.Client, release, namespace string) ([]corev1.Pod, error) {
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(namespace), operatorSelector(release)); err != nil {
		return nil, err
	}
	sort.Slice(pods.Items, func(i, j int) bool { return pods.Items[i].Name < pods.Items[j].Name })
	return pods.Items, nil
}

// podReady: the pod's Ready condition is True and it is not terminating
// (Services drop a terminating pod at once).
func podReady(p *corev1.Pod) bool {
	if p.DeletionTimestamp != nil {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// readyPods checks that the release's Deployment asks for n replicas and
// exactly n of its pods exist and are Ready.
func (w *world) readyPods(ctx context.Context, release string, n int) error {
	ns := w.releaseNamespace(release)
	var deps appsv1.DeploymentList
	if err := w.cluster.Client.List(ctx, &deps, client.InNamespace(ns), operatorSelector(release)); err != nil {
		return err
	}
	if len(deps.Items) != 1 {
		return fmt.Errorf("release %s has %d operator Deployments in %s, want 1", release, len(deps.Items), ns)
	}
	if got := ptr.Deref(deps.Items[0].Spec.Replicas, 1); int(got) != n {
		return fmt.Errorf("Deployment %s asks for %d replicas, want %d", deps.Items[0].Name, got, n)
	}
	pods, err := OperatorPods(ctx, w.cluster.Client, release, ns)
	if err != nil {
		return err
	}
	var ready, other []string
	for i := range pods {
		if podReady(&pods[i]) {
			ready = append(ready, pods[i].Name)
		} else {
			other = append(other, pods[i].Name+" ("+string(pods[i].Status.Phase)+")")
		}
	}
	if len(ready) != n || len(other) != 0 {
		return fmt.Errorf("release %s: Ready pods %v, others %v; want %d Ready", release, ready, other, n)
	}
	return nil
}

func (w *world) releaseRunsReadyPods(ctx context.Context, release string, n int) error {
	return w.eventually(ctx, fmt.Sprintf("%d Ready operator pods of %s", n, release), func() error { return w.readyPods(ctx, release, n) })
}

// releaseRunsWith checks the running operator pods' manager container
// carries an argument or env value (NAME=value).
func (w *world) releaseRunsWith(ctx context.Context, release, want string) error {
	return w.eventually(ctx, "the operator of "+release+" running with "+want, func() error {
		pods, err := OperatorPods(ctx, w.cluster.Client, release, w.releaseNamespace(release))
		if err != nil {
			return err
		}
		if len(pods) == 0 {
			return fmt.Errorf("release %s has no operator pods", release)
		}
		for i := range pods {
			if !podReady(&pods[i]) {
				return fmt.Errorf("pod %s is not Ready", pods[i].Name)
			}
			if !containerHas(pods[i].Spec.Containers, want) {
				return fmt.Errorf("pod %s does not run with %q", pods[i].Name, want)
			}
		}
		return nil
	})
}

func containerHas(cs []corev1.Container, want string) bool {
	for _, c := range cs {
		for _, a := range append(append([]string{}, c.Command...), c.Args...) {
			if a == want {
				return true
			}
		}
		for _, e := range c.Env {
			if e.Name+"="+e.Value == want {
				return true
			}
		}
	}
	return false
}

// leaderElectionLease begins the name of the operator's leader election
// Lease: dynamo-operator-leader cluster-wide, dynamo-operator-leader-<ns>
// namespace-scoped (chart/README.md).
const leaderElectionLease = "dynamo-operator-leader"

// operatorLeader is the name of the operator pod of release (in ns) that
// holds its leader election Lease, and the Lease's holder identity
// (controller-runtime's is "<pod name>_<uuid>"). It fails when no such
// Lease is there, or when its holder is none of the release's pods.
func operatorLeader(ctx context.Context, c client.Client, release, ns string) (pod, holder string, err error) {
	var leases coordinationv1.LeaseList
	if err := c.List(ctx, &leases, client.InNamespace(ns)); err != nil {
		return "", "", err
	}
	pods, err := OperatorPods(ctx, c, release, ns)
	if err != nil {
		return "", "", err
	}
	for _, l := range leases.Items {
		if !strings.HasPrefix(l.Name, leaderElectionLease) {
			continue
		}
		holder := ptr.Deref(l.Spec.HolderIdentity, "")
		for _, p := range pods {
			if strings.HasPrefix(holder, p.Name+"_") {
				return p.Name, holder, nil
			}
		}
		return "", holder, fmt.Errorf("the Lease %s is held by %q, none of the pods of release %s", l.Name, holder, release)
	}
	return "", "", fmt.Errorf("release %s has no leader election Lease in %s", release, ns)
}

// leader is the pod of release that leads.
func (w *world) leader(ctx context.Context, release string) (string, error) {
	pod, _, err := operatorLeader(ctx, w.cluster.Client, release, w.releaseNamespace(release))
	return pod, err
}

func (w *world) onePodLeads(ctx context.Context, release string) error {
	return w.eventually(ctx, "one pod of "+release+" holding its leader election Lease", func() error {
		_, err := w.leader(ctx, release)
		return err
	})
}

func (w *world) deleteLeaderPod(ctx context.Context, release string) error {
	name, err := w.leader(ctx, release)
	if err != nil {
		return err
	}
	pod := &corev1.Pod{}
	pod.Name, pod.Namespace = name, w.releaseNamespace(release)
	if err := w.cluster.Client.Delete(ctx, pod); err != nil {
		return err
	}
	w.install.deletedLeader, w.install.deletedAt = name, time.Now()
	return nil
}

func (w *world) anotherPodLeads(ctx context.Context, release string) error {
	err := w.eventually(ctx, "another pod of "+release+" leading", func() error {
		name, err := w.leader(ctx, release)
		if err != nil {
			return err
		}
		if name == w.install.deletedLeader {
			return fmt.Errorf("the deleted pod %s still holds the Lease", name)
		}
		return nil
	})
	if err == nil {
		fmt.Printf("    leader pod deleted to another pod holding the Lease: %.1fs\n", time.Since(w.install.deletedAt).Seconds())
	}
	return err
}

// RestartOperatorPods deletes every operator pod of a release, as
// "kubectl delete pod" does, and waits until as many new pods are Ready, one
// of them holds the leader election Lease, and the API server's admission
// calls reach them.
func RestartOperatorPods(ctx context.Context, c client.Client, release, namespace string, timeout time.Duration) error {
	old, err := OperatorPods(ctx, c, release, namespace)
	if err != nil {
		return err
	}
	if len(old) == 0 {
		return fmt.Errorf("release %s has no operator pods in %s", release, namespace)
	}
	gone := map[string]bool{}
	for i := range old {
		gone[string(old[i].UID)] = true
		if err := c.Delete(ctx, &old[i]); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	w := &world{cluster: &Cluster{Client: c, EventualTimeout: timeout}, install: install{releases: map[string]string{release: namespace}}}
	if err := w.eventually(ctx, "new Ready operator pods of "+release+", one leading", func() error {
		pods, err := OperatorPods(ctx, c, release, namespace)
		if err != nil {
			return err
		}
		ready := 0
		for i := range pods {
			if gone[string(pods[i].UID)] {
				return fmt.Errorf("the old pod %s is still there", pods[i].Name)
			}
			if podReady(&pods[i]) {
				ready++
			}
		}
		if ready != len(old) {
			return fmt.Errorf("%d of %d new operator pods Ready", ready, len(old))
		}
		_, err = w.leader(ctx, release)
		return err
	}); err != nil {
		return err
	}
	// The API server may still hold a connection to a deleted pod's webhook
	// server: a call on it fails ("use of closed network connection") and
	// the connection goes with that failure. A user's next write could be
	// that call; wait until admission reaches the new pods.
	probe := admissionProbe("restart-probe", "default")
	return w.eventually(ctx, "admission reaching the new operator pods of "+release, func() error {
		if err := c.Create(ctx, probe.DeepCopy(), client.DryRunAll); err != nil && strings.Contains(err.Error(), "failed calling webhook") {
			return err
		}
		return nil
	})
}
