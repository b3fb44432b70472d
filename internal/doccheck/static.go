package doccheck

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"

	"github.com/dynamoctl/dynamo-operator/crds"
	"github.com/dynamoctl/dynamo-operator/internal/admission"
	"github.com/dynamoctl/dynamo-operator/operator/config"
)

// Repo holds what the pages' commands may name: make targets, chart
// values, operator flags, resource names.
type Repo struct {
	Root       string
	AppVersion string
	Targets    map[string]bool
	// Values is the chart's values: the parent chart's with the subchart's
	// under dynamo-operator, as helm merges them.
	Values    map[string]any
	Flags     map[string]bool
	Resources map[string]bool
	// CRDs counts the CustomResourceDefinitions in crds/.
	CRDs int
}

// builtinShortNames are the short names kubectl knows for Kubernetes' own
// resources (kubectl api-resources), which the client-go scheme does not
// carry.
var builtinShortNames = []string{
	"cm", "crd", "crds", "cs", "csr", "cj", "deploy", "ds", "ep", "ev", "hpa", "ing", "limits", "netpol",
	"no", "ns", "pc", "pdb", "po", "psp", "pv", "pvc", "quota", "rc", "rs", "sa", "sc", "sts", "svc",
}

// otherResources are resources of other projects that the pages name:
// LeaderWorkerSet's (multinode graphs run as LeaderWorkerSets).
var otherResources = []string{"leaderworkersets", "leaderworkerset", "lws", "leaderworkersets.leaderworkerset.x-k8s.io"}

// LoadRepo reads the repository at root.
func LoadRepo(root string) (*Repo, error) {
	r := &Repo{Root: root, Targets: map[string]bool{}, Flags: map[string]bool{}, Resources: map[string]bool{}}
	var err error
	if r.Targets, err = makeTargets(filepath.Join(root, "Makefile")); err != nil {
		return nil, err
	}
	var chart struct {
		AppVersion string `json:"appVersion"`
	}
	if err := readYAML(filepath.Join(root, "chart/dynamo-platform/Chart.yaml"), &chart); err != nil {
		return nil, err
	}
	r.AppVersion = chart.AppVersion
	var parent, sub map[string]any
	if err := readYAML(filepath.Join(root, "chart/dynamo-platform/values.yaml"), &parent); err != nil {
		return nil, err
	}
	if err := readYAML(filepath.Join(root, "chart/dynamo-platform/charts/dynamo-operator/values.yaml"), &sub); err != nil {
		return nil, err
	}
	if own, ok := parent["dynamo-operator"].(map[string]any); ok {
		for k, v := range own {
			sub[k] = v
		}
	}
	parent["dynamo-operator"] = sub
	r.Values = parent
	for _, f := range config.Flags() {
		r.Flags[f.Name] = true
	}
	for _, name := range append(builtinShortNames, otherResources...) {
		r.Resources[name] = true
	}
	for gvk := range clientscheme.Scheme.AllKnownTypes() {
		plural, singular := meta.UnsafeGuessKindToResource(gvk)
		for _, n := range []string{plural.Resource, singular.Resource} {
			r.Resources[n] = true
			if gvk.Group != "" {
				r.Resources[n+"."+gvk.Group] = true
			}
		}
	}
	files, err := filepath.Glob(filepath.Join(root, "crds", "*.yaml"))
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		data, err := crds.FS.ReadFile(filepath.Base(f))
		if err != nil {
			return nil, err
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal(data, &crd); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		r.CRDs++
		n := crd.Spec.Names
		for _, name := range append([]string{n.Plural, n.Singular, strings.ToLower(n.Kind), n.Plural + "." + crd.Spec.Group}, n.ShortNames...) {
			r.Resources[name] = true
		}
	}
	return r, nil
}

func readYAML(path string, into any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := yaml.Unmarshal(data, into); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

var makeRule = regexp.MustCompile(`^([A-Za-z0-9_.$()/ -]+?)\s*&?::?([^=]|$)`)

// makeTargets lists the explicit targets of a Makefile.
func makeTargets(path string) (map[string]bool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	targets := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "\t") || strings.HasPrefix(line, "#") {
			continue
		}
		m := makeRule.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		for _, t := range strings.Fields(m[1]) {
			if !strings.Contains(t, "$(") && !strings.HasPrefix(t, ".") {
				targets[t] = true
			}
		}
	}
	return targets, sc.Err()
}

// Problem is one stale statement found in a block.
type Problem struct {
	Block Block
	Line  int // within the block; 0: the block as a whole
	What  string
}

func (p Problem) String() string {
	if p.Line == 0 {
		return p.Block.Where() + ": " + p.What
	}
	return fmt.Sprintf("%s:%d: %s", p.Block.Page, p.Block.Line+p.Line, p.What)
}

