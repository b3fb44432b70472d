// Package command reads a container's command line as Dynamo's runtime
// images would run it, for the simulator's fake workers and its prober, and
// for the fake runtime image:
//
//   - Processes: which Dynamo programs a container's command and args start
//     (`python3 -m dynamo.frontend --http-port 8000`, `python3 -m
//     dynamo.vllm ...`, also inside `sh -c "..."`), and so which ports the
//     fake worker serves;
//   - Exec: the outcome of a command a probe runs in the container
//     (`sh -c 'curl -s http://localhost:8000/health | jq -e ".status ==
//     \"healthy\""'`), evaluated with a small shell and the few programs
//     Dynamo's manifests call in probes (curl, wget, grep, and jq through
//     gojq), localhost being the pod. A command it cannot evaluate is an error, never a
//     success.
//
// Scripts are parsed and their words expanded by mvdan.cc/sh (POSIX sh):
// quotes, $VAR and ${VAR...} expansions from the container's env,
// pipelines, `&&`, `||`, `;`, `&`, `!`, redirections of stdout and stderr,
// and leading NAME=value assignments are run. Command substitution,
// globbing, input redirection, control structures and functions are not:
// a script using them is reported as such, and its probe fails.
package command

import (
	"errors"
	"fmt"
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// Simple is one command of a pipeline: its words, the assignments before
// them, and where its standard output goes.
type Simple struct {
	Assign map[string]string
	Args   []string
	// StdoutTo is the file standard output is redirected to ("" for the
	// pipe or the caller).
	StdoutTo string
}

// Pipeline is commands joined by `|`, optionally negated with `!`.
type Pipeline struct {
	Negate bool
	Cmds   []Simple
}

// Item is a pipeline and the operator that follows it: "&&", "||", ";",
// "&" or "" for the last.
type Item struct {
	Pipeline Pipeline
	Op       string
}

// Script is a parsed shell script.
type Script []Item

// Parse parses a shell script with mvdan.cc/sh's POSIX parser and expands
// its words (variables from env; no globbing, nothing read from this
// machine). It reports what it does not understand: the parts of the
// language beyond simple commands, pipelines, lists and redirections of
// output, and expansions that need a running shell (command substitution,
// $?, $!, $$).
func Parse(script string, env map[string]string) (Script, error) {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangPOSIX)).Parse(strings.NewReader(script), "")
	if err != nil {
		return nil, err
	}
	if err := refuseUnsupported(f); err != nil {
		return nil, err
	}
	pairs := make([]string, 0, len(env))
	for k, v := range env {
		pairs = append(pairs, k+"="+v)
	}
	p := &parser{cfg: &expand.Config{Env: expand.ListEnviron(pairs...)}}
	var out Script
	for i, st := range f.Stmts {
		items, err := p.list(st)
		if err != nil {
			return nil, err
		}
		switch {
		case st.Background:
			items[len(items)-1].Op = "&"
		case i < len(f.Stmts)-1:
			items[len(items)-1].Op = ";"
		}
		out = append(out, items...)
	}
	return out, nil
}

// refuseUnsupported walks the script for what Parse does not run.
func refuseUnsupported(f *syntax.File) error {
	var err error
	syntax.Walk(f, func(n syntax.Node) bool {
		if err != nil {
			return false
		}
		switch n := n.(type) {
		case *syntax.CmdSubst:
			err = errors.New("command substitution is not supported")
		case *syntax.ProcSubst, *syntax.ArithmExp, *syntax.ArithmCmd, *syntax.ExtGlob:
			err = fmt.Errorf("%T is not supported", n)
		case *syntax.ParamExp:
			switch n.Param.Value {
			case "?", "!", "$", "-":
				err = fmt.Errorf("$%s is not supported", n.Param.Value)
			}
		}
		return true
	})
	return err
}

type parser struct{ cfg *expand.Config }

// list flattens an and-or list (`a && b || c`, left to right as the shell
// runs it) into items, the last one's Op left empty.
func (p *parser) list(st *syntax.Stmt) ([]Item, error) {
	if b, ok := st.Cmd.(*syntax.BinaryCmd); ok && !st.Negated && len(st.Redirs) == 0 &&
		(b.Op == syntax.AndStmt || b.Op == syntax.OrStmt) {
		left, err := p.list(b.X)
		if err != nil {
			return nil, err
		}
		right, err := p.list(b.Y)
		if err != nil {
			return nil, err
		}
		left[len(left)-1].Op = b.Op.String()
		return append(left, right...), nil
	}
	pl := Pipeline{Negate: st.Negated}
	if err := p.pipeline(&pl, st); err != nil {
		return nil, err
	}
	return []Item{{Pipeline: pl}}, nil
}

