package doccheck

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Placeholders are the values the pages' placeholders stand for, on the
// simulator and in the static checks alike. A <placeholder> in a command
// that this table lacks is an error, so none is ever passed over silently;
// the bare words (NS, NAME, REGISTRY) count as placeholders only where
// they stand as a whole word or before a slash, never inside another word
// (custom-columns=NAME:...). The app version is the chart's appVersion.
func Placeholders(appVersion string) map[string]string {
	return map[string]string{
		"<appVersion>":                 appVersion,
		"<new version>":                appVersion,
		"<new release tag>":            "v" + appVersion,
		"<revision of v0.2.1>":         "1",
		"<your Hugging Face token>":    "hf_doccheck",
		"<cluster>":                    "dynamo",
		"<component>":                  "vllm-agg-vllmdecodeworker",
		"<prometheus service account>": "prometheus-k8s",
		"<that service account>":       "prometheus-k8s",
		"<its namespace>":              "monitoring",
		"<worker address>":             "10.244.0.2:9090", // the simulator's runner names a live one
		"REGISTRY":                     "registry.example.com",
		"NS":                           "default",
		"NAME":                         "vllm-agg",
	}
}

var (
	anglePlaceholder = regexp.MustCompile(`<[A-Za-z][^<>\n]*>`)
	barePlaceholder  = regexp.MustCompile(`(^|[\s/=])(REGISTRY|NS|NAME)([\s/]|$)`)
)

// Substitute replaces the placeholders of a shell block by their values.
// It fails on a <placeholder> the table does not know.
func Substitute(text string, values map[string]string) (string, error) {
	var unknown []string
	text = anglePlaceholder.ReplaceAllStringFunc(text, func(p string) string {
		v, ok := values[p]
		if !ok {
			unknown = append(unknown, p)
			return p
		}
		return v
	})
	if len(unknown) > 0 {
		return "", fmt.Errorf("placeholders %q have no value in doccheck.Placeholders: add one, or write the command without", unknown)
	}
	// Twice: adjacent placeholders share the separator between them.
	for range 2 {
		text = barePlaceholder.ReplaceAllStringFunc(text, func(m string) string {
			sub := barePlaceholder.FindStringSubmatch(m)
			return sub[1] + values[sub[2]] + sub[3]
		})
	}
	return text, nil
}

// Command is one simple command of a shell block, with its words as the
// shell would pass them where they are literal (quotes removed); a word
// with an expansion keeps its source text.
type Command struct {
	Line int // within the block, 1-based
	Args []string
}

// String is the command as a reader sees it.
func (c Command) String() string { return strings.Join(c.Args, " ") }

// ParseShell parses a block's (substituted) text.
func ParseShell(text string) (*syntax.File, error) {
	return syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(text), "")
}

// Commands lists every simple command of the block, those inside $(...)
// and loops included, in source order.
func Commands(f *syntax.File) []Command {
	var out []Command
	syntax.Walk(f, func(n syntax.Node) bool {
		call, ok := n.(*syntax.CallExpr)
		if !ok || len(call.Args) == 0 {
			return true
		}
		c := Command{Line: int(call.Pos().Line())}
		for _, w := range call.Args {
			c.Args = append(c.Args, wordText(w))
		}
		out = append(out, c)
		return true
	})
	return out
}

// wordText is a word with its quotes removed where its parts are literal.
func wordText(w *syntax.Word) string {
	var b strings.Builder
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			b.WriteString(p.Value)
		case *syntax.SglQuoted:
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				if l, ok := q.(*syntax.Lit); ok {
					b.WriteString(l.Value)
				} else {
					b.WriteString(printed(q))
				}
			}
		default:
			b.WriteString(printed(p))
		}
	}
	return b.String()
}

func printed(n syntax.Node) string {
	var buf bytes.Buffer
	if err := syntax.NewPrinter().Print(&buf, n); err != nil {
		return fmt.Sprintf("<%v>", err)
	}
	return buf.String()
}

// Statement is one top-level statement of a shell block, as the simulator
// runs it.
type Statement struct {
	Line int
	Text string // printed back, after the rules below
	// NotRun says why the simulator does not run it; empty: it runs.
	NotRun string
}

// Statements splits a block into its top-level statements and applies
// the simulator's two rules, both reported: a make command is not run (it
// builds, tests or starts a cluster of its own; the static checks prove
// its target exists), and a kubectl watch (-w, --watch) runs once, without
// the flag, since it would never end; a watch of one named object (kubectl
// get dgd vllm-agg -w, "Ready once ...") first waits for it to be Ready,
// as its reader does.
func Statements(f *syntax.File) []Statement {
	var out []Statement
	for _, st := range f.Stmts {
		s := Statement{Line: int(st.Pos().Line())}
		if call, ok := st.Cmd.(*syntax.CallExpr); ok && len(call.Args) > 0 {
			switch wordText(call.Args[0]) {
			case "make":
				s.NotRun = "make builds, tests or starts a cluster of its own"
			case "kubectl":
				s.Text = unwatched(call)
			}
		}
		if s.Text == "" {
			s.Text = printed(st)
		} else if st.Background || st.Negated || len(st.Redirs) > 0 {
			s.Text = printed(st) // a watch only stands alone
		}
		out = append(out, s)
	}
	return out
}

// unwatched is a kubectl command without its watch flag, preceded by a
// kubectl wait for Ready when it watched one named object; "" when it did
// not watch.
func unwatched(call *syntax.CallExpr) string {
	var (
		args       []*syntax.Word
		watched    bool
		positional []string
		namespace  []string
	)
	for i := 0; i < len(call.Args); i++ {
		a := call.Args[i]
		t := wordText(a)
		switch {
		case t == "-w" || t == "--watch":
			watched = true
			continue
		case (t == "-n" || t == "--namespace") && i+1 < len(call.Args):
			namespace = []string{t, wordText(call.Args[i+1])}
			args = append(args, a, call.Args[i+1])
			i++
			continue
		case strings.HasPrefix(t, "-"):
		default:
			positional = append(positional, t)
		}
		args = append(args, a)
	}
	if !watched {
		return ""
	}
	call.Args = args
	get := printed(call)
	if len(positional) != 4 || positional[1] != "get" || strings.Contains(positional[2], ",") {
		return get
	}
	wait := append([]string{"kubectl"}, namespace...)
	wait = append(wait, "wait", "--for=condition=Ready", "--timeout=5m", positional[2]+"/"+positional[3])
	return strings.Join(wait, " ") + " && " + get
}
