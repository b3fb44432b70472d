package command_test

import (
	"context"
	"errors"
	"net"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dynamoctl/dynamo-operator/sim/command"
	"github.com/dynamoctl/dynamo-operator/sim/workers"
)

// The exec probes of Dynamo's manifests, and the forms around them, run
// against fake workers on 127.0.0.1: a frontend on "8000", a worker whose
// model has loaded on "9090", one still loading on "9091"; nothing listens
// on "9999". The ports in the commands are replaced by the test servers'.
func TestExecProbes(t *testing.T) {
	rec := workers.NewRecorder(clocktesting.NewFakeClock(time.Now()))
	frontend := httptest.NewServer(workers.NewFrontend("ns/fe", "fe", rec))
	defer frontend.Close()
	loaded := httptest.NewServer(workers.NewWorker("ns/w", "w", rec))
	defer loaded.Close()
	loading := httptest.NewServer(workers.NewLoadingWorker("ns/l", "l", rec, time.Hour, false))
	defer loading.Close()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := closed.Addr().String()
	_ = closed.Close()
	portOf := func(addr string) string { _, p, _ := net.SplitHostPort(addr); return p }
	ports := strings.NewReplacer(
		":8000", ":"+portOf(frontend.Listener.Addr().String()),
		":9090", ":"+portOf(loaded.Listener.Addr().String()),
		":9091", ":"+portOf(loading.Listener.Addr().String()),
		":9999", ":"+portOf(closedAddr),
	)
	sh := func(script string) []string { return []string{"/bin/sh", "-c", script} }

	type want struct {
		Code   int
		Stdout string
		// Unsupported: the command is reported as not evaluable.
		Unsupported bool
	}
	cases := map[string]struct {
		argv []string
		want want
	}{
		// Dynamo's planner test graphs (tests/planner/*.yaml): the frontend's
		// readiness, and the planner's and Prometheus' probes.
		"frontend readiness: curl | jq -e (Dynamo's planner graphs)": {
			argv: sh(`curl -s http://localhost:8000/health | jq -e ".status == \"healthy\""`),
			want: want{Code: 0, Stdout: "true\n"},
		},
		"frontend readiness when nothing listens: jq -e sees no input": {
			argv: sh(`curl -s http://localhost:9999/health | jq -e ".status == \"healthy\""`),
			want: want{Code: 4},
		},
		"frontend readiness against a loading worker: false": {
			argv: sh(`curl -s http://localhost:9091/health | jq -e ".status == \"healthy\""`),
			want: want{Code: 1, Stdout: "false\n"},
		},
		"exit 0 (Dynamo's planner graphs)": {argv: sh("exit 0"), want: want{Code: 0}},
		"exit 1":                           {argv: sh("exit 1"), want: want{Code: 1}},
		// The system server's health as the runtime reports it.
		"worker readiness: .status == ready once loaded": {
			argv: sh(`curl -s localhost:9090/health | jq -e '.status == "ready"'`),
			want: want{Code: 0, Stdout: "true\n"},
		},
		"worker readiness: notready while loading": {
			argv: sh(`curl -s localhost:9091/health | jq -e '.status == "ready"'`),
			want: want{Code: 1, Stdout: "false\n"},
		},
		"curl -f fails on 503 (exit 22)": {
			argv: []string{"curl", "-sf", "http://127.0.0.1:9091/health"},
			want: want{Code: 22},
		},
		"curl -fsS on a loaded worker, without a shell": {
			argv: []string{"curl", "-fsS", "-o", "/dev/null", "http://127.0.0.1:9090/health"},
			want: want{Code: 0},
		},
		"curl without -f succeeds on 503": {
			argv: sh("curl -s http://localhost:9091/health > /dev/null"),
			want: want{Code: 0},
		},
		"curl cannot connect (exit 7)": {
			argv: sh("curl -sf --max-time 2 http://localhost:9999/live"),
			want: want{Code: 7},
		},
		"status code through -w into grep": {
			argv: sh(`curl -s -o /dev/null -w "%{http_code}" http://localhost:9091/health | grep -q 200`),
			want: want{Code: 1},
		},
		"grep the body": {
			argv: sh(`curl -s http://localhost:9090/health | grep -q '"status":"ready"'`),
			want: want{Code: 0},
		},
		"|| exit 1 after a failing curl": {
			argv: sh("curl -sf http://localhost:9091/health || exit 1"),
			want: want{Code: 1},
		},
		"&& after a passing curl": {
			argv: sh("curl -sf http://localhost:9090/live && echo ok"),
			want: want{Code: 0, Stdout: `{"endpoints":{"generate":"ready"},"status":"ready"}` + "\nok\n"},
		},
		"jq -e on a missing field is null: fails": {
			argv: sh("curl -s http://localhost:8000/live | jq -e .model"),
			want: want{Code: 1, Stdout: "null\n"},
		},
		"jq -r a field": {
			argv: sh("curl -s http://localhost:8000/live | jq -r .status"),
			want: want{Code: 0, Stdout: "live\n"},
		},
		"jq and, has, length": {
			argv: sh(`curl -s http://localhost:8000/health | jq -e '(.status == "healthy") and has("instances") and (.instances | length) == 0'`),
			want: want{Code: 0, Stdout: "true\n"},
		},
		"wget -qO- piped into grep": {
			argv: sh("wget -qO- http://localhost:8000/health | grep -q healthy"),
			want: want{Code: 0},
		},
		"wget --spider on a loading worker": {
			argv: []string{"wget", "--spider", "-q", "http://127.0.0.1:9091/health"},
			want: want{Code: 8},
		},
		"! negates": {argv: sh("! curl -sf http://localhost:9091/health"), want: want{Code: 0}},
		"jq: every endpoint ready (to_entries, all)": {
			argv: sh(`curl -s localhost:9090/health | jq -e '.endpoints | to_entries | all(.value == "ready")'`),
			want: want{Code: 0, Stdout: "true\n"},
		},
		"jq: a loading worker has no endpoint ready": {
			argv: sh(`curl -s localhost:9091/health | jq -e '.endpoints | to_entries | any(.value == "ready")'`),
			want: want{Code: 1, Stdout: "false\n"},
		},

		// What the simulator cannot evaluate fails, and says so.
		"a file the pod would have":      {argv: []string{"cat", "/tmp/healthy"}, want: want{Code: 1, Unsupported: true}},
		"test -f":                        {argv: sh("test -f /tmp/ready"), want: want{Code: 127, Unsupported: true}},
		"a Python health check":          {argv: []string{"python3", "-c", "import urllib.request"}, want: want{Code: 127, Unsupported: true}},
		"a Service name":                 {argv: sh("curl -sf http://vllm-agg-frontend:8000/health"), want: want{Code: 2, Unsupported: true}},
		"command substitution":           {argv: sh(`[ "$(curl -s localhost:9090/health)" ]`), want: want{Unsupported: true}},
		"an unknown curl option":         {argv: []string{"curl", "--unix-socket", "/run/s.sock", "http://x/health"}, want: want{Code: 2, Unsupported: true}},
		"a shell without -c":             {argv: []string{"/bin/sh", "/healthcheck.sh"}, want: want{Unsupported: true}},
		"an unsupported step after a ||": {argv: sh("curl -sf http://localhost:9091/health || pgrep python3"), want: want{Code: 127, Unsupported: true}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			argv := make([]string, len(c.argv))
			for i, a := range c.argv {
				argv[i] = ports.Replace(a)
			}
			r := &command.Runner{Host: "127.0.0.1"}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			res, err := r.Exec(ctx, argv)
			if err != nil && !errors.Is(err, command.ErrUnsupported) {
				t.Fatalf("Exec: %v", err)
			}
			got := want{Code: res.Code, Stdout: res.Stdout, Unsupported: err != nil}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("%q (-want +got):\n%s\nerror: %v", c.argv, diff, err)
			}
		})
	}
}

