package command

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestJQ(t *testing.T) {
	type result struct {
		Out         string
		Code        int
		Unsupported bool
	}
	const health = `{"status":"ready","uptime":12.5,"endpoints":{"generate":"ready"},"instances":[{"id":7}]}`
	cases := map[string]struct {
		args  []string
		input string
		want  result
	}{
		"identity, compact":               {args: []string{"-c", "."}, input: `{"a": 1}`, want: result{Out: "{\"a\":1}\n"}},
		"-e true":                         {args: []string{"-e", `.status == "ready"`}, input: health, want: result{Out: "true\n"}},
		"-e false":                        {args: []string{"-e", `.status != "ready"`}, input: health, want: result{Out: "false\n", Code: 1}},
		"--exit-status on null":           {args: []string{"--exit-status", ".missing"}, input: health, want: result{Out: "null\n", Code: 1}},
		"-e on no input":                  {args: []string{"-e", "."}, input: "", want: result{Code: 4}},
		"without -e false is fine":        {args: []string{".status == \"x\""}, input: health, want: result{Out: "false\n"}},
		"nested path, -r":                 {args: []string{"-r", ".endpoints.generate"}, input: health, want: result{Out: "ready\n"}},
		"bracket key and array index":     {args: []string{`.["instances"][0].id`}, input: health, want: result{Out: "7\n"}},
		"number comparison":               {args: []string{"-e", ".uptime > 10 and .uptime <= 12.5"}, input: health, want: result{Out: "true\n"}},
		"or, not, pipe":                   {args: []string{"-e", `(.status == "x" or .status == "ready") | not | not`}, input: health, want: result{Out: "true\n"}},
		"has and length":                  {args: []string{"-e", `has("endpoints") and (.instances | length) == 1`}, input: health, want: result{Out: "true\n"}},
		"indexing a string fails (5)":     {args: []string{".status.x"}, input: health, want: result{Code: 5}},
		"? swallows the error":            {args: []string{".status.x?"}, input: health, want: result{}},
		"input that is not JSON (2)":      {args: []string{"-e", ".status"}, input: "Service Unavailable", want: result{Code: 2}},
		"two values, the last decides -e": {args: []string{"-e", ".ok"}, input: `{"ok":true} {"ok":false}`, want: result{Out: "true\nfalse\n", Code: 1}},
		"to_entries and all":              {args: []string{"-e", `.endpoints | to_entries | all(.value == "ready")`}, input: health, want: result{Out: "true\n"}},
		"a filter that does not compile":  {args: []string{"-e", `.status ==`}, input: health, want: result{Code: 3}},
		"-n needs no input":               {args: []string{"-n", "-e", `1 + 1 == 2`}, input: "", want: result{Out: "true\n"}},
		"-s reads every value as one":     {args: []string{"-s", "-c", `map(.ok)`}, input: `{"ok":true} {"ok":false}`, want: result{Out: "[true,false]\n"}},
		"halt_error's exit code":          {args: []string{"-n", `"down" | halt_error(7)`}, input: "", want: result{Code: 7}},
		"an unknown option":               {args: []string{"--tab", "."}, input: "{}", want: result{Code: 2, Unsupported: true}},
		"a file argument":                 {args: []string{".", "/tmp/x.json"}, input: "", want: result{Code: 2, Unsupported: true}},
	}
	for name, c := range cases {
		out, code, err := jq(c.args, c.input)
		if err != nil && !errors.Is(err, ErrUnsupported) {
			t.Fatalf("%s: %v", name, err)
		}
		if diff := cmp.Diff(c.want, result{out, code, err != nil}); diff != "" {
			t.Errorf("%s: jq %q (-want +got):\n%s", name, c.args, diff)
		}
	}
}
