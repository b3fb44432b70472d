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
// The shell is a subset of POSIX sh: words with single and double quotes
// and backslashes, $VAR and ${VAR}, pipelines, `&&`, `||`, `;`, `&`, `!`,
// redirections of stdout and stderr, and leading NAME=value assignments.
// Command substitution, globbing, control structures and functions are not
// understood; a script using them is reported as such.
package command

import (
	"fmt"
	"strings"
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

// token is a word or an operator.
type token struct {
	word string
	op   string // "|", "||", "&&", ";", "&", ">", ">>", "<", "2>", "2>>", "2>&1", ">&2", "&>", newline as ";"
}

// lex splits a script into words and operators, expanding variables from
// env. It reports what it does not understand.
func lex(s string, env map[string]string) ([]token, error) {
	var toks []token
	var cur strings.Builder
	inWord := false
	flush := func() {
		if inWord {
			toks = append(toks, token{word: cur.String()})
			cur.Reset()
			inWord = false
		}
	}
	expand := func(i int) (int, error) {
		// s[i] == '$'
		if i+1 >= len(s) {
			cur.WriteByte('$')
			return i + 1, nil
		}
		switch c := s[i+1]; {
		case c == '(' || c == '`':
			return 0, fmt.Errorf("command substitution %q is not supported", s[i:])
		case c == '{':
			end := strings.IndexByte(s[i:], '}')
			if end < 0 {
				return 0, fmt.Errorf("unterminated ${")
			}
			name := s[i+2 : i+end]
			if !isName(name) {
				return 0, fmt.Errorf("parameter expansion ${%s} is not supported", name)
			}
			cur.WriteString(env[name])
			return i + end + 1, nil
		case c == '?':
			return 0, fmt.Errorf("$? is not supported")
		case isNameStart(c):
			j := i + 1
			for j < len(s) && isNameChar(s[j]) {
				j++
			}
			cur.WriteString(env[s[i+1:j]])
			return j, nil
		default:
			cur.WriteByte('$')
			return i + 1, nil
		}
	}
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\'':
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				return nil, fmt.Errorf("unterminated single quote")
			}
			cur.WriteString(s[i+1 : i+1+end])
			inWord = true
			i += end + 2
		case c == '"':
			inWord = true
			i++
			closed := false
			for i < len(s) && !closed {
				switch d := s[i]; {
				case d == '"':
					closed = true
					i++
				case d == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`\n", s[i+1]) >= 0:
					if s[i+1] != '\n' {
						cur.WriteByte(s[i+1])
					}
					i += 2
				case d == '$':
					var err error
					if i, err = expand(i); err != nil {
						return nil, err
					}
				case d == '`':
					return nil, fmt.Errorf("command substitution is not supported")
				default:
					cur.WriteByte(d)
					i++
				}
			}
			if !closed {
				return nil, fmt.Errorf("unterminated double quote")
			}
		case c == '\\':
			if i+1 < len(s) {
				if s[i+1] != '\n' {
					cur.WriteByte(s[i+1])
					inWord = true
				}
				i += 2
			} else {
				i++
			}
		case c == '$':
			inWord = true
			var err error
			if i, err = expand(i); err != nil {
				return nil, err
			}
		case c == '`':
			return nil, fmt.Errorf("command substitution is not supported")
		case c == ' ' || c == '\t':
			flush()
			i++
		case c == '\n':
			flush()
			toks = append(toks, token{op: ";"})
			i++
		case c == '#' && !inWord:
			end := strings.IndexByte(s[i:], '\n')
			if end < 0 {
				i = len(s)
			} else {
				i += end
			}
		case c == '2' && !inWord && strings.HasPrefix(s[i:], "2>&1"):
			toks = append(toks, token{op: "2>&1"})
			i += 4
		case c == '2' && !inWord && strings.HasPrefix(s[i:], "2>>"):
			toks = append(toks, token{op: "2>"})
			i += 3
		case c == '2' && !inWord && strings.HasPrefix(s[i:], "2>"):
			toks = append(toks, token{op: "2>"})
			i += 2
		case c == '1' && !inWord && strings.HasPrefix(s[i:], "1>"):
			i++ // 1> is >
		case strings.IndexByte("|&;<>()", c) >= 0:
			flush()
			op := string(c)
			for _, two := range []string{"||", "&&", ">>", ">&", "&>", ";;"} {
				if strings.HasPrefix(s[i:], two) {
					op = two
				}
			}
			switch op {
			case "(", ")", ";;":
				return nil, fmt.Errorf("%q (subshells, case) is not supported", op)
			case ">&":
				if !strings.HasPrefix(s[i:], ">&2") {
					return nil, fmt.Errorf("redirection %q is not supported", s[i:min(len(s), i+4)])
				}
				op = ">&2"
			}
			toks = append(toks, token{op: op})
			i += len(op)
		default:
			cur.WriteByte(c)
			inWord = true
			i++
		}
	}
	flush()
	return toks, nil
}

