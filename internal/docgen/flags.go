package main

import (
	"fmt"
	"strings"

	"github.com/dynamoctl/dynamo-operator/operator/config"
)

// flagsReference renders every flag and environment variable of the
// operator, as --help lists them.
func flagsReference() []byte {
	var b strings.Builder
	b.WriteString(generatedNote("the operator's flag set, operator/config"))
	b.WriteString("# Operator flags and environment\n\n")
	b.WriteString("`dynamo-operator --help` prints the same. The chart sets the flags it needs; add others with\n")
	b.WriteString("`dynamo-operator.controllerManager.manager.extraArgs` and variables with `dynamo-operator.env`\n")
	b.WriteString("([values](values.md)). A bad flag or variable stops the operator at start with one line naming it and\n")
	b.WriteString("the rule, exit code 2.\n\n")
	b.WriteString("## Flags\n\n| Flag | Default | Meaning |\n|---|---|---|\n")
	for _, f := range config.Flags() {
		def := "`" + f.Default + "`"
		switch f.Default {
		case "":
			def = `""`
		case config.Version: // stamped at build time
			def = "the build version"
		}
		fmt.Fprintf(&b, "| `--%s` | %s | %s |\n", f.Name, def, cell(f.Usage))
	}
	b.WriteString("\n## Environment\n\n| Variable | Meaning |\n|---|---|\n")
	for _, e := range config.Environment() {
		fmt.Fprintf(&b, "| `%s` | %s |\n", e.Name, cell(e.Usage))
	}
	return []byte(b.String())
}

// cell makes text safe for one cell of a Markdown table: one line, its
// pipes escaped, and outside code spans its angle brackets (a "<name>" would
// be read as an HTML tag and vanish).
func cell(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	parts := strings.Split(s, "`")
	for i := 0; i < len(parts); i += 2 {
		parts[i] = strings.NewReplacer("<", "&lt;", ">", "&gt;").Replace(parts[i])
	}
	return strings.ReplaceAll(strings.Join(parts, "`"), "|", `\|`)
}
