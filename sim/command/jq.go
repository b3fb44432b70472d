package command

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"unicode"
)

// jq evaluates a filter over the JSON values of stdin, with jq's exit codes:
// with -e, 1 when the last output is false or null and 4 when there is
// none; 2 when the input is not JSON; 5 when the filter fails on it.
//
// Filters: `.`, paths (`.a.b`, `.a[0]`, `.["a"]`, `.a?`), literals
// (strings, numbers, true, false, null), `==`, `!=`, `<`, `<=`, `>`, `>=`,
// `and`, `or`, `not`, `length`, `has("k")`, `|` and parentheses. Anything
// else is reported as not evaluable.
func jq(args []string, stdin string) (string, int, error) {
	exitStatus, raw := false, false
	filter, haveFilter := "", false
	for _, a := range args {
		switch {
		case a == "--exit-status":
			exitStatus = true
		case a == "--raw-output":
			raw = true
		case a == "--compact-output" || a == "--monochrome-output":
		case strings.HasPrefix(a, "-") && len(a) > 1 && !strings.HasPrefix(a, "--") && !haveFilter:
			for _, c := range a[1:] {
				switch c {
				case 'e':
					exitStatus = true
				case 'r':
					raw = true
				case 'c', 'M':
				default:
					return "", 2, unsupported("jq option -%c", c)
				}
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
	expr, err := parseJQ(filter)
	if err != nil {
		return "", 3, fmt.Errorf("%w: jq filter %q: %v", ErrUnsupported, filter, err)
	}
	dec := json.NewDecoder(strings.NewReader(stdin))
	dec.UseNumber()
	var out strings.Builder
	var last any
	outputs := 0
	for {
		var v any
		if err := dec.Decode(&v); err != nil {
			if err.Error() == "EOF" {
				break
			}
			return out.String(), 2, nil // jq: parse error (not JSON)
		}
		v = normalize(v)
		res, err := expr(v)
		if err != nil {
			return out.String(), 5, nil
		}
		for _, r := range res {
			outputs++
			last = r
			if s, ok := r.(string); ok && raw {
				out.WriteString(s + "\n")
				continue
			}
			b, _ := json.Marshal(r)
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

// normalize turns json.Numbers into float64, as jq's numbers are.
func normalize(v any) any {
	switch x := v.(type) {
	case json.Number:
		f, _ := x.Float64()
		return f
	case []any:
		for i := range x {
			x[i] = normalize(x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = normalize(x[k])
		}
	}
	return v
}

// jqExpr maps an input to its outputs.
type jqExpr func(any) ([]any, error)

type jqParser struct {
	toks []string
	pos  int
}

func parseJQ(s string) (jqExpr, error) {
	toks, err := lexJQ(s)
	if err != nil {
		return nil, err
	}
	p := &jqParser{toks: toks}
	e, err := p.pipe()
	if err != nil {
		return nil, err
	}
	if p.pos != len(p.toks) {
		return nil, fmt.Errorf("unexpected %q", p.toks[p.pos])
	}
	return e, nil
}

func lexJQ(s string) ([]string, error) {
	var toks []string
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			i++
		case c == '"':
			j := i + 1
			for j < len(s) && s[j] != '"' {
				if s[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(s) {
				return nil, fmt.Errorf("unterminated string")
			}
			toks = append(toks, s[i:j+1])
			i = j + 1
		case strings.HasPrefix(s[i:], "==") || strings.HasPrefix(s[i:], "!=") || strings.HasPrefix(s[i:], "<=") || strings.HasPrefix(s[i:], ">="):
			toks = append(toks, s[i:i+2])
			i += 2
		case strings.IndexByte(".[]()|<>,?", c) >= 0:
			toks = append(toks, string(c))
			i++
		case c == '-' || c >= '0' && c <= '9':
			j := i + 1
			for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == '.' || s[j] == 'e' || s[j] == 'E') {
				j++
			}
			toks = append(toks, s[i:j])
			i = j
		case c == '_' || unicode.IsLetter(rune(c)):
			j := i + 1
			for j < len(s) && (s[j] == '_' || unicode.IsLetter(rune(s[j])) || s[j] >= '0' && s[j] <= '9') {
				j++
			}
			toks = append(toks, s[i:j])
			i = j
		default:
			return nil, fmt.Errorf("%q is not supported", string(c))
		}
	}
	return toks, nil
}

func (p *jqParser) peek() string {
	if p.pos < len(p.toks) {
		return p.toks[p.pos]
	}
	return ""
}

func (p *jqParser) next() string { t := p.peek(); p.pos++; return t }

func (p *jqParser) expect(t string) error {
	if got := p.next(); got != t {
		return fmt.Errorf("expected %q, got %q", t, got)
	}
	return nil
}

// pipe := or ("|" or)*
func (p *jqParser) pipe() (jqExpr, error) {
	left, err := p.or()
	if err != nil {
		return nil, err
	}
	for p.peek() == "|" {
		p.next()
		right, err := p.or()
		if err != nil {
			return nil, err
		}
		l, r := left, right
		left = func(v any) ([]any, error) {
			vs, err := l(v)
			if err != nil {
				return nil, err
			}
			var out []any
			for _, x := range vs {
				o, err := r(x)
				if err != nil {
					return nil, err
				}
				out = append(out, o...)
			}
			return out, nil
		}
	}
	return left, nil
}

func (p *jqParser) or() (jqExpr, error) { return p.binary(p.and, "or") }

func (p *jqParser) and() (jqExpr, error) { return p.binary(p.compare, "and") }

func (p *jqParser) binary(sub func() (jqExpr, error), ops ...string) (jqExpr, error) {
	left, err := sub()
	if err != nil {
		return nil, err
	}
	for isOneOf(p.peek(), ops) {
		op := p.next()
		right, err := sub()
		if err != nil {
			return nil, err
		}
		l, r := left, right
		left = func(v any) ([]any, error) {
			a, err := single(l, v)
			if err != nil {
				return nil, err
			}
			b, err := single(r, v)
			if err != nil {
				return nil, err
			}
			res, err := apply(op, a, b)
			if err != nil {
				return nil, err
			}
			return []any{res}, nil
		}
	}
	return left, nil
}

func (p *jqParser) compare() (jqExpr, error) {
	return p.binary(p.postfix, "==", "!=", "<", "<=", ">", ">=")
}

func isOneOf(t string, ops []string) bool {
	for _, o := range ops {
		if t == o {
			return true
		}
	}
	return false
}

// single evaluates e to exactly one value.
func single(e jqExpr, v any) (any, error) {
	vs, err := e(v)
	if err != nil {
		return nil, err
	}
	if len(vs) != 1 {
		return nil, fmt.Errorf("%d values where one is expected", len(vs))
	}
	return vs[0], nil
}

func truthy(v any) bool { return v != nil && v != false }

func apply(op string, a, b any) (any, error) {
	switch op {
	case "and":
		return truthy(a) && truthy(b), nil
	case "or":
		return truthy(a) || truthy(b), nil
	case "==":
		return reflect.DeepEqual(a, b), nil
	case "!=":
		return !reflect.DeepEqual(a, b), nil
	}
	x, xok := a.(float64)
	y, yok := b.(float64)
	if xok && yok {
		switch op {
		case "<":
			return x < y, nil
		case "<=":
			return x <= y, nil
		case ">":
			return x > y, nil
		case ">=":
			return x >= y, nil
		}
	}
	s, sok := a.(string)
	t, tok := b.(string)
	if sok && tok {
		switch op {
		case "<":
			return s < t, nil
		case "<=":
			return s <= t, nil
		case ">":
			return s > t, nil
		case ">=":
			return s >= t, nil
		}
	}
	return nil, fmt.Errorf("cannot compare %T and %T", a, b)
}

// postfix := primary (path step)*
func (p *jqParser) postfix() (jqExpr, error) {
	e, err := p.primary()
	if err != nil {
		return nil, err
	}
	return p.steps(e)
}

// steps reads `.name`, `[N]`, `["name"]` and `?` after an expression.
func (p *jqParser) steps(e jqExpr) (jqExpr, error) {
	for {
		switch t := p.peek(); {
		case t == "." && p.pos+1 < len(p.toks) && isIdent(p.toks[p.pos+1]):
			p.next()
			e = index(e, p.next())
		case t == "[":
			p.next()
			k := p.next()
			if err := p.expect("]"); err != nil {
				return nil, err
			}
			if strings.HasPrefix(k, `"`) {
				s, err := strconv.Unquote(k)
				if err != nil {
					return nil, err
				}
				e = index(e, s)
				continue
			}
			n, err := strconv.Atoi(k)
			if err != nil {
				return nil, fmt.Errorf("index %q is not supported", k)
			}
			e = index(e, n)
		case t == "?":
			p.next()
			inner := e
			e = func(v any) ([]any, error) {
				out, err := inner(v)
				if err != nil {
					return nil, nil
				}
				return out, nil
			}
		default:
			return e, nil
		}
	}
}

func isIdent(t string) bool {
	return t != "" && (t[0] == '_' || unicode.IsLetter(rune(t[0]))) && !isOneOf(t, []string{"and", "or"})
}

// index is e followed by .key or [n].
func index(e jqExpr, key any) jqExpr {
	return func(v any) ([]any, error) {
		vs, err := e(v)
		if err != nil {
			return nil, err
		}
		out := make([]any, 0, len(vs))
		for _, x := range vs {
			switch k := key.(type) {
			case string:
				switch o := x.(type) {
				case nil:
					out = append(out, nil)
				case map[string]any:
					out = append(out, o[k])
				default:
					return nil, fmt.Errorf("cannot index %T with %q", x, k)
				}
			case int:
				switch o := x.(type) {
				case nil:
					out = append(out, nil)
				case []any:
					if k < 0 {
						k += len(o)
					}
					if k < 0 || k >= len(o) {
						out = append(out, nil)
					} else {
						out = append(out, o[k])
					}
				default:
					return nil, fmt.Errorf("cannot index %T with a number", x)
				}
			}
		}
		return out, nil
	}
}

func (p *jqParser) primary() (jqExpr, error) {
	t := p.next()
	switch {
	case t == ".":
		id := func(v any) ([]any, error) { return []any{v}, nil }
		if isIdent(p.peek()) {
			return index(id, p.next()), nil
		}
		return id, nil // `.`, or `.[...]` whose brackets steps reads
	case t == "(":
		e, err := p.pipe()
		if err != nil {
			return nil, err
		}
		return e, p.expect(")")
	case strings.HasPrefix(t, `"`):
		s, err := strconv.Unquote(t)
		if err != nil {
			return nil, err
		}
		return constant(s), nil
	case t == "true" || t == "false":
		return constant(t == "true"), nil
	case t == "null":
		return constant(nil), nil
	case t == "not":
		return func(v any) ([]any, error) { return []any{!truthy(v)}, nil }, nil
	case t == "length":
		return func(v any) ([]any, error) {
			switch x := v.(type) {
			case nil:
				return []any{0.0}, nil
			case string:
				return []any{float64(len([]rune(x)))}, nil
			case []any:
				return []any{float64(len(x))}, nil
			case map[string]any:
				return []any{float64(len(x))}, nil
			case float64:
				if x < 0 {
					x = -x
				}
				return []any{x}, nil
			}
			return nil, fmt.Errorf("%T has no length", v)
		}, nil
	case t == "has":
		if err := p.expect("("); err != nil {
			return nil, err
		}
		k := p.next()
		if err := p.expect(")"); err != nil {
			return nil, err
		}
		key, err := strconv.Unquote(k)
		if err != nil {
			return nil, fmt.Errorf("has(%s) is not supported", k)
		}
		return func(v any) ([]any, error) {
			m, ok := v.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("cannot check whether %T has a key", v)
			}
			_, has := m[key]
			return []any{has}, nil
		}, nil
	case t != "" && (t[0] == '-' || t[0] >= '0' && t[0] <= '9'):
		f, err := strconv.ParseFloat(t, 64)
		if err != nil {
			return nil, err
		}
		return constant(f), nil
	}
	return nil, fmt.Errorf("%q is not supported", t)
}

func constant(c any) jqExpr { return func(any) ([]any, error) { return []any{c}, nil } }
