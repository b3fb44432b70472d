package charttest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/version"
	"sigs.k8s.io/yaml"

	"github.com/dynamoctl/dynamo-operator/internal/testenv"
	"github.com/dynamoctl/dynamo-operator/scenarios/harness"
)

// chartMeta is what the tests read of a Chart.yaml.
type chartMeta struct {
	Version      string `json:"version"`
	AppVersion   string `json:"appVersion"`
	KubeVersion  string `json:"kubeVersion"`
	Dependencies []struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	} `json:"dependencies"`
}

func readChart(t *testing.T, dir string) chartMeta {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var m chartMeta
	if err := yaml.Unmarshal(data, &m); err != nil {
		t.Fatalf("%s/Chart.yaml: %v", dir, err)
	}
	return m
}

// chartAppVersion is the dynamo-platform chart's appVersion: the image tag
// and operator version it installs by default.
func chartAppVersion(t *testing.T) string {
	t.Helper()
	return readChart(t, chartDir(t)).AppVersion
}

// TestChartVersions: the chart, its subchart and the dependency between
// them carry one version, the appVersion (the image make image tags, the
// operator version) is that version, and it is not older than the newest
// release (scenarios/releases.txt): a release bumps them (chart/README.md,
// "Versions"), so no tree after a release builds an image of an earlier
// version's name.
func TestChartVersions(t *testing.T) {
	parent := readChart(t, chartDir(t))
	sub := readChart(t, filepath.Join(chartDir(t), "charts", "dynamo-operator"))
	got := map[string]string{
		"dynamo-platform version":            parent.Version,
		"dynamo-platform appVersion":         parent.AppVersion,
		"dynamo-operator version":            sub.Version,
		"dynamo-operator appVersion":         sub.AppVersion,
		"dynamo-platform kubeVersion":        parent.KubeVersion,
		"dynamo-operator kubeVersion":        sub.KubeVersion,
		"dependency dynamo-operator version": "",
	}
	for _, d := range parent.Dependencies {
		if d.Name == "dynamo-operator" {
			got["dependency dynamo-operator version"] = d.Version
		}
	}
	for what, v := range got {
		want := parent.Version
		if strings.HasSuffix(what, "kubeVersion") {
			want = parent.KubeVersion
		}
		if v != want || v == "" {
			t.Errorf("%s is %q, want %q", what, v, want)
		}
	}
	chartVersion, err := version.ParseSemantic(parent.Version)
	if err != nil {
		t.Fatalf("chart version: %v", err)
	}
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	releases, err := harness.ReadReleases(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(releases) == 0 {
		t.Fatalf("no release in %s", harness.ReleasesFile)
	}
	newest := releases[len(releases)-1].Tag
	released, err := version.ParseSemantic(newest)
	if err != nil {
		t.Fatalf("release %s: %v", newest, err)
	}
	if chartVersion.LessThan(released) {
		t.Errorf("chart version %s is older than release %s: bump Chart.yaml (chart/README.md, \"Versions\")", chartVersion, newest)
	}
}

// TestNotesShown: helm prints the operator's notes after an install of
// dynamo-platform (a chart's notes are shown, its subcharts' are not).
func TestNotesShown(t *testing.T) {
	h := newHelm(t)
	for name, tc := range map[string]struct {
		set    []string
		want   []string
		absent []string
	}{
		"cluster-wide, the default two replicas": {
			want:   []string{"managing every namespace (cluster-wide).", "kubectl rollout status -n NS deployment/notes-dynamo-operator"},
			absent: []string{"One replica"},
		},
		"cluster-wide, one replica": {
			set: []string{"dynamo-operator.controllerManager.replicas=1"},
			want: []string{"The Dynamo operator " + chartAppVersion(t) + " is installed in namespace NS, managing every namespace (cluster-wide).",
				"kubectl rollout status -n NS deployment/notes-dynamo-operator",
				"One replica: while its pod restarts the API server refuses writes",
				"ClusterRole notes-dynamo-operator-NS-metrics-reader"},
		},
		"namespace-scoped, two replicas": {
			set: []string{"dynamo-operator.namespaceRestriction.enabled=true", "dynamo-operator.controllerManager.replicas=2"},
			want: []string{"managing only namespace NS.",
				"kubectl get lease -n NS dynamo-operator-namespace-scope"},
			absent: []string{"One replica"},
		},
		"operator off": {
			set:  []string{"dynamo-operator.enabled=false"},
			want: []string{"The Dynamo operator is not installed (dynamo-operator.enabled=false)."},
		},
	} {
		t.Run(name, func(t *testing.T) {
			ns := env.Namespace(t, "notes")
			args := []string{"install", "notes", chartDir(t), "--namespace", ns, "--dry-run=client"}
			for _, s := range tc.set {
				args = append(args, "--set", s)
			}
			out := h.mustRun(args...)
			_, notes, ok := strings.Cut(out, "\nNOTES:\n")
			if !ok {
				t.Fatalf("helm install printed no NOTES:\n%s", out)
			}
			for _, w := range tc.want {
				if w = strings.ReplaceAll(w, "NS", ns); !strings.Contains(notes, w) {
					t.Errorf("NOTES lack %q:\n%s", w, notes)
				}
			}
			for _, a := range tc.absent {
				if strings.Contains(notes, a) {
					t.Errorf("NOTES say %q:\n%s", a, notes)
				}
			}
		})
	}
}
