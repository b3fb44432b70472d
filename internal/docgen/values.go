package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// value is one documented key of a chart's values.
type value struct {
	key, typ, def, desc string
}

// valuesReference renders the values of the chart in dir and of each
// subchart in its charts/, a subchart's under its name, as a user sets them
// (--set dynamo-operator.logLevel=debug). A key the parent sets for a
// subchart is listed once, as the parent documents it.
//
// As in helm-docs, a key's description is the comment above it that starts
// with "# --", continued by the comment lines after it. A key is one row when
// it holds a scalar or a list, or a map described with "# --" (its whole map
// is the default); an undescribed map is walked into.
func valuesReference(dir string) ([]byte, error) {
	chart, err := chartName(dir)
	if err != nil {
		return nil, err
	}
	vals, err := readValues(filepath.Join(dir, "values.yaml"), "")
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, v := range vals {
		seen[v.key] = true
	}
	subs, err := filepath.Glob(filepath.Join(dir, "charts", "*", "values.yaml"))
	if err != nil {
		return nil, err
	}
	for _, f := range subs {
		name, err := chartName(filepath.Dir(f))
		if err != nil {
			return nil, err
		}
		sv, err := readValues(f, name+".")
		if err != nil {
			return nil, err
		}
		for _, v := range sv {
			if !seen[v.key] {
				vals = append(vals, v)
			}
		}
	}

	var b strings.Builder
	b.WriteString(generatedNote("the chart's values.yaml files and their comments, chart/" + chart))
	fmt.Fprintf(&b, "# Chart values: %s\n\n", chart)
	b.WriteString("Set them with `--set key=value` or a values file. `values.schema.json` refuses unknown keys and wrong\n")
	b.WriteString("types, naming the path. What each setting does in a cluster: [install](../tasks/install-cluster-wide.md),\n")
	b.WriteString("[certificates](../tasks/certificates.md), [monitoring](../tasks/monitoring.md).\n\n")
	b.WriteString("| Key | Type | Default | Description |\n|---|---|---|---|\n")
	for _, v := range vals {
		fmt.Fprintf(&b, "| `%s` | %s | `%s` | %s |\n", v.key, v.typ, strings.ReplaceAll(v.def, "|", `\|`), cell(v.desc))
	}
	return []byte(b.String()), nil
}

// chartName reads the name of the chart in dir from its Chart.yaml.
func chartName(dir string) (string, error) {
	data, err := os.ReadFile(filepath.Join(dir, "Chart.yaml"))
	if err != nil {
		return "", err
	}
	var c struct {
		Name string `yaml:"name"`
	}
	if err := yaml.Unmarshal(data, &c); err != nil || c.Name == "" {
		return "", fmt.Errorf("%s/Chart.yaml: no name (%v)", dir, err)
	}
	return c.Name, nil
}

func readValues(path, prefix string) ([]value, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(doc.Content) == 0 {
		return nil, nil
	}
	var out []value
	if err := walkValues(doc.Content[0], prefix, &out); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return out, nil
}

func walkValues(n *yaml.Node, prefix string, out *[]value) error {
	if n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		key := prefix + k.Value
		desc, described := description(k.HeadComment)
		if v.Kind == yaml.MappingNode && len(v.Content) > 0 && !described {
			if err := walkValues(v, key+".", out); err != nil {
				return err
			}
			continue
		}
		var decoded any
		if err := v.Decode(&decoded); err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		def, err := json.Marshal(decoded)
		if err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		*out = append(*out, value{key: key, typ: typeName(v, decoded), def: string(def), desc: desc})
	}
	return nil
}

// description returns the "# --" part of a key's head comment: the line that
// starts with it and every comment line after it.
func description(comment string) (string, bool) {
	var lines []string
	found := false
	for _, line := range strings.Split(comment, "\n") {
		line = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "#"))
		if rest, ok := strings.CutPrefix(line, "--"); ok && !found {
			found = true
			lines = []string{strings.TrimSpace(rest)}
			continue
		}
		if found {
			lines = append(lines, line)
		}
	}
	return strings.TrimSpace(strings.Join(lines, " ")), found
}

func typeName(n *yaml.Node, decoded any) string {
	switch decoded.(type) {
	case bool:
		return "bool"
	case int:
		return "int"
	case float64:
		return "float"
	case string:
		return "string"
	case []any:
		return "list"
	case map[string]any:
		return "object"
	case nil:
		if n.Kind == yaml.ScalarNode {
			return "string"
		}
	}
	return "object"
}