// Scripts as the shell reads them: lists left to right, pipelines, !,
// quotes, expansions from the container's env, and where output goes.
func TestParse(t *testing.T) {
	env := map[string]string{"PORT": "9090", "MSG": "two words"}
	cmd := func(args ...string) command.Simple { return command.Simple{Args: args} }
	cases := map[string]struct {
		script string
		want   command.Script
	}{
		"a pipeline and an and-or list": {
			script: `curl -sf localhost:$PORT/health | grep -q ready && echo ok || exit 1`,
			want: command.Script{
				{Pipeline: command.Pipeline{Cmds: []command.Simple{cmd("curl", "-sf", "localhost:9090/health"), cmd("grep", "-q", "ready")}}, Op: "&&"},
				{Pipeline: command.Pipeline{Cmds: []command.Simple{cmd("echo", "ok")}}, Op: "||"},
				{Pipeline: command.Pipeline{Cmds: []command.Simple{cmd("exit", "1")}}},
			},
		},
		"quotes, defaults and field splitting": {
			script: `echo "${MSG}" ${UNSET:-8000} $MSG 'a b'\ c`,
			want:   command.Script{{Pipeline: command.Pipeline{Cmds: []command.Simple{cmd("echo", "two words", "8000", "two", "words", "a b c")}}}},
		},
		"negation, background, sequence": {
			script: "! curl -sf x & true\nfalse",
			want: command.Script{
				{Pipeline: command.Pipeline{Negate: true, Cmds: []command.Simple{cmd("curl", "-sf", "x")}}, Op: "&"},
				{Pipeline: command.Pipeline{Cmds: []command.Simple{cmd("true")}}, Op: ";"},
				{Pipeline: command.Pipeline{Cmds: []command.Simple{cmd("false")}}},
			},
		},
		"assignments and redirections": {
			script: `A=1 curl -s x >/dev/null 2>&1; echo err >&2`,
			want: command.Script{
				{Pipeline: command.Pipeline{Cmds: []command.Simple{{Assign: map[string]string{"A": "1"}, Args: []string{"curl", "-s", "x"}, StdoutTo: "/dev/null"}}}, Op: ";"},
				{Pipeline: command.Pipeline{Cmds: []command.Simple{{Args: []string{"echo", "err"}, StdoutTo: "/dev/stderr"}}}},
			},
		},
	}
	for name, c := range cases {
		got, err := command.Parse(c.script, env)
		if err != nil {
			t.Errorf("%s: Parse(%q): %v", name, c.script, err)
			continue
		}
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Errorf("%s: Parse(%q) (-want +got):\n%s", name, c.script, diff)
		}
	}
}

