package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/onsi/gomega"

	"github.com/dynamoctl/dynamo-operator/internal/await"
	"github.com/dynamoctl/dynamo-operator/sim/workers"
)

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

// exec runs the program as a probe would, and returns its exit code.
func exec(args ...string) int {
	var out, errOut bytes.Buffer
	return run(context.Background(), args, nil, "", &out, &errOut)
}

// The container's command starts the frontend, which serves its HTTP port;
// the readiness probe of Dynamo's planner graphs, run by the same program as
// the container's shell, passes once it serves; SIGTERM ends it with 0.
func TestFrontendFromItsCommand(t *testing.T) {
	port := freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int)
	go func() {
		var out, errOut bytes.Buffer
		done <- run(ctx, []string{"/bin/sh", "-c", "python3 -m dynamo.frontend --http-port " + port + " --router-mode kv"}, nil, "", &out, &errOut)
	}()
	g := await.New(t)
	probe := []string{"/bin/sh", "-c", `curl -s http://localhost:` + port + `/health | jq -e ".status == \"healthy\""`}
	g.Eventually(func() int { return exec(probe...) }).Should(gomega.Equal(0))
	if code := exec("/usr/bin/curl", "-sf", "http://127.0.0.1:"+port+"/live"); code != 0 {
		t.Errorf("curl -sf /live: exit %d", code)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("the frontend ended with %d after SIGTERM, want 0", code)
	}
	if code := exec(probe...); code == 0 {
		t.Errorf("the readiness probe passed after the frontend stopped")
	}
}

// A worker serves the system port its env names: /live at once, /health
// 503 until the model has loaded.
func TestWorkerSystemPortFromEnv(t *testing.T) {
	port := freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		var out, errOut bytes.Buffer
		run(ctx, []string{Entrypoint, "python3", "-m", "dynamo.vllm", "--model", "m"},
			[]string{"DYN_SYSTEM_PORT=" + port, LoadDelayEnv + "=1h"}, "", &out, &errOut)
	}()
	g := await.New(t)
	g.Eventually(func() int { return exec("curl", "-sf", "http://localhost:"+port+"/live") }).Should(gomega.Equal(0))
	if code := exec("curl", "-sf", "http://localhost:"+port+"/health"); code != 22 {
		t.Errorf("curl -sf /health while the model loads: exit %d, want 22", code)
	}
}

func TestWhatItCannotRun(t *testing.T) {
	cases := map[string]struct {
		args []string
		env  []string
		want int
	}{
		"a module that is not Dynamo's":       {args: []string{"python3", "-m", "http.server"}, want: 1},
		"a program the image does not have":   {args: []string{"/bin/sh", "-c", "nvidia-smi"}, want: 127},
		"the entrypoint without arguments":    {args: []string{Entrypoint}, want: 0},
		"an exec probe's exit code":           {args: []string{"/bin/sh", "-c", "exit 3"}, want: 3},
		"a script the shell cannot read":      {args: []string{"/bin/bash", "-c", "echo $(date)"}, want: 127},
		"an invalid simulated load delay env": {args: []string{"python3", "-m", "dynamo.vllm"}, env: []string{LoadDelayEnv + "=soon"}, want: 2},
	}
	for name, c := range cases {
		var out, errOut bytes.Buffer
		if got := run(context.Background(), c.args, c.env, "", &out, &errOut); got != c.want {
			t.Errorf("%s: exit %d, want %d (stderr %q)", name, got, c.want, errOut.String())
		}
	}
}

// A container's command or an exec probe without a shell runs the image's
// other names as the simulator runs them.
func TestCommandsWithoutAShell(t *testing.T) {
	cases := map[string]struct {
		args       []string
		stdin      string
		want       int
		wantStdout string
	}{
		"sleep":               {args: []string{"/bin/sleep", "0.01"}, want: 0},
		"true":                {args: []string{"/bin/true"}, want: 0},
		"false":               {args: []string{"/bin/false"}, want: 1},
		"echo":                {args: []string{"/bin/echo", "ready"}, want: 0, wantStdout: "ready\n"},
		"cat of its input":    {args: []string{"/bin/cat"}, stdin: "ok", want: 0, wantStdout: "ok"},
		"cat of a file fails": {args: []string{"/bin/cat", "/tmp/healthy"}, want: 1},
	}
	for name, c := range cases {
		var out, errOut bytes.Buffer
		got := run(context.Background(), c.args, nil, c.stdin, &out, &errOut)
		if got != c.want || out.String() != c.wantStdout {
			t.Errorf("%s: exit %d, stdout %q; want %d, %q (stderr %q)", name, got, out.String(), c.want, c.wantStdout, errOut.String())
		}
	}
}

// The control paths read and steer the worker as the simulator's control
// socket does its own, and are not recorded as the worker's calls.
func TestWorkerControl(t *testing.T) {
	port := freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		var out, errOut bytes.Buffer
		run(ctx, []string{"python3", "-m", "dynamo.vllm"}, []string{"DYN_SYSTEM_PORT=" + port}, "", &out, &errOut)
	}()
	base := "http://127.0.0.1:" + port
	call := func(method, path, body string) (int, string) {
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.TrimSpace(string(b))
	}
	g := await.New(t)
	g.Eventually(func() int { code, _ := call(http.MethodGet, "/live", ""); return code }).Should(gomega.Equal(http.StatusOK))
	adapter := `{"lora_name": "a", "source": {"uri": "hf://a"}}`

	steps := []struct {
		method, path, body string
		wantCode           int
		want               string
	}{
		{http.MethodPost, "/v1/loras", adapter, http.StatusOK, ""},
		{http.MethodGet, ControlPath + "loras", "", http.StatusOK, `["a"]`},
		{http.MethodPost, ControlPath + "forget", "", http.StatusOK, `null`},
		{http.MethodPost, "/v1/loras", adapter, http.StatusOK, ""},
		{http.MethodGet, ControlPath + "loras", "", http.StatusOK, `["a"]`},
	}
	for i, s := range steps {
		code, body := call(s.method, s.path, s.body)
		if code != s.wantCode || s.want != "" && body != s.want {
			t.Fatalf("step %d, %s %s: %d %s, want %d %s", i, s.method, s.path, code, body, s.wantCode, s.want)
		}
	}
	_, body := call(http.MethodGet, ControlPath+"calls", "")
	var calls []workers.Call
	if err := json.Unmarshal([]byte(body), &calls); err != nil {
		t.Fatalf("calls: %v: %s", err, body)
	}
	var got []string
	for _, c := range calls {
		got = append(got, fmt.Sprintf("%s %s %d", c.Method, c.Path, c.Status))
	}
	want := []string{"GET /live 200", "POST /v1/loras 200", "POST /v1/loras 200"}
	// The first /live calls are the wait above, as many as it took.
	for len(got) > len(want) && got[1] == "GET /live 200" {
		got = got[1:]
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("recorded calls (-want +got):\n%s", diff)
	}
}
