package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// apiReference renders every CRD of dir: its names, versions, and per version
// the fields of spec and status with their schema's descriptions.
//
// A field is listed when its parent has a description, and its own fields
// only when it has one itself: the API types document every field of ours,
// while the embedded Kubernetes types (a pod template, probes, resources)
// lost their descriptions in generation (tools/crdfix), and their fields are
// Kubernetes' own reference's to document, not ours.
func apiReference(dir string) ([]byte, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no CRDs in %s", dir)
	}
	var crds []apiextensionsv1.CustomResourceDefinition
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.UnmarshalStrict(data, &crd); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		crds = append(crds, crd)
	}
	sort.Slice(crds, func(i, j int) bool { return crds[i].Spec.Names.Kind < crds[j].Spec.Names.Kind })

	var b strings.Builder
	b.WriteString(generatedNote("the CRDs in crds/, themselves generated from operator/api by `make generate`"))
	b.WriteString("# API reference\n\n")
	b.WriteString("Every kind of the `nvidia.com` group, its versions, and the fields of each version's spec and status.\n")
	b.WriteString("Fields of embedded Kubernetes types (a pod template, probes, resource requirements) are Kubernetes'\n")
	b.WriteString("own: see the Kubernetes API reference for them.\n\n")
	b.WriteString("| Kind | Short names | Scope | Versions (stored in bold) |\n|---|---|---|---|\n")
	for _, crd := range crds {
		var versions []string
		for _, v := range crd.Spec.Versions {
			if v.Storage {
				versions = append(versions, "**"+v.Name+"**")
			} else {
				versions = append(versions, v.Name)
			}
		}
		fmt.Fprintf(&b, "| [%s](#%s) | %s | %s | %s |\n", crd.Spec.Names.Kind, strings.ToLower(crd.Spec.Names.Kind),
			strings.Join(crd.Spec.Names.ShortNames, ", "), crd.Spec.Scope, strings.Join(versions, ", "))
	}
	for _, crd := range crds {
		fmt.Fprintf(&b, "\n## %s\n\n", crd.Spec.Names.Kind)
		fmt.Fprintf(&b, "`%s`, plural `%s`", crd.Name, crd.Spec.Names.Plural)
		if len(crd.Spec.Names.ShortNames) > 0 {
			fmt.Fprintf(&b, ", short names `%s`", strings.Join(crd.Spec.Names.ShortNames, "`, `"))
		}
		b.WriteString(".\n")
		for _, v := range crd.Spec.Versions {
			fmt.Fprintf(&b, "\n### %s %s/%s\n\n", crd.Spec.Names.Kind, crd.Spec.Group, v.Name)
			var notes []string
			if v.Storage {
				notes = append(notes, "the stored version")
			}
			if !v.Served {
				notes = append(notes, "not served")
			}
			if v.Deprecated {
				notes = append(notes, "deprecated")
			}
			if len(notes) > 0 {
				fmt.Fprintf(&b, "%s.\n\n", strings.ToUpper(notes[0][:1])+strings.Join(notes, ", ")[1:])
			}
			if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
				b.WriteString("No schema.\n")
				continue
			}
			root := v.Schema.OpenAPIV3Schema
			if len(v.AdditionalPrinterColumns) > 0 {
				b.WriteString("`kubectl get` columns: ")
				var cols []string
				for _, c := range v.AdditionalPrinterColumns {
					cols = append(cols, "`"+c.Name+"` ("+c.JSONPath+")")
				}
				b.WriteString(strings.Join(cols, ", ") + ".\n\n")
			}
			b.WriteString("| Field | Type | Description |\n|---|---|---|\n")
			for _, name := range []string{"spec", "status"} {
				prop, ok := root.Properties[name]
				if !ok {
					continue
				}
				fields(&b, name, prop, true)
			}
		}
	}
	return []byte(b.String()), nil
}

// fields writes the row of the field at path and, when it is documented,
// the rows of its own fields (of its items, of its map values).
func fields(b *strings.Builder, path string, s apiextensionsv1.JSONSchemaProps, listed bool) {
	if listed {
		fmt.Fprintf(b, "| `%s` | %s | %s |\n", path, typeOf(s), cell(describe(s)))
	}
	if s.Description == "" {
		return
	}
	children := func(prefix string, s apiextensionsv1.JSONSchemaProps) {
		names := make([]string, 0, len(s.Properties))
		for n := range s.Properties {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			fields(b, prefix+"."+n, s.Properties[n], true)
		}
	}
	children(path, s)
	if s.Items != nil && s.Items.Schema != nil {
		children(path+"[]", *s.Items.Schema)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		children(path+".<name>", *s.AdditionalProperties.Schema)
	}
}

// typeOf names a schema's type as a reader writes it.
func typeOf(s apiextensionsv1.JSONSchemaProps) string {
	switch {
	case s.XIntOrString:
		return "integer or string"
	case s.Type == "array" && s.Items != nil && s.Items.Schema != nil:
		return "[]" + typeOf(*s.Items.Schema)
	case s.Type == "object" && s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil && len(s.Properties) == 0:
		return "map[string]" + typeOf(*s.AdditionalProperties.Schema)
	case s.Type == "":
		return "any"
	}
	return s.Type
}

// describe is a field's description with its enum, default and bounds.
func describe(s apiextensionsv1.JSONSchemaProps) string {
	d := s.Description
	var extra []string
	if len(s.Enum) > 0 {
		var vals []string
		for _, e := range s.Enum {
			vals = append(vals, "`"+string(e.Raw)+"`")
		}
		extra = append(extra, "One of "+strings.Join(vals, ", ")+".")
	}
	if s.Default != nil {
		extra = append(extra, "Default `"+string(s.Default.Raw)+"`.")
	}
	if s.Minimum != nil {
		extra = append(extra, fmt.Sprintf("Minimum %v.", *s.Minimum))
	}
	if s.Maximum != nil {
		extra = append(extra, fmt.Sprintf("Maximum %v.", *s.Maximum))
	}
	if len(extra) > 0 {
		if d != "" {
			d += " "
		}
		d += strings.Join(extra, " ")
	}
	return d
}
