package steps

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/cucumber/godog"

	"github.com/dynamoctl/dynamo-operator/scenarios/harness"
)

// The cluster-wide release and its namespace, as chart/README.md names them.
const (
	ClusterRelease   = "dynamo-platform"
	ClusterNamespace = "dynamo-system"
)

// ReleaseRef matches how a step names a release: "the previous release"
// (the newest tag before HEAD), "the working tree", or release "<git ref>".
const ReleaseRef = `(the previous release|the working tree|release "[^"]+")`

// DefaultPools are the simulator's GPU nodes in the scenarios: room for
// every compat graph at once (about 90 NVIDIA GPUs and the DRA examples'
// Intel GPUs), with spare nodes to reschedule onto.
var DefaultPools = []string{
	"name=h100,count=14,gpus=8,product=NVIDIA-H100-80GB-HBM3,memory=81559",
	"name=l40s,count=4,gpus=4,product=NVIDIA-L40S,memory=46068",
	"name=xpu,count=2,draDriver=gpu.intel.com,draDevices=4",
}

// releases is the helm state of a scenario: installed releases by name.
type releases struct {
	installed map[string]installed
	// names are every release installed, in order, even if uninstalled
	// since; namespaces where they ran.
	names      []string
	namespaces map[string]string
}

type installed struct {
	namespace string
	release   *harness.Release
}

func registerReleaseSteps(sc *godog.ScenarioContext, w *simWorld) {
	sc.Step(`^a simulated cluster with no operator$`, func(ctx context.Context) error {
		return w.SimUp(ctx, harness.UpOptions{})
	})
	sc.Step(`^the simulator is kept for the next scenario$`, w.keepSim)
	sc.Step(`^the simulator the previous scenario kept$`, w.resumeSim)
	sc.Step(`^I install `+ReleaseRef+` cluster-wide as chart/README.md says$`, func(ctx context.Context, ref string) error {
		return w.InstallRelease(ctx, ClusterRelease, ClusterNamespace, ref)
	})
	sc.Step(`^I install `+ReleaseRef+` as "([^"]+)" namespace-scoped in the namespace "([^"]+)" as chart/README.md says$`,
		func(ctx context.Context, ref, name, ns string) error {
			return w.InstallRelease(ctx, name, ns, ref, harness.NamespaceScoped)
		})
	sc.Step(`^I upgrade the release "([^"]+)" to `+ReleaseRef+`$`, w.UpgradeRelease)
	sc.Step(`^I upgrade the cluster-wide release to `+ReleaseRef+`$`, func(ctx context.Context, ref string) error {
		return w.UpgradeRelease(ctx, ClusterRelease, ref)
	})
	sc.Step(`^the release "([^"]+)" runs `+ReleaseRef+` as its leader$`, w.releaseLeads)
	sc.Step(`^the cluster-wide release runs `+ReleaseRef+` as its leader$`, func(ctx context.Context, ref string) error {
		return w.releaseLeads(ctx, ClusterRelease, ref)
	})
	sc.Step(`^I uninstall the cluster-wide release$`, func(ctx context.Context) error {
		return w.UninstallRelease(ctx, ClusterRelease)
	})
}

// Release resolves a step's release reference to a built release.
func (w *simWorld) Release(ctx context.Context, ref string) (*harness.Release, error) {
	switch {
	case ref == "the previous release":
		ref = w.Suite.Previous
	case ref == "the working tree":
		ref = harness.WorkingTree
	case strings.HasPrefix(ref, `release "`):
		ref = strings.TrimSuffix(strings.TrimPrefix(ref, `release "`), `"`)
	}
	return w.Suite.Builder.Build(ctx, ref)
}

// SimUp starts the scenario's simulator with no operator and no CRDs; its
// kubelet runs the images of the previous release and the working tree
// (and of any release in o.Releases). Default pools unless o.Pools.
func (w *simWorld) SimUp(ctx context.Context, o harness.UpOptions) error {
	if w.Sim != nil {
		return fmt.Errorf("the scenario's simulator is already up")
	}
	for _, ref := range []string{"the previous release", "the working tree"} {
		r, err := w.Release(ctx, ref)
		if err != nil {
			return err
		}
		o.Releases = append(o.Releases, r)
	}
	if len(o.Pools) == 0 {
		o.Pools = DefaultPools
	}
	sim := &harness.Sim{Bin: w.Suite.SimBin, Dir: w.Suite.StateDir, BinDir: w.Suite.BinDir, Out: os.Stdout}
	start := time.Now()
	w.Sim = sim // Down runs at the end even if up failed half-way
	if err := sim.Up(ctx, o); err != nil {
		return err
	}
	c, rc, err := sim.Client()
	if err != nil {
		return err
	}
	w.Client, w.Config = c, rc
	w.Helm = &harness.Helm{Bin: w.Suite.Helm, Kubeconfig: sim.Kubeconfig()}
	w.Figure("simulator up (s)", fmt.Sprintf("%.1f", time.Since(start).Seconds()))
	return nil
}