// pipeline appends the commands of `a | b | c` to pl.
func (p *parser) pipeline(pl *Pipeline, st *syntax.Stmt) error {
	if b, ok := st.Cmd.(*syntax.BinaryCmd); ok && b.Op == syntax.Pipe && len(st.Redirs) == 0 {
		if b.X.Negated || b.Y.Negated {
			return errors.New("syntax error: ! inside a pipeline")
		}
		if err := p.pipeline(pl, b.X); err != nil {
			return err
		}
		return p.pipeline(pl, b.Y)
	}
	call, ok := st.Cmd.(*syntax.CallExpr)
	if !ok {
		return fmt.Errorf("%s is not supported", describe(st.Cmd))
	}
	cmd, err := p.simple(call, st.Redirs)
	if err != nil {
		return err
	}
	pl.Cmds = append(pl.Cmds, cmd)
	return nil
}

// simple is one command: its assignments, its words and where its
// standard output goes.
func (p *parser) simple(call *syntax.CallExpr, redirs []*syntax.Redirect) (Simple, error) {
	var cmd Simple
	if len(call.Args) == 0 {
		return cmd, errors.New("assignments without a command are not supported")
	}
	for _, a := range call.Assigns {
		if a.Append || a.Naked || a.Index != nil || a.Array != nil {
			return cmd, fmt.Errorf("assignment to %s is not supported", a.Name.Value)
		}
		v := ""
		if a.Value != nil {
			var err error
			if v, err = expand.Literal(p.cfg, a.Value); err != nil {
				return cmd, err
			}
		}
		if cmd.Assign == nil {
			cmd.Assign = map[string]string{}
		}
		cmd.Assign[a.Name.Value] = v
	}
	args, err := expand.Fields(p.cfg, call.Args...)
	if err != nil {
		return cmd, err
	}
	cmd.Args = args
	for _, r := range redirs {
		fd := "1"
		if r.N != nil {
			fd = r.N.Value
		}
		target, err := expand.Literal(p.cfg, r.Word)
		if err != nil {
			return cmd, err
		}
		switch {
		case r.Op == syntax.RdrIn:
			return cmd, errors.New("input redirection is not supported")
		case (r.Op == syntax.RdrOut || r.Op == syntax.AppOut) && fd == "1",
			r.Op == syntax.RdrAll || r.Op == syntax.AppAll:
			cmd.StdoutTo = target
		case (r.Op == syntax.RdrOut || r.Op == syntax.AppOut) && fd == "2":
			// Standard error to a file: the programs here write what
			// matters to standard output only.
		case r.Op == syntax.DplOut && fd == "2" && target == "1":
			// 2>&1: standard error joins standard output.
		case r.Op == syntax.DplOut && fd == "1" && target == "2":
			cmd.StdoutTo = "/dev/stderr"
		default:
			return cmd, fmt.Errorf("redirection %s%s%s is not supported", fd, r.Op, target)
		}
	}
	return cmd, nil
}

// describe names a command form Parse does not run.
func describe(c syntax.Command) string {
	switch c.(type) {
	case *syntax.Subshell:
		return "a subshell"
	case *syntax.Block:
		return "a { } block"
	case *syntax.IfClause, *syntax.WhileClause, *syntax.ForClause, *syntax.CaseClause:
		return "a control structure"
	case *syntax.FuncDecl:
		return "a function"
	case *syntax.BinaryCmd:
		return "|& or a redirected list"
	}
	return fmt.Sprintf("%T", c)
}

// ShellScript reports the script of a shell invocation, `sh -c SCRIPT`
// (also bash, with options such as -e or -ex before -c), and whether argv
// is one.
func ShellScript(argv []string) (string, bool) {
	if len(argv) < 2 || !isShell(argv[0]) {
		return "", false
	}
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		if a == "-c" || (strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.HasSuffix(a, "c")) {
			if i+1 < len(argv) {
				return argv[i+1], true
			}
			return "", false
		}
		if !strings.HasPrefix(a, "-") {
			return "", false
		}
	}
	return "", false
}

func isShell(arg0 string) bool {
	switch base(arg0) {
	case "sh", "bash", "dash", "ash":
		return true
	}
	return false
}

// base is the last element of a path.
func base(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}
