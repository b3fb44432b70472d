package command

import (
	"encoding/json"
	"errors"
	"io"
	"strings"

	"github.com/itchyny/gojq"
)

// jq evaluates a filter over the JSON values of stdin with gojq (jq's
// language, in Go), with jq's exit codes: 3 when the filter does not
// compile; with -e, 1 when the last output is false or null and 4 when
// there is none; 2 when the input is not JSON; 5 when the filter fails on it.
//
// Options: -e, -r, -c, -M, -n, -s and their long forms. A file argument is
// refused as unsupported: the simulator's pods have no file system.
func jq(args []string, stdin string) (string, int, error) {
	var exitStatus, raw, nullInput, slurp bool
	filter, haveFilter := "", false
	long := map[string]*bool{"--exit-status": &exitStatus, "--raw-output": &raw, "--null-input": &nullInput, "--slurp": &slurp}
	short := map[rune]*bool{'e': &exitStatus, 'r': &raw, 'n': &nullInput, 's': &slurp}
	ignored := new(bool) // output formatting that changes nothing a probe reads
	long["--compact-output"], long["--monochrome-output"] = ignored, ignored
	short['c'], short['M'] = ignored, ignored
	for _, a := range args {
		switch {
		case strings.HasPrefix(a, "--") && !haveFilter:
			flag, ok := long[a]
			if !ok {
				return "", 2, unsupported("jq option %s", a)
			}
			*flag = true
		case strings.HasPrefix(a, "-") && len(a) > 1 && !haveFilter:
			for _, c := range a[1:] {
				flag, ok := short[c]
				if !ok {
					return "", 2, unsupported("jq option -%c", c)
				}
				*flag = true
			}
		case !haveFilter:
			filter, haveFilter = a, true
		default:
			return "", 2, unsupported("jq of files: the simulator's pods have no file system")
		}
	}
	if !haveFilter {
		filter = "."
	}
	query, err := gojq.Parse(filter)
	if err != nil {
		return "", 3, nil // jq: error: compile error
	}
	code, err := gojq.Compile(query)
	if err != nil {
		return "", 3, nil
	}

	inputs, ok := decodeAll(stdin)
	if !ok {
		return "", 2, nil // jq: parse error (not JSON)
	}
	switch {
	case nullInput:
		inputs = []any{nil}
	case slurp:
		inputs = []any{inputs}
	}

	var out strings.Builder
	var last any
	outputs := 0
	for _, in := range inputs {
		iter := code.Run(in)
		for {
			v, ok := iter.Next()
			if !ok {
				break
			}
			if err, isErr := v.(error); isErr {
				var halt *gojq.HaltError
				if errors.As(err, &halt) { // halt, halt_error: their own exit code
					return out.String(), halt.ExitCode(), nil
				}
				return out.String(), 5, nil
			}
			outputs++
			last = v
			if s, isString := v.(string); isString && raw {
				out.WriteString(s + "\n")
				continue
			}
			b, err := gojq.Marshal(v)
			if err != nil {
				return out.String(), 5, nil
			}
			out.Write(b)
			out.WriteByte('\n')
		}
	}
	if !exitStatus {
		return out.String(), 0, nil
	}
	switch {
	case outputs == 0:
		return out.String(), 4, nil
	case last == nil || last == false:
		return out.String(), 1, nil
	}
	return out.String(), 0, nil
}

// decodeAll reads every JSON value of s, as jq reads its input; numbers stay
// json.Numbers, which gojq compares and prints as jq does.
func decodeAll(s string) ([]any, bool) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var values []any
	for {
		var v any
		if err := dec.Decode(&v); err != nil {
			return values, errors.Is(err, io.EOF)
		}
		values = append(values, v)
	}
}
