package main

import (
	"bytes"
	"strings"
	"testing"
)

func envOf(vars map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	}
}

// Bad configuration must fail before anything contacts a cluster, so these
// cases need no API server.
func TestRunRejectsBadConfiguration(t *testing.T) {
	tests := map[string]struct {
		args []string
		env  map[string]string
		// names must all appear in the error line.
		names []string
	}{
		"out of range port": {args: []string{"--webhook-port=70000"}, names: []string{"--webhook-port"}},
		"unknown flag":      {args: []string{"--bogus=1"}, names: []string{"-bogus"}},
		"unparsable value":  {args: []string{"--kube-api-burst=lots"}, names: []string{"-kube-api-burst"}},
		"several problems": {
			args:  []string{"--restrict-namespace=Team_A", "--leader-election-retry-period=1m"},
			env:   map[string]string{"LOG_LEVEL": "loud"},
			names: []string{"--restrict-namespace", "--leader-election-retry-period", "LOG_LEVEL"},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			var stderr bytes.Buffer
			if code := run(tt.args, envOf(tt.env), &stderr); code != exitInvalidArgs {
				t.Errorf("run(%q) = %d, want %d", tt.args, code, exitInvalidArgs)
			}
			out := stderr.String()
			if !strings.HasSuffix(out, "\n") || strings.Count(out, "\n") != 1 {
				t.Fatalf("stderr is not exactly one line: %q", out)
			}
			if !strings.HasPrefix(out, "dynamo-operator: invalid configuration: ") {
				t.Errorf("stderr %q lacks the dynamo-operator: invalid configuration: prefix", out)
			}
			for _, n := range tt.names {
				if !strings.Contains(out, n) {
					t.Errorf("stderr %q does not name %s", out, n)
				}
			}
		})
	}
}

func TestRunHelp(t *testing.T) {
	var stderr bytes.Buffer
	if code := run([]string{"--help"}, envOf(nil), &stderr); code != exitOK {
		t.Errorf("run(--help) = %d, want %d", code, exitOK)
	}
	if !strings.Contains(stderr.String(), "Usage: dynamo-operator") {
		t.Errorf("run(--help) printed %q, want usage", stderr.String())
	}
}