// Tally counts what the static checks looked at.
type Tally struct {
	ShellBlocks, YAMLBlocks, OtherBlocks, Commands, Objects, Admitted, Fragments int
	// Checked counts each kind of check made: "make target", "path", ...
	Checked map[string]int
}

func (t *Tally) count(kind string) {
	if t.Checked == nil {
		t.Checked = map[string]int{}
	}
	t.Checked[kind]++
}

// Check checks one block and returns what is stale in it.
func (r *Repo) Check(b Block, t *Tally) []Problem {
	switch {
	case b.Shell():
		t.ShellBlocks++
		return r.checkShell(b, t)
	case b.YAML():
		t.YAMLBlocks++
		return r.checkYAML(b, t)
	}
	t.OtherBlocks++
	return nil
}

func (r *Repo) checkShell(b Block, t *Tally) []Problem {
	text, err := Substitute(b.Text, Placeholders(r.AppVersion))
	if err != nil {
		return []Problem{{Block: b, What: err.Error()}}
	}
	f, err := ParseShell(text)
	if err != nil {
		return []Problem{{Block: b, What: "not valid shell: " + err.Error()}}
	}
	var out []Problem
	for _, c := range Commands(f) {
		t.Commands++
		for _, what := range r.checkCommand(c, t) {
			out = append(out, Problem{Block: b, Line: c.Line, What: fmt.Sprintf("%s: %s", c, what)})
		}
	}
	return out
}

var repoPath = regexp.MustCompile(`(?:^|[=:,])((?:examples|chart|crds|docs|sim|tools|operator|features|scenarios|internal)/[A-Za-z0-9_./-]*)`)

// checkCommand checks one command's make targets, paths, chart values,
// operator flags and resource names.
func (r *Repo) checkCommand(c Command, t *Tally) []string {
	var out []string
	for _, a := range c.Args[1:] {
		for _, m := range repoPath.FindAllStringSubmatch(a, -1) {
			t.count("path")
			if _, err := os.Stat(filepath.Join(r.Root, strings.TrimRight(m[1], "."))); err != nil {
				out = append(out, fmt.Sprintf("no %s in the repository", m[1]))
			}
		}
	}
	switch filepath.Base(c.Args[0]) {
	case "make":
		for _, a := range c.Args[1:] {
			if strings.HasPrefix(a, "-") || strings.Contains(a, "=") {
				continue
			}
			t.count("make target")
			if !r.Targets[a] {
				out = append(out, fmt.Sprintf("no make target %q", a))
			}
		}
	case "helm":
		out = append(out, r.checkHelm(c.Args[1:], t)...)
	case "dynamo-operator":
		for _, a := range c.Args[1:] {
			if !strings.HasPrefix(a, "-") {
				continue
			}
			name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
			t.count("operator flag")
			if !r.Flags[name] {
				out = append(out, fmt.Sprintf("the operator has no flag --%s (operator/config)", name))
			}
		}
	case "kubectl":
		out = append(out, r.checkKubectl(c.Args[1:], t)...)
	}
	return out
}

// checkHelm checks the values a helm command sets.
func (r *Repo) checkHelm(args []string, t *Tally) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		flag, value, inline := strings.Cut(args[i], "=")
		switch flag {
		case "--set", "--set-string", "--set-json", "--set-file", "--set-literal":
		default:
			continue
		}
		if !inline && i+1 < len(args) {
			i++
			value = args[i]
		}
		assignments := []string{value}
		if flag != "--set-json" && flag != "--set-literal" {
			assignments = strings.Split(value, ",")
		}
		for _, as := range assignments {
			key, _, _ := strings.Cut(as, "=")
			t.count("chart value")
			if err := r.ValueExists(key); err != nil {
				out = append(out, err.Error())
			}
		}
	}
	return out
}

var listIndex = regexp.MustCompile(`\[\d+\]`)

// ValueExists says whether a dotted values key (helm --set's) is one of
// the chart's. A key below a map the chart leaves empty ({}, as for
// labels) or below a list is free.
func (r *Repo) ValueExists(key string) error {
	var cur any = r.Values
	parts := strings.Split(listIndex.ReplaceAllString(strings.ReplaceAll(key, `\.`, "\x00"), ""), ".")
	for i, p := range parts {
		p = strings.ReplaceAll(p, "\x00", ".")
		m, ok := cur.(map[string]any)
		if !ok || len(m) == 0 {
			if cur == nil || ok {
				return nil // an empty map or a null: free-form
			}
			if _, list := cur.([]any); list {
				return nil
			}
			return fmt.Errorf("chart value %s: %s is not a map", key, strings.Join(parts[:i], "."))
		}
		v, found := m[p]
		if !found {
			return fmt.Errorf("the chart has no value %s (chart/dynamo-platform values.yaml, subchart charts/dynamo-operator)", key)
		}
		cur = v
	}
	return nil
}