// InstallRelease helm-installs the release ref as name in namespace (with
// --create-namespace, as chart/README.md does) and waits until it is ready.
func (w *simWorld) InstallRelease(ctx context.Context, name, namespace, ref string, sets ...string) error {
	if err := w.NeedSim(); err != nil {
		return err
	}
	r, err := w.Release(ctx, ref)
	if err != nil {
		return err
	}
	start := time.Now()
	if w.releases.installed == nil {
		w.releases.installed = map[string]installed{}
	}
	w.releases.installed[name] = installed{namespace: namespace, release: r}
	if w.releases.namespaces == nil {
		w.releases.namespaces = map[string]string{}
	}
	if _, ok := w.releases.namespaces[name]; !ok {
		w.releases.names = append(w.releases.names, name)
	}
	w.releases.namespaces[name] = namespace
	if _, err := w.Helm.Install(ctx, name, namespace, r, sets, []string{LogLevel}); err != nil {
		return err
	}
	fmt.Printf("    helm install %s (%s) in %s: %.1fs\n", name, r.Tag, namespace, time.Since(start).Seconds())
	return nil
}

// UpgradeRelease helm-upgrades an installed release to ref and waits until
// it is ready.
func (w *simWorld) UpgradeRelease(ctx context.Context, name, ref string) error {
	in, ok := w.releases.installed[name]
	if !ok {
		return fmt.Errorf("the scenario installed no release %q", name)
	}
	r, err := w.Release(ctx, ref)
	if err != nil {
		return err
	}
	start := time.Now()
	if _, err := w.Helm.Upgrade(ctx, name, in.namespace, r); err != nil {
		return err
	}
	w.releases.installed[name] = installed{namespace: in.namespace, release: r}
	w.Figure("helm upgrade "+name+" (s)", fmt.Sprintf("%.1f", time.Since(start).Seconds()))
	return nil
}

// UninstallRelease helm-uninstalls an installed release and waits until
// its resources are gone.
func (w *simWorld) UninstallRelease(ctx context.Context, name string) error {
	in, ok := w.releases.installed[name]
	if !ok {
		return fmt.Errorf("the scenario installed no release %q", name)
	}
	if _, err := w.Helm.Uninstall(ctx, name, in.namespace); err != nil {
		return err
	}
	delete(w.releases.installed, name)
	return nil
}

// InstalledRelease is the release installed as name, and its namespace.
func (w *simWorld) InstalledRelease(name string) (*harness.Release, string, bool) {
	in, ok := w.releases.installed[name]
	return in.release, in.namespace, ok
}

// OperatorUser is the audit-log user of release name's operator (its
// ServiceAccount, <release>-dynamo-operator in the chart).
func (w *simWorld) OperatorUser(name string) string {
	ns := ClusterNamespace
	if n, ok := w.releases.namespaces[name]; ok {
		ns = n
	}
	return harness.ServiceAccountUser(ns, name+"-dynamo-operator")
}

// releaseLeads waits until every operator pod of an installed release runs
// ref's image, no other pod is left, and one of them holds the leader
// election Lease: from then on, what the operator does is ref's doing.
func (w *simWorld) releaseLeads(ctx context.Context, name, ref string) error {
	r, err := w.Release(ctx, ref)
	if err != nil {
		return err
	}
	_, ns, ok := w.InstalledRelease(name)
	if !ok {
		return fmt.Errorf("the scenario installed no release %q", name)
	}
	return w.eventually(ctx, "the release "+name+" running "+ref+" as its leader", func() error {
		pods, err := OperatorPods(ctx, w.Client, name, ns)
		if err != nil {
			return err
		}
		if len(pods) == 0 {
			return fmt.Errorf("release %s has no operator pods", name)
		}
		for _, p := range pods {
			for _, c := range p.Spec.Containers {
				if c.Image != r.Image() {
					return fmt.Errorf("pod %s runs %s, want %s", p.Name, c.Image, r.Image())
				}
			}
		}
		_, _, err = operatorLeader(ctx, w.Client, name, ns)
		return err
	})
}