// Parse parses a shell script, expanding variables from env.
func Parse(script string, env map[string]string) (Script, error) {
	toks, err := lex(script, env)
	if err != nil {
		return nil, err
	}
	var out Script
	var pl Pipeline
	cmd := Simple{}
	endCmd := func() error {
		if len(cmd.Args) == 0 {
			if len(cmd.Assign) > 0 {
				return fmt.Errorf("assignments without a command are not supported")
			}
			return fmt.Errorf("syntax error: empty command")
		}
		pl.Cmds = append(pl.Cmds, cmd)
		cmd = Simple{}
		return nil
	}
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		switch t.op {
		case "":
			switch {
			case len(cmd.Args) == 0 && t.word == "!" && len(pl.Cmds) == 0:
				pl.Negate = !pl.Negate
			case len(cmd.Args) == 0 && isAssignment(t.word):
				if cmd.Assign == nil {
					cmd.Assign = map[string]string{}
				}
				k, v, _ := strings.Cut(t.word, "=")
				cmd.Assign[k] = v
			default:
				cmd.Args = append(cmd.Args, t.word)
			}
		case ">", ">>", "2>", "&>", "<":
			if i+1 >= len(toks) || toks[i+1].op != "" {
				return nil, fmt.Errorf("syntax error: %s without a file", t.op)
			}
			i++
			switch t.op {
			case ">", ">>", "&>":
				cmd.StdoutTo = toks[i].word
			case "<":
				return nil, fmt.Errorf("input redirection is not supported")
			}
		case "2>&1":
			// Standard error joins standard output; the programs here write
			// what matters to standard output only.
		case ">&2":
			cmd.StdoutTo = "/dev/stderr"
		case "|":
			if err := endCmd(); err != nil {
				return nil, err
			}
		case "&&", "||", ";", "&":
			if len(cmd.Args) == 0 && len(pl.Cmds) == 0 && !pl.Negate && (t.op == ";" || t.op == "&") {
				continue // empty line, or a trailing ;
			}
			if err := endCmd(); err != nil {
				return nil, err
			}
			out = append(out, Item{Pipeline: pl, Op: t.op})
			pl = Pipeline{}
		}
	}
	if len(cmd.Args) > 0 || len(cmd.Assign) > 0 || len(pl.Cmds) > 0 || pl.Negate {
		if err := endCmd(); err != nil {
			return nil, err
		}
		out = append(out, Item{Pipeline: pl})
	}
	if n := len(out); n > 0 && (out[n-1].Op == "&&" || out[n-1].Op == "||") {
		return nil, fmt.Errorf("syntax error: script ends with %s", out[n-1].Op)
	}
	return out, nil
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

func isAssignment(w string) bool {
	k, _, ok := strings.Cut(w, "=")
	return ok && isName(k)
}

func isName(s string) bool {
	if s == "" || !isNameStart(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !isNameChar(s[i]) {
			return false
		}
	}
	return true
}

func isNameStart(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isNameChar(c byte) bool { return isNameStart(c) || (c >= '0' && c <= '9') }