// kubectlValueFlags are kubectl's flags that take the next word as their
// value when not written flag=value.
var kubectlValueFlags = map[string]bool{
	"-n": true, "--namespace": true, "-o": true, "--output": true, "-l": true, "--selector": true,
	"-L": true, "--label-columns": true, "--field-selector": true, "--type": true, "-p": true, "--patch": true,
	"-f": true, "--filename": true, "--patch-file": true, "--for": true, "--timeout": true, "--kubeconfig": true,
	"--context": true, "-c": true, "--container": true, "--sort-by": true, "--replicas": true,
	"--cert": true, "--key": true, "--from-literal": true, "--clusterrole": true, "--serviceaccount": true,
}

// kubectlTypeVerbs are the kubectl verbs whose first argument names
// resource types (TYPE[,TYPE], TYPE/NAME) and, for wait and port-forward,
// whose every argument is TYPE/NAME.
var kubectlTypeVerbs = map[string]bool{
	"get": true, "describe": true, "delete": true, "scale": true, "patch": true, "edit": true,
	"label": true, "annotate": true, "wait": true, "port-forward": true, "explain": true,
}

// checkKubectl checks the resource types a kubectl command names.
func (r *Repo) checkKubectl(args []string, t *Tally) []string {
	var positional []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		if strings.HasPrefix(a, "-") {
			if kubectlValueFlags[a] {
				i++
			}
			continue
		}
		positional = append(positional, a)
	}
	if len(positional) < 2 || !kubectlTypeVerbs[positional[0]] {
		return nil
	}
	var types []string
	switch positional[0] {
	case "wait", "port-forward":
		for _, p := range positional[1:] {
			if typ, _, ok := strings.Cut(p, "/"); ok {
				types = append(types, typ)
			}
		}
	default:
		typ, _, _ := strings.Cut(positional[1], "/")
		types = strings.Split(typ, ",")
	}
	var out []string
	for _, typ := range types {
		t.count("resource name")
		if !r.Resources[strings.ToLower(typ)] {
			out = append(out, fmt.Sprintf("%q is neither one of our resources (crds/) nor a built-in one", typ))
		}
	}
	return out
}

// checkYAML parses every document of a YAML block; documents of our kinds
// must pass the operator's admission rules, chart values must name the
// chart's keys.
func (r *Repo) checkYAML(b Block, t *Tally) []Problem {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(b.Text)))
	var out []Problem
	problem := func(format string, args ...any) {
		out = append(out, Problem{Block: b, What: fmt.Sprintf(format, args...)})
	}
	if b.Fragment != "" {
		t.Fragments++
	}
	for {
		raw, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			problem("not valid YAML: %v", err)
			return out
		}
		var doc map[string]any
		if err := yaml.Unmarshal(raw, &doc); err != nil {
			problem("not valid YAML: %v", err)
			continue
		}
		if len(doc) == 0 {
			continue // an empty document, as after a trailing ---
		}
		apiVersion, _ := doc["apiVersion"].(string)
		kind, _ := doc["kind"].(string)
		switch {
		case kind != "" && apiVersion != "":
			t.Objects++
			if !strings.HasPrefix(apiVersion, "nvidia.com/") || b.Fragment != "" {
				continue
			}
			t.Admitted++
			errs, warnings, err := admission.Check(apiVersion+" "+kind, raw)
			switch {
			case err != nil:
				problem("%s %s: %v", apiVersion, kind, err)
			case len(errs) > 0:
				problem("%s %s refused by the admission rules: %v", apiVersion, kind, errs.ToAggregate())
			case len(warnings) > 0:
				problem("%s %s warned by the admission rules (a page teaches no deprecated field): %q", apiVersion, kind, warnings)
			}
		case doc["dynamo-operator"] != nil:
			t.count("chart value")
			for _, key := range leafKeys("", doc) {
				if err := r.ValueExists(key); err != nil {
					problem("%v", err)
				}
			}
		case b.Fragment == "":
			problem("YAML that is neither a Kubernetes object nor chart values: mark it <!-- doccheck: fragment: what it is -->")
		}
	}
}

// leafKeys lists the dotted keys of a values document's leaves (a list or
// a scalar ends a key).
func leafKeys(prefix string, v any) []string {
	m, ok := v.(map[string]any)
	if !ok || len(m) == 0 {
		return []string{prefix}
	}
	var out []string
	for k, sub := range m {
		key := strings.ReplaceAll(k, ".", `\.`)
		if prefix != "" {
			key = prefix + "." + key
		}
		out = append(out, leafKeys(key, sub)...)
	}
	sort.Strings(out)
	return out
}
