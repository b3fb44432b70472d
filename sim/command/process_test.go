package command

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestProcesses(t *testing.T) {
	sh := func(script string) []string { return []string{"/bin/sh", "-c", script} }
	cases := map[string]struct {
		argv []string
		env  map[string]string
		want []Process
	}{
		// Dynamo's planner test graphs: a `componentType: main` frontend.
		"frontend in sh -c, its port from --http-port": {
			argv: sh("python3 -m dynamo.frontend --http-port 8000 --kv-cache-block-size 128 --router-mode kv --no-kv-events"),
			want: []Process{{Kind: Frontend, Module: "dynamo.frontend", HTTPPort: 8000,
				Args: []string{"--http-port", "8000", "--kv-cache-block-size", "128", "--router-mode", "kv", "--no-kv-events"}}},
		},
		"frontend as the operator renders it: the default port": {
			argv: []string{"python3", "-m", "dynamo.frontend"},
			want: []Process{{Kind: Frontend, Module: "dynamo.frontend", HTTPPort: 8000, Args: []string{}}},
		},
		"frontend port from DYN_HTTP_PORT": {
			argv: []string{"python3", "-m", "dynamo.frontend"},
			env:  map[string]string{"DYN_HTTP_PORT": "8787"},
			want: []Process{{Kind: Frontend, Module: "dynamo.frontend", HTTPPort: 8787, Args: []string{}, Env: map[string]string{"DYN_HTTP_PORT": "8787"}}},
		},
		"--http-port=N wins over DYN_HTTP_PORT": {
			argv: []string{"python3", "-u", "-m", "dynamo.frontend", "--http-port=8123"},
			env:  map[string]string{"DYN_HTTP_PORT": "8787"},
			want: []Process{{Kind: Frontend, Module: "dynamo.frontend", HTTPPort: 8123, Args: []string{"--http-port=8123"}, Env: map[string]string{"DYN_HTTP_PORT": "8787"}}},
		},
		"a worker piped into tee": {
			argv: sh("python3 -m dynamo.vllm --model nvidia/Llama-3.1-8B-Instruct-FP8 --no-enable-prefix-caching 2>&1 | tee /tmp/vllm.log"),
			want: []Process{{Kind: Worker, Module: "dynamo.vllm", Args: []string{"--model", "nvidia/Llama-3.1-8B-Instruct-FP8", "--no-enable-prefix-caching"}}},
		},
		"a worker as command and args": {
			argv: []string{"python3", "-m", "dynamo.sglang", "--model-path", "Qwen/Qwen3-0.6B"},
			want: []Process{{Kind: Worker, Module: "dynamo.sglang", Args: []string{"--model-path", "Qwen/Qwen3-0.6B"}}},
		},
		"bash -ex, exec and an assignment before the command": {
			argv: []string{"bash", "-ex", "-c", "cd /workspace && DYN_SYSTEM_PORT=9345 exec python3.12 -m dynamo.trtllm --extra-engine-args $CONFIG"},
			env:  map[string]string{"CONFIG": "/cfg/engine.yaml"},
			want: []Process{{Kind: Worker, Module: "dynamo.trtllm", Args: []string{"--extra-engine-args", "/cfg/engine.yaml"},
				Env: map[string]string{"CONFIG": "/cfg/engine.yaml", "DYN_SYSTEM_PORT": "9345"}}},
		},
		"two programs in one container": {
			argv: sh("python3 -m dynamo.frontend --http-port 8001 & python3 -m dynamo.mocker --model-path m"),
			want: []Process{
				{Kind: Frontend, Module: "dynamo.frontend", HTTPPort: 8001, Args: []string{"--http-port", "8001"}},
				{Kind: Worker, Module: "dynamo.mocker", Args: []string{"--model-path", "m"}},
			},
		},
		"the planner's metrics port": {
			argv: sh("python3 -m planner_sla --environment=kubernetes --backend=vllm --prometheus-port=9085 --no-correction"),
			want: []Process{{Kind: Planner, Module: "planner_sla", MetricsPort: 9085,
				Args: []string{"--environment=kubernetes", "--backend=vllm", "--prometheus-port=9085", "--no-correction"}}},
		},
		"the current planner module": {
			argv: []string{"python3", "-m", "dynamo.planner", "--config", "/c.yaml"},
			want: []Process{{Kind: Planner, Module: "dynamo.planner", Args: []string{"--config", "/c.yaml"}}},
		},
		"the planner's Prometheus is a Dynamo program, not the planner": {
			argv: sh("python3 -m dynamo.planner.prometheus"),
			want: []Process{{Kind: Worker, Module: "dynamo.planner.prometheus", Args: []string{}}},
		},
		"no command: the image's entrypoint":    {argv: nil},
		"a module that is not Dynamo's":         {argv: []string{"python3", "-m", "http.server", "8000"}},
		"a shell that runs no Python module":    {argv: sh("sleep infinity")},
		"a script the shell here cannot read":   {argv: sh("python3 -m dynamo.frontend --http-port $(cat /port)")},
		"one argument holding a whole command":  {argv: []string{"python3 -m dynamo.frontend --http-port 8000"}},
		"python without -m":                     {argv: []string{"python3", "/workspace/serve.py"}},
		"sh -c without a script":                {argv: []string{"sh", "-c"}},
		"a shell script file, not a -c command": {argv: []string{"/bin/bash", "/entrypoint.sh"}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			got := Processes(c.argv, c.env)
			if diff := cmp.Diff(c.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Processes(%q) (-want +got):\n%s", c.argv, diff)
			}
		})
	}
}

func TestSystemPort(t *testing.T) {
	type result struct {
		Port  int
		Serve bool
	}
	cases := map[string]struct {
		env  map[string]string
		want result
	}{
		"nothing":                            {env: map[string]string{"DYN_LOG": "debug"}, want: result{}},
		"DYN_SYSTEM_PORT alone (current)":    {env: map[string]string{"DYN_SYSTEM_PORT": "9345"}, want: result{9345, true}},
		"DYN_SYSTEM_ENABLED alone (older)":   {env: map[string]string{"DYN_SYSTEM_ENABLED": "true"}, want: result{9090, true}},
		"both":                               {env: map[string]string{"DYN_SYSTEM_ENABLED": "true", "DYN_SYSTEM_PORT": "9091"}, want: result{9091, true}},
		"a disabled port":                    {env: map[string]string{"DYN_SYSTEM_PORT": "-1"}, want: result{}},
		"DYN_SYSTEM_ENABLED=false":           {env: map[string]string{"DYN_SYSTEM_ENABLED": "false"}, want: result{}},
		"not a port, enabled: default there": {env: map[string]string{"DYN_SYSTEM_ENABLED": "true", "DYN_SYSTEM_PORT": "x"}, want: result{9090, true}},
	}
	for name, c := range cases {
		port, ok := SystemPort(c.env)
		if diff := cmp.Diff(c.want, result{port, ok}); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
}
