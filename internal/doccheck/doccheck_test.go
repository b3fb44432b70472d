package doccheck

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dynamoctl/dynamo-operator/internal/testenv"
)

// TestPages checks every shell and YAML block of the user documentation
// against the repository, and reports what it checked and which blocks the
// simulator leaves out, with their reasons.
func TestPages(t *testing.T) {
	repo := loadRepo(t)
	root := repo.Root
	pages, err := Pages(root)
	if err != nil {
		t.Fatal(err)
	}
	var tally Tally
	skipped := map[string][]string{}
	for _, page := range pages {
		blocks, err := ReadPage(root, page)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range blocks {
			for _, p := range repo.Check(b, &tally) {
				t.Error(p)
			}
			if b.Skip != "" {
				skipped[b.Skip] = append(skipped[b.Skip], b.Where())
			}
		}
	}
	if tally.ShellBlocks == 0 || tally.Commands == 0 || tally.YAMLBlocks == 0 {
		t.Fatalf("no blocks found in %d pages: %+v", len(pages), tally)
	}
	t.Logf("%d pages: %d shell blocks with %d commands, %d YAML blocks (%d objects, %d admitted by the operator's rules, %d fragments), %d other blocks",
		len(pages), tally.ShellBlocks, tally.Commands, tally.YAMLBlocks, tally.Objects, tally.Admitted, tally.Fragments, tally.OtherBlocks)
	kinds := make([]string, 0, len(tally.Checked))
	for k, n := range tally.Checked {
		kinds = append(kinds, fmt.Sprintf("%d %ss", n, k))
	}
	sort.Strings(kinds)
	t.Logf("checked: %s", strings.Join(kinds, ", "))
	reasons := make([]string, 0, len(skipped))
	for r, where := range skipped {
		reasons = append(reasons, fmt.Sprintf("  %d: %s (%s)", len(where), r, strings.Join(where, ", ")))
	}
	sort.Strings(reasons)
	t.Logf("blocks the simulator does not run:\n%s", strings.Join(reasons, "\n"))
}

func TestParse(t *testing.T) {
	page := "# T\n\n<!-- doccheck: skip: needs a registry -->\n```sh\ncrane push x\n```\n\n" +
		"1. a step:\n\n   ```yaml\n   a: 1\n   ```\n<!-- doccheck: fragment: part of a graph -->\n```yaml\nspec: {}\n```\n"
	got, err := Parse("p.md", page)
	if err != nil {
		t.Fatal(err)
	}
	want := []Block{
		{Page: "p.md", Line: 4, Lang: "sh", Text: "crane push x\n", Skip: "needs a registry"},
		{Page: "p.md", Line: 10, Lang: "yaml", Text: "a: 1\n"},
		{Page: "p.md", Line: 14, Lang: "yaml", Text: "spec: {}\n", Fragment: "part of a graph"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("blocks (-want +got):\n%s", diff)
	}
}

// TestParseRefusesStrayMarkers: a marker that would be ignored is an error.
func TestParseRefusesStrayMarkers(t *testing.T) {
	cases := map[string]string{
		"unknown marker":        "<!-- doccheck: ignore: x -->\n```sh\nls\n```\n",
		"no reason":             "<!-- doccheck: skip: -->\n```sh\nls\n```\n",
		"not before a fence":    "<!-- doccheck: skip: x -->\n\ntext\n```sh\nls\n```\n",
		"fragment of shell":     "<!-- doccheck: fragment: x -->\n```sh\nls\n```\n",
		"marker at the end":     "```sh\nls\n```\n<!-- doccheck: skip: x -->\n",
		"fence never closed":    "```sh\nls\n",
		"marker before nothing": "<!-- doccheck: skip: x -->\ntext\n",
	}
	for name, page := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := Parse("p.md", page); err == nil {
				t.Errorf("Parse accepted %q", page)
			}
		})
	}
}

func TestSubstitute(t *testing.T) {
	values := Placeholders("1.2.3")
	cases := map[string]struct{ in, want string }{
		"angle":          {"kind load image-archive bin/dynamo-operator-<appVersion>.tar", "kind load image-archive bin/dynamo-operator-1.2.3.tar"},
		"bare word":      {"kubectl get dgd NAME -n NS", "kubectl get dgd vllm-agg -n default"},
		"before a slash": {"crane push x REGISTRY/dynamo-operator:<appVersion>", "crane push x registry.example.com/dynamo-operator:1.2.3"},
		"inside a word":  {"kubectl get deploy -o custom-columns=NAME:.metadata.name", "kubectl get deploy -o custom-columns=NAME:.metadata.name"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := Substitute(c.in, values)
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("Substitute(%q) = %q, want %q", c.in, got, c.want)
			}
		})
	}
	if _, err := Substitute("helm install x --set a=<your value>", values); err == nil {
		t.Error("an unknown placeholder was accepted")
	}
}

