package charttest

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dynamoctl/dynamo-operator/internal/testenv"
	"github.com/dynamoctl/dynamo-operator/scenarios/harness"
)

// TestUpgradeFromTheLastRelease: helm upgrade of a release installed with
// the newest release's chart (scenarios/releases.txt). --reuse-values
// replaces this chart's defaults with that chart's, so values added since
// would be missing (an operator pod without its security context): the
// upgrade is refused rather than rendered (that chart's defaults name a
// value this one no longer has). --reset-then-reuse-values, which
// chart/README.md documents, keeps the values given at install on this
// chart's defaults, and goes through.
func TestUpgradeFromTheLastRelease(t *testing.T) {
	h := newHelm(t)
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	releases, err := harness.ReadReleases(root)
	if err != nil || len(releases) == 0 {
		t.Fatalf("releases in %s: %v %v", harness.ReleasesFile, releases, err)
	}
	last := releases[len(releases)-1]
	dir := t.TempDir()
	archive := filepath.Join(dir, "chart.tar")
	for _, cmd := range []*exec.Cmd{
		exec.Command("git", "-C", root, "archive", "--output", archive, last.Commit, "chart/dynamo-platform"),
		exec.Command("tar", "-x", "-f", archive, "-C", dir),
	} {
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", cmd.Args, err, out)
		}
	}

	ns := env.Namespace(t, "upgrade")
	// Namespace-scoped without webhooks or metrics: nothing cluster-scoped
	// that other tests' releases would meet.
	sets := []string{"--set", "dynamo-operator.namespaceRestriction.enabled=true",
		"--set", "dynamo-operator.webhook.enabled=false", "--set", "dynamo-operator.metricsService.enabled=false"}
	h.mustRun(append([]string{"install", "upgraded", filepath.Join(dir, "chart", "dynamo-platform"), "--namespace", ns}, sets...)...)
	t.Cleanup(func() { h.mustRun("uninstall", "upgraded", "--namespace", ns, "--wait") })

	upgrade := []string{"upgrade", "upgraded", chartDir(t), "--namespace", ns, "--dry-run"}
	if out, err := h.run(append(upgrade, "--reuse-values")...); err == nil || !strings.Contains(err.Error(), "UPGRADE FAILED") {
		t.Errorf("helm upgrade from %s with --reuse-values: got %v, want it refused\n%s", last.Tag, err, out)
	}
	out := h.mustRun(append(upgrade, "--reset-then-reuse-values")...)
	if !strings.Contains(out, "kind: Deployment") {
		t.Errorf("helm upgrade from %s with --reset-then-reuse-values rendered no Deployment:\n%s", last.Tag, out)
	}
}