func TestParseReportsWhatItCannotRead(t *testing.T) {
	cases := map[string]string{
		"unterminated quote":    `curl "http://x`,
		"subshell":              `(curl -s localhost:9090/health)`,
		"backquotes":            "echo `date`",
		"dangling &&":           `curl -s x &&`,
		"$? of a running shell": `curl -s x; echo $?`,
		"a control structure":   `if true; then echo ok; fi`,
		"a function":            `f() { true; }; f`,
		"input redirection":     `jq . < /tmp/x`,
		"empty pipeline member": `curl -s x | | jq .`,
	}
	for name, script := range cases {
		if _, err := command.Parse(script, nil); err == nil {
			t.Errorf("%s: Parse(%q) succeeded", name, script)
		}
	}
}

// A runner that resolves names (the fake runtime image in a real pod, with
// the system's resolver) sends curl and wget to the address a name resolves
// to; a name that does not resolve ends curl with 6 and wget with 4, as
// theirs do.
func TestResolveNames(t *testing.T) {
	rec := workers.NewRecorder(clocktesting.NewFakeClock(time.Now()))
	frontend := httptest.NewServer(workers.NewFrontend("ns/fe", "fe", rec))
	defer frontend.Close()
	addr, port, _ := net.SplitHostPort(frontend.Listener.Addr().String())
	names := map[string][]string{"vllm-agg-frontend": {addr}}
	resolve := func(_ context.Context, host string) ([]string, error) {
		if a, ok := names[host]; ok {
			return a, nil
		}
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	cases := map[string]struct {
		argv []string
		want int
	}{
		"curl of a Service name":               {argv: []string{"curl", "-sf", "http://vllm-agg-frontend:" + port + "/health"}, want: 0},
		"wget of a Service name":               {argv: []string{"wget", "-qO-", "http://vllm-agg-frontend:" + port + "/health"}, want: 0},
		"curl of a name that does not resolve": {argv: []string{"curl", "-sf", "http://vllm-disagg-frontend:" + port + "/health"}, want: 6},
		"wget of a name that does not resolve": {argv: []string{"wget", "-qO-", "http://vllm-disagg-frontend:" + port + "/health"}, want: 4},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			r := &command.Runner{Host: "127.0.0.1", Resolve: resolve}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			res, err := r.Exec(ctx, c.argv)
			if err != nil {
				t.Fatalf("Exec: %v", err)
			}
			if res.Code != c.want {
				t.Errorf("%q: exit %d, want %d", c.argv, res.Code, c.want)
			}
		})
	}
}
