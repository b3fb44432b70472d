package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/features/steps"
	"github.com/dynamoctl/dynamo-operator/internal/await"
	"github.com/dynamoctl/dynamo-operator/internal/doccheck"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

// The pages' commands run on the suite's cluster after the features, with
// the cluster-wide release installed as README says (the state the
// simulator starts in). Each page starts from that state and is brought
// back to it after: the releases it installed are uninstalled, the
// cluster-wide one installed again if it removed it, and the namespaces
// and graphs it created deleted. A page that installs the cluster-wide
// release itself (helm install dynamo-platform ...) starts without it.
const (
	docsRelease   = steps.ClusterRelease
	docsNamespace = steps.ClusterNamespace
	// docsBlockTimeout bounds one block: a helm install --wait, a graph
	// becoming Ready on the simulator.
	docsBlockTimeout = 5 * time.Minute
)

// docsTally counts what ran.
type docsTally struct {
	blocks, statements, notRun int
	skipped                    map[string][]string
	notRunWhy                  map[string]int
	// conversionWaits are the waits after each install of the cluster-wide
	// release until the API server trusted its conversion webhook.
	conversionWaits []string
}

// runDocs runs every shell block of the user documentation that is not
// marked skip, page by page in doccheck.Pages' order, each statement with
// bash in the repository's root, and fails on the first block of a page
// that exits non-zero.
func runDocs(t *testing.T, c client.Client, kubeconfig string) {
	start := time.Now()
	repo, err := doccheck.LoadRepo(root)
	if err != nil {
		t.Fatal(err)
	}
	pages, err := doccheck.Pages(root)
	if err != nil {
		t.Fatal(err)
	}
	env, err := docsEnv(t, kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	// The features leave the cluster-wide release installed; should one
	// have failed half-way, the pages still start from README's install.
	ensureClusterRelease(t, c, env, helmReleases(t, env))
	tally := docsTally{skipped: map[string][]string{}, notRunWhy: map[string]int{}}
	for _, page := range pages {
		blocks, err := doccheck.ReadPage(root, page)
		if err != nil {
			t.Fatal(err)
		}
		var run []doccheck.Block
		for _, b := range blocks {
			switch {
			case !b.Shell():
			case b.Skip != "":
				tally.skipped[b.Skip] = append(tally.skipped[b.Skip], b.Where())
			default:
				run = append(run, b)
			}
		}
		if len(run) == 0 {
			continue
		}
		t.Run(page, func(t *testing.T) {
			pageStart := time.Now()
			runPage(t, c, repo, env, run, &tally)
			t.Logf("%s: %d blocks in %s", page, len(run), time.Since(pageStart).Round(time.Second))
		})
	}
	reasons := make([]string, 0, len(tally.skipped))
	skipped := 0
	for r, where := range tally.skipped {
		skipped += len(where)
		reasons = append(reasons, fmt.Sprintf("  %d: %s (%s)", len(where), r, strings.Join(where, ", ")))
	}
	sort.Strings(reasons)
	t.Logf("docs on the simulator: %d blocks, %d statements run, %d statements not run (%v), in %s; after each install of the cluster-wide release, the API server trusted its conversion webhook after %v; %d blocks marked skip:\n%s",
		tally.blocks, tally.statements, tally.notRun, tally.notRunWhy, time.Since(start).Round(time.Second),
		tally.conversionWaits, skipped, strings.Join(reasons, "\n"))
}

// docsEnv is the pages' environment: the suite's kubeconfig, the
// simulator's state directory for bin/dynamo-sim, and kubectl and helm
// first on PATH (the pinned builds, or KUBECTL / HELM).
func docsEnv(t *testing.T, kubeconfig string) ([]string, error) {
	kubectl := os.Getenv("KUBECTL")
	if kubectl == "" {
		kubectl = filepath.Join(root, ".cache", "bin", "kubectl")
	}
	tools := t.TempDir()
	for name, bin := range map[string]string{"kubectl": kubectl, "helm": helmBin()} {
		if _, err := os.Stat(bin); err != nil {
			return nil, fmt.Errorf("%s: %w (make kubectl helm builds them)", name, err)
		}
		if err := os.Symlink(bin, filepath.Join(tools, name)); err != nil {
			return nil, err
		}
	}
	return append(os.Environ(),
		"KUBECONFIG="+kubeconfig,
		"DYNAMO_SIM_DIR="+stateDir,
		"PATH="+tools+string(os.PathListSeparator)+os.Getenv("PATH"),
	), nil
}

// runPage runs a page's blocks in order and brings the cluster back to
// the suite's state after.
func runPage(t *testing.T, c client.Client, repo *doccheck.Repo, env []string, blocks []doccheck.Block, tally *docsTally) {
	ctx := context.Background()
	namespaces, err := namespaceNames(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	graphs, err := graphNames(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { restoreCluster(t, c, env, namespaces, graphs) })

	values := doccheck.Placeholders(repo.AppVersion)
	values[workerAddress] = liveWorker
	parsed := make([][]doccheck.Statement, len(blocks))
	for i, b := range blocks {
		text, err := doccheck.Substitute(b.Text, values)
		if err != nil {
			t.Fatalf("%s: %v", b.Where(), err)
		}
		f, err := doccheck.ParseShell(text)
		if err != nil {
			t.Fatalf("%s: %v", b.Where(), err)
		}
		parsed[i] = doccheck.Statements(f)
	}
	if installsClusterRelease(parsed) {
		uninstallRelease(t, c, env, docsRelease, docsNamespace)
	}
	for i, b := range blocks {
		tally.blocks++
		for _, s := range parsed[i] {
			if s.NotRun != "" {
				tally.notRun++
				tally.notRunWhy[s.NotRun]++
				continue
			}
			tally.statements++
			noteUninstalls(t, c, s.Text)
			out, err := docsRun(env, s.Text)
			if err != nil {
				t.Fatalf("%s:%d: %s: %v\n%s", b.Page, b.Line+s.Line, s.Text, err, out)
			}
			t.Logf("%s:%d: %s\n%s", b.Page, b.Line+s.Line, s.Text, indent(out))
			if installsClusterWide(s.Text) {
				// helm's --wait returns once the operator pod is Ready,
				// which it is before it has injected its CA into the
				// CRDs: a v1beta1 write right after can meet "certificate
				// signed by unknown authority". Waited for here, as the
				// suite does after its own install, and reported.
				waited := time.Now()
				waitForConversion(t, c)
				tally.conversionWaits = append(tally.conversionWaits, time.Since(waited).Round(100*time.Millisecond).String())
			}
		}
	}
}

// workerAddress is the placeholder of a fake worker's address (sim/README),
// which the runner has bash read from bin/dynamo-sim workers when the
// statement runs, after the block's graphs came up, as its reader does.
const (
	workerAddress = "<worker address>"
	liveWorker    = `$(bin/dynamo-sim workers | awk '/ at [0-9.]+:[0-9]+$/ {print $NF; exit}')`
)

// installsClusterWide says whether a statement installs or upgrades a
// cluster-wide release of the chart (a namespace-scoped one serves no
// conversion).
func installsClusterWide(stmt string) bool {
	f := strings.Fields(stmt)
	return len(f) >= 4 && f[0] == "helm" && (f[1] == "install" || f[1] == "upgrade") &&
		strings.Contains(stmt, "chart/dynamo-platform") && !strings.Contains(stmt, "namespaceRestriction.enabled=true")
}

// installsClusterRelease says whether the page's first helm command on the
// cluster-wide release installs it (rather than uninstalling it first).
func installsClusterRelease(blocks [][]doccheck.Statement) bool {
	for _, stmts := range blocks {
		for _, s := range stmts {
			f := strings.Fields(s.Text)
			if len(f) >= 3 && f[0] == "helm" && f[2] == docsRelease {
				return f[1] == "install"
			}
		}
	}
	return false
}

// noteUninstalls records a helm uninstall a statement is about to do, so
// the operator's log lines while its RBAC goes are not held against the
// chart (checkPodLogs).
func noteUninstalls(t *testing.T, c client.Client, stmt string) {
	f := strings.Fields(stmt)
	if len(f) < 3 || f[0] != "helm" || f[1] != "uninstall" {
		return
	}
	ns := "default"
	for i := 3; i < len(f)-1; i++ {
		if f[i] == "-n" || f[i] == "--namespace" {
			ns = f[i+1]
		}
	}
	if err := steps.RecordRemoval(context.Background(), c, f[2], ns); err != nil {
		t.Fatal(err)
	}
}

// docsRun runs one statement with bash, errexit and pipefail on.
func docsRun(env []string, stmt string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), docsBlockTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-o", "errexit", "-o", "pipefail", "-c", stmt)
	cmd.Dir, cmd.Env = root, env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func indent(s string) string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return "    (no output)"
	}
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}

