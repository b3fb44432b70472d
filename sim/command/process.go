package command

import (
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Kind is the role of a Dynamo program.
type Kind string

// The programs of Dynamo's runtime images.
const (
	// Frontend is `python3 -m dynamo.frontend`: the OpenAI HTTP server.
	Frontend Kind = "frontend"
	// Worker is any other `python3 -m dynamo.<module>` (dynamo.vllm,
	// dynamo.sglang, dynamo.trtllm, dynamo.mocker, ...): an engine with the
	// runtime's system server.
	Worker Kind = "worker"
	// Planner is Dynamo's planner (`python3 -m dynamo.planner...`, or its
	// older module `planner_sla`).
	Planner Kind = "planner"
)

// FrontendPort is the frontend's HTTP port when neither --http-port nor
// DYN_HTTP_PORT says (dynamo.frontend's frontend_args.py).
const FrontendPort = 8000

// Process is a Dynamo program a container starts.
type Process struct {
	Kind Kind
	// Module is the Python module run with -m.
	Module string
	// Args are the module's arguments.
	Args []string
	// Env is the container's env with the script's assignments for this
	// command laid over it.
	Env map[string]string
	// HTTPPort is a frontend's HTTP port: --http-port, else DYN_HTTP_PORT,
	// else 8000.
	HTTPPort int
	// MetricsPort is a planner's --prometheus-port (0: none), where the
	// planner serves its Prometheus metrics.
	MetricsPort int
}

// Processes lists the Dynamo programs a container's command line starts,
// read as its image would run it: `python3 -m MODULE ARGS` itself, or
// inside `sh -c SCRIPT` (every command of the script, so `python3 -m
// dynamo.frontend & python3 -m dynamo.vllm ...` is two). env is the
// container's environment. A command line that starts no Python module, or
// one the shell here cannot read, gives none: the caller falls back to what
// else it knows of the pod.
func Processes(argv []string, env map[string]string) []Process {
	if script, ok := ShellScript(argv); ok {
		s, err := Parse(script, env)
		if err != nil {
			return nil
		}
		var out []Process
		for _, it := range s {
			for _, c := range it.Pipeline.Cmds {
				if p, ok := processOf(c.Args, overlay(env, c.Assign)); ok {
					out = append(out, p)
				}
			}
		}
		return out
	}
	if p, ok := processOf(argv, env); ok {
		return []Process{p}
	}
	return nil
}

// processOf reads `[exec] [env K=V...] python3 -m MODULE ARGS`.
func processOf(argv []string, env map[string]string) (Process, bool) {
	for len(argv) > 0 && (argv[0] == "exec" || base(argv[0]) == "env") {
		isEnv := base(argv[0]) == "env"
		argv = argv[1:]
		for isEnv && len(argv) > 0 && isAssignment(argv[0]) {
			k, v, _ := strings.Cut(argv[0], "=")
			env = overlay(env, map[string]string{k: v})
			argv = argv[1:]
		}
	}
	if len(argv) < 3 || !isPython(argv[0]) {
		return Process{}, false
	}
	i := 1
	for i < len(argv) && strings.HasPrefix(argv[i], "-") && argv[i] != "-m" {
		i++ // interpreter options such as -u
	}
	if i+1 >= len(argv) || argv[i] != "-m" {
		return Process{}, false
	}
	p := Process{Module: argv[i+1], Args: argv[i+2:], Env: env}
	switch {
	case p.Module == "dynamo.frontend":
		p.Kind = Frontend
		p.HTTPPort = FrontendPort
		if n, ok := port(env["DYN_HTTP_PORT"]); ok {
			p.HTTPPort = n
		}
		if v, ok := flag(p.Args, "--http-port"); ok {
			if n, ok := port(v); ok {
				p.HTTPPort = n
			}
		}
	case p.Module == "planner_sla" || p.Module == "dynamo.planner" || p.Module == "dynamo.global_planner" ||
		(strings.HasPrefix(p.Module, "dynamo.planner.") && p.Module != "dynamo.planner.prometheus"):
		p.Kind = Planner
		if v, ok := flag(p.Args, "--prometheus-port"); ok {
			if n, ok := port(v); ok {
				p.MetricsPort = n
			}
		}
	case strings.HasPrefix(p.Module, "dynamo."):
		p.Kind = Worker
	default:
		return Process{}, false
	}
	return p, true
}

// flag finds an argparse option's value, `--name V` or `--name=V`; the
// last one wins, as with argparse.
func flag(args []string, name string) (string, bool) {
	v, found := "", false
	for i, a := range args {
		switch {
		case a == name && i+1 < len(args):
			v, found = args[i+1], true
		case strings.HasPrefix(a, name+"="):
			v, found = strings.TrimPrefix(a, name+"="), true
		}
	}
	return v, found
}

func port(s string) (int, bool) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	return n, err == nil && n > 0 && n < 65536
}

func isPython(arg0 string) bool {
	b := base(arg0)
	if b == "python" || b == "python3" {
		return true
	}
	// python3.12 and the like.
	rest, ok := strings.CutPrefix(b, "python3.")
	_, err := strconv.Atoi(rest)
	return ok && err == nil
}

// overlay is env with over laid on top; env itself is not changed.
func overlay(env, over map[string]string) map[string]string {
	if len(over) == 0 {
		return env
	}
	out := make(map[string]string, len(env)+len(over))
	for k, v := range env {
		out[k] = v
	}
	for k, v := range over {
		out[k] = v
	}
	return out
}

// SystemPort is the port of the runtime's system server (health, LoRAs) in
// env, as Dynamo's runtime reads it, and whether it serves one: older
// runtimes start it only when DYN_SYSTEM_ENABLED=true (on DefaultSystemPort
// unless DYN_SYSTEM_PORT says), current ones (DYN_SYSTEM_ENABLED deprecated)
// whenever DYN_SYSTEM_PORT is a port, which is how Dynamo's operator runs
// its planner (the port, probes on it, no DYN_SYSTEM_ENABLED).
func SystemPort(env map[string]string) (int, bool) {
	n, hasPort := port(env["DYN_SYSTEM_PORT"])
	switch {
	case hasPort:
		return n, true
	case env["DYN_SYSTEM_ENABLED"] == "true":
		return DefaultSystemPort, true
	}
	return 0, false
}

// DefaultSystemPort is the system port when DYN_SYSTEM_PORT does not say.
const DefaultSystemPort = 9090

// Expand replaces $(VAR) with the value of VAR when it is defined, leaves
// it as written when not, and turns $$ into $, as the kubelet does in env
// values, command and args.
func Expand(s string, vals map[string]string) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			name := s[i+2 : i+2+end]
			if v, ok := vals[name]; ok {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+3+end])
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

// isAssignment reports whether w is NAME=value, as env(1) reads its
// arguments.
func isAssignment(w string) bool {
	k, _, ok := strings.Cut(w, "=")
	return ok && syntax.ValidName(k)
}
