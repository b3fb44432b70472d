package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCommand(t *testing.T) {
	type parsed struct{ Sub, Bundle, Process string }
	tests := map[string]struct {
		args []string
		want parsed
	}{
		"containerd's create": {
			args: []string{"--root", "/run/containerd/runc/k8s.io", "--log", "/x/log.json", "--log-format", "json", "--systemd-cgroup",
				"create", "--bundle", "/run/b", "--pid-file", "/run/b/init.pid", "id"},
			want: parsed{Sub: "create", Bundle: "/run/b"},
		},
		"bundle with equals": {
			args: []string{"run", "--bundle=/b", "id"},
			want: parsed{Sub: "run", Bundle: "/b"},
		},
		"short bundle flag": {
			args: []string{"create", "-b", "/b", "id"},
			want: parsed{Sub: "create", Bundle: "/b"},
		},
		"bundle from the working directory": {
			args: []string{"create", "id"},
			want: parsed{Sub: "create", Bundle: "."},
		},
		"exec with a process file": {
			args: []string{"--root", "/r", "exec", "--process", "/tmp/p.json", "--detach", "id"},
			want: parsed{Sub: "exec", Bundle: ".", Process: "/tmp/p.json"},
		},
		"other subcommand": {
			args: []string{"--root", "/r", "delete", "id"},
			want: parsed{Sub: "delete", Bundle: "."},
		},
		"only global flags": {
			args: []string{"--version"},
			want: parsed{},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var got parsed
			got.Sub, got.Bundle, got.Process = command(tc.args)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("command(%q) (-want +got):\n%s", tc.args, diff)
			}
		})
	}
}

// TestFilterFile runs in this test's own process, so the capabilities it
// expects kept or removed follow the test's bounding set.
func TestFilterFile(t *testing.T) {
	bounding, err := boundingSet()
	if err != nil {
		t.Fatal(err)
	}
	// Every known capability is asked for; the kept ones are those the
	// bounding set holds, in the order asked.
	var asked, kept []any
	for n := uint(0); n <= 40; n++ {
		for name, num := range capNumbers {
			if num != n {
				continue
			}
			asked = append(asked, name)
			if bounding&(1<<n) != 0 {
				kept = append(kept, name)
			}
		}
	}
	asked = append(asked, "CAP_FUTURE")
	kept = append(kept, "CAP_FUTURE") // unknown names are runc's to judge
	const limit = "9223372036854775807"
	tests := map[string]struct {
		keys []string
		in   map[string]any
		want map[string]any
	}{
		"bundle config": {
			keys: []string{"process", "capabilities"},
			in: map[string]any{
				"process": map[string]any{"capabilities": map[string]any{"bounding": asked, "effective": asked}},
				"linux":   map[string]any{"resources": map[string]any{"memory": map[string]any{"limit": limit}}},
			},
			want: map[string]any{
				"process": map[string]any{"capabilities": map[string]any{"bounding": kept, "effective": kept}},
				"linux":   map[string]any{"resources": map[string]any{"memory": map[string]any{"limit": limit}}},
			},
		},
		"exec process": {
			keys: []string{"capabilities"},
			in:   map[string]any{"capabilities": map[string]any{"permitted": asked}, "args": []any{"sh"}},
			want: map[string]any{"capabilities": map[string]any{"permitted": kept}, "args": []any{"sh"}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.json")
			writeJSON(t, path, tc.in)
			if err := filterFile(path, tc.keys...); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, readJSON(t, path)); diff != "" {
				t.Errorf("filtered file (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFilterFileKeepsNumbers: a 64-bit limit survives the rewrite digit for
// digit (a float64 would round it).
func TestFilterFileKeepsNumbers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.json")
	raw := `{"process":{"capabilities":{"bounding":["CAP_SYS_RESOURCE","CAP_CHOWN"]}},"linux":{"resources":{"pids":{"limit":9223372036854775807}}}}`
	if err := os.WriteFile(path, []byte(raw), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := filterFile(path, "process", "capabilities"); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	bounding, _ := boundingSet()
	want := raw
	if bounding&(1<<capNumbers["CAP_SYS_RESOURCE"]) == 0 {
		want = `{"linux":{"resources":{"pids":{"limit":9223372036854775807}}},"process":{"capabilities":{"bounding":["CAP_CHOWN"]}}}`
	}
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("config.json (-want +got):\n%s", diff)
	}
}