func namespaceNames(ctx context.Context, c client.Client) (map[string]bool, error) {
	var list corev1.NamespaceList
	if err := c.List(ctx, &list); err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, n := range list.Items {
		out[n.Name] = true
	}
	return out, nil
}

// graphNames lists the graphs and models of every namespace, as
// namespace/kind/name.
func graphNames(ctx context.Context, c client.Client) (map[string]client.Object, error) {
	out := map[string]client.Object{}
	lists := map[string]client.ObjectList{
		"DynamoGraphDeployment": &v1alpha1.DynamoGraphDeploymentList{},
		"DynamoModel":           &v1alpha1.DynamoModelList{},
	}
	for kind, list := range lists {
		if err := c.List(ctx, list); err != nil {
			return nil, err
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			return nil, err
		}
		for _, item := range items {
			o := item.(client.Object)
			out[o.GetNamespace()+"/"+kind+"/"+o.GetName()] = o
		}
	}
	return out, nil
}

// restoreCluster brings the cluster back to the suite's state after a
// page: releases the page installed uninstalled, the cluster-wide one
// installed, the graphs, models and namespaces the page created deleted.
func restoreCluster(t *testing.T, c client.Client, env []string, namespaces map[string]bool, graphs map[string]client.Object) {
	ctx := context.Background()
	releases := helmReleases(t, env)
	for _, r := range releases {
		if r.Name != docsRelease || r.Namespace != docsNamespace {
			uninstallRelease(t, c, env, r.Name, r.Namespace)
		}
	}
	ensureClusterRelease(t, c, env, releases)
	now, err := graphNames(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	for key, obj := range now {
		if _, ok := graphs[key]; !ok {
			if err := c.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting %s: %v", key, err)
			}
		}
	}
	current, err := namespaceNames(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	var created []string
	for ns := range current {
		if !namespaces[ns] {
			created = append(created, ns)
		}
	}
	for _, ns := range created {
		obj := &corev1.Namespace{}
		obj.Name = ns
		if err := c.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting namespace %s: %v", ns, err)
		}
	}
	if err := await.Until(ctx, "the page's namespaces and graphs gone", func() error {
		for _, ns := range created {
			if err := c.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("namespace %s still there (%v)", ns, err)
			}
		}
		left, err := graphNames(ctx, c)
		if err != nil {
			return err
		}
		for key := range left {
			if _, ok := graphs[key]; !ok {
				return fmt.Errorf("%s still there", key)
			}
		}
		return nil
	}, await.Within(await.Long)); err != nil {
		t.Fatal(err)
	}
}