func TestStatements(t *testing.T) {
	f, err := ParseShell("make sim   # a cluster\nkubectl -n demo get dgd x -w\nkubectl get dgd,pods --watch\nfor c in a b; do\n  echo \"$c\"\ndone\n")
	if err != nil {
		t.Fatal(err)
	}
	want := []Statement{
		{Line: 1, Text: "make sim", NotRun: "make builds, tests or starts a cluster of its own"},
		{Line: 2, Text: "kubectl -n demo wait --for=condition=Ready --timeout=5m dgd/x && kubectl -n demo get dgd x"},
		{Line: 3, Text: "kubectl get dgd,pods"},
		{Line: 4, Text: "for c in a b; do\n\techo \"$c\"\ndone"},
	}
	if diff := cmp.Diff(want, Statements(f)); diff != "" {
		t.Errorf("statements (-want +got):\n%s", diff)
	}
}

// TestCheckFindsStaleCommands: each kind of stale statement is found.
func TestCheckFindsStaleCommands(t *testing.T) {
	repo := loadRepo(t)
	cases := map[string]struct {
		block Block
		want  string // a part of the one problem found; empty: none
	}{
		"make target":      {Block{Lang: "sh", Text: "make sim no-such-target\n"}, `no make target "no-such-target"`},
		"path":             {Block{Lang: "sh", Text: "kubectl apply -f examples/v1beta1/none.yaml\n"}, "no examples/v1beta1/none.yaml"},
		"chart value":      {Block{Lang: "sh", Text: "helm install x chart/dynamo-platform --set dynamo-operator.nope.enabled=true\n"}, "no value dynamo-operator.nope.enabled"},
		"chart value json": {Block{Lang: "sh", Text: "helm install x chart/dynamo-platform --set-json 'dynamo-operator.webhook.certManager.issuerRef={\"kind\":\"Issuer\"}'\n"}, ""},
		"operator flag":    {Block{Lang: "sh", Text: "POD_NAMESPACE=a bin/dynamo-operator --apply-crds --no-such-flag=1\n"}, "no flag --no-such-flag"},
		"resource":         {Block{Lang: "sh", Text: "kubectl get dgd,dcd,dgdsa,dm,deploy,leaderworkersets,podgroups.scheduling.k8s.io,dynamograph\n"}, `"dynamograph" is neither`},
		"wait resource":    {Block{Lang: "sh", Text: "kubectl wait --for=condition=Ready dgdx/a --timeout=1m\n"}, `"dgdx" is neither`},
		"graph refused":    {Block{Lang: "yaml", Text: "apiVersion: nvidia.com/v1alpha1\nkind: DynamoGraphDeployment\nmetadata: {name: a}\nspec:\n  service: {}\n"}, "unknown field"},
		"values file":      {Block{Lang: "yaml", Text: "dynamo-operator:\n  topology:\n    domainLabelz: []\n"}, "no value dynamo-operator.topology.domainLabelz"},
		"bare YAML":        {Block{Lang: "yaml", Text: "patches: []\n"}, "neither a Kubernetes object nor chart values"},
		"fragment":         {Block{Lang: "yaml", Text: "patches:\n- path: a.yaml\n", Fragment: "a kustomization's patches"}, ""},
		"other kinds":      {Block{Lang: "yaml", Text: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: x.io/v1\nkind: Thing\n"}, ""},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			problems := repo.Check(c.block, &Tally{})
			switch {
			case c.want == "" && len(problems) > 0:
				t.Errorf("problems %v, want none", problems)
			case c.want != "" && (len(problems) != 1 || !strings.Contains(problems[0].What, c.want)):
				t.Errorf("problems %v, want one saying %q", problems, c.want)
			}
		})
	}
}

// loadRepo reads the repository the test runs in.
func loadRepo(t *testing.T) *Repo {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	repo, err := LoadRepo(root)
	if err != nil {
		t.Fatal(err)
	}
	return repo
}