// helmReleases lists every release, as helm list -A -o json does.
func helmReleases(t *testing.T, env []string) []helmRelease {
	out, err := docsRun(env, "helm list -A -o json")
	if err != nil {
		t.Fatalf("helm list: %v\n%s", err, out)
	}
	var releases []helmRelease
	if err := json.Unmarshal([]byte(out), &releases); err != nil {
		t.Fatalf("helm list: %v\n%s", err, out)
	}
	return releases
}

type helmRelease struct{ Name, Namespace, Status string }

// ensureClusterRelease installs the cluster-wide release as README says
// unless releases has it deployed, and waits until the API server trusts
// its conversion webhook.
func ensureClusterRelease(t *testing.T, c client.Client, env []string, releases []helmRelease) {
	deployed := false
	for _, r := range releases {
		deployed = deployed || (r.Name == docsRelease && r.Namespace == docsNamespace && r.Status == "deployed")
	}
	if !deployed {
		// A release left failed or pending is uninstalled first: its
		// operator pods lose their RBAC before they stop, as on any
		// uninstall (checkPodLogs).
		if err := steps.RecordRemoval(context.Background(), c, docsRelease, docsNamespace); err != nil {
			t.Fatal(err)
		}
		if out, err := docsRun(env, fmt.Sprintf("helm uninstall %s -n %s --ignore-not-found --wait && helm install %s chart/dynamo-platform -n %s --create-namespace --wait --timeout 3m",
			docsRelease, docsNamespace, docsRelease, docsNamespace)); err != nil {
			t.Fatalf("installing the cluster-wide release: %v\n%s", err, out)
		}
	}
	waitForConversion(t, c)
}

func uninstallRelease(t *testing.T, c client.Client, env []string, release, ns string) {
	if err := steps.RecordRemoval(context.Background(), c, release, ns); err != nil {
		t.Fatal(err)
	}
	t.Logf("uninstalling %s in %s at %s", release, ns, time.Now().Format("15:04:05.000"))
	if out, err := docsRun(env, fmt.Sprintf("helm uninstall %s -n %s --wait --timeout 3m", release, ns)); err != nil {
		t.Fatalf("helm uninstall %s: %v\n%s", release, err, out)
	}
}
