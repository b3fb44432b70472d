package command

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ErrUnsupported marks a command the shell here cannot evaluate: the
// caller must treat it as a failure it reports, never as a success.
var ErrUnsupported = errors.New("cannot be evaluated by the simulator")

func unsupported(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrUnsupported, fmt.Sprintf(format, args...))
}

// Program is a command the caller provides beyond the built-in ones (the
// fake runtime image runs `python3 -m dynamo.*` this way). It gets the
// command's words, its env and standard input, and returns what it wrote
// to standard output and its exit code.
type Program func(ctx context.Context, argv []string, env map[string]string, stdin string) (string, int, error)

// Runner evaluates commands as a container's shell would, with localhost
// being Host.
type Runner struct {
	// Host is the address localhost stands for: the pod's IP.
	Host string
	// Env is the container's environment.
	Env map[string]string
	// Programs run commands by their base name, before the built-ins
	// (which they may replace).
	Programs map[string]Program
	// Stdin is the standard input of a command run without a shell.
	Stdin string
	// Resolve lets curl and wget reach other hosts by name: the fake
	// runtime image in a real pod passes the system's resolver
	// (net.DefaultResolver.LookupHost), whose /etc/resolv.conf names the
	// cluster's DNS. Without it (the simulator's prober: there is no
	// cluster DNS) a name is a command it cannot evaluate.
	Resolve func(ctx context.Context, host string) ([]string, error)

	bg sync.WaitGroup
}

// Result is how a command ended.
type Result struct {
	Code   int
	Stdout string
}

// Exec runs argv, a container's command (`sh -c SCRIPT`, or a program and
// its arguments). An error wrapping ErrUnsupported is a command this shell
// cannot evaluate; any other error is the context ending.
func (r *Runner) Exec(ctx context.Context, argv []string) (Result, error) {
	if len(argv) == 0 {
		return Result{}, unsupported("empty command")
	}
	if script, ok := ShellScript(argv); ok {
		s, err := Parse(script, r.Env)
		if err != nil {
			return Result{}, fmt.Errorf("%w: %v", ErrUnsupported, err)
		}
		return r.Script(ctx, s)
	}
	if isShell(argv[0]) {
		return Result{}, unsupported("%q runs a shell without -c", strings.Join(argv, " "))
	}
	out, code, err := r.run(ctx, argv, r.Env, r.Stdin)
	var ex exitError
	if errors.As(err, &ex) {
		err = nil
	}
	return Result{Code: code, Stdout: out}, err
}

// Script runs a parsed script: `a && b`, `a || b`, `a; b`, `a & b`
// (a in the background), the exit code of the last pipeline run.
func (r *Runner) Script(ctx context.Context, s Script) (Result, error) {
	var res Result
	skip := false
	for _, it := range s {
		if !skip {
			if it.Op == "&" {
				it := it
				r.bg.Add(1)
				go func() {
					defer r.bg.Done()
					_, _, _ = r.pipeline(ctx, it.Pipeline)
				}()
				res.Code = 0
			} else {
				out, code, err := r.pipeline(ctx, it.Pipeline)
				res.Stdout += out
				res.Code = code
				var ex exitError
				if errors.As(err, &ex) {
					res.Code = int(ex)
					return res, nil
				}
				if err != nil {
					return res, err
				}
			}
		}
		switch it.Op {
		case "&&":
			skip = res.Code != 0
		case "||":
			skip = res.Code == 0
		default:
			skip = false
		}
	}
	return res, nil
}

// Wait waits for the commands run in the background.
func (r *Runner) Wait() { r.bg.Wait() }

// exitError is the shell's `exit N`: the script ends with code N.
type exitError int

func (e exitError) Error() string { return "exit " + strconv.Itoa(int(e)) }

// pipeline runs commands one after another, each reading what the one
// before wrote (the programs here read all their input before answering).
func (r *Runner) pipeline(ctx context.Context, p Pipeline) (string, int, error) {
	in, code := "", 0
	for _, c := range p.Cmds {
		out, n, err := r.run(ctx, c.Args, overlay(r.Env, c.Assign), in)
		if err != nil {
			var ex exitError
			if !errors.As(err, &ex) || len(p.Cmds) == 1 {
				return "", n, err
			}
			n = int(ex) // exit in a pipeline ends only its subshell
		}
		if c.StdoutTo != "" {
			out = "" // to /dev/null or a file; nothing reads either here
		}
		in, code = out, n
	}
	if p.Negate {
		if code == 0 {
			code = 1
		} else {
			code = 0
		}
	}
	return in, code, nil
}

func (r *Runner) run(ctx context.Context, argv []string, env map[string]string, stdin string) (string, int, error) {
	if err := ctx.Err(); err != nil {
		return "", 1, err
	}
	for len(argv) > 0 && argv[0] == "exec" {
		argv = argv[1:]
	}
	if len(argv) == 0 {
		return "", 0, nil
	}
	name := base(argv[0])
	if p, ok := r.Programs[name]; ok {
		return p(ctx, argv, env, stdin)
	}
	switch name {
	case "exit":
		code := 0
		if len(argv) > 1 {
			n, err := strconv.Atoi(argv[1])
			if err != nil {
				return "", 2, unsupported("exit %q", argv[1])
			}
			code = n & 0xff
		}
		return "", code, exitError(code)
	case "true", ":":
		return "", 0, nil
	case "false":
		return "", 1, nil
	case "echo":
		args, nl := argv[1:], "\n"
		if len(args) > 0 && args[0] == "-n" {
			args, nl = args[1:], ""
		}
		return strings.Join(args, " ") + nl, 0, nil
	case "cat":
		if len(argv) > 1 {
			return "", 1, unsupported("cat of files: the simulator's pods have no file system")
		}
		return stdin, 0, nil
	case "curl":
		return r.curl(ctx, argv[1:])
	case "wget":
		return r.wget(ctx, argv[1:])
	case "jq":
		return jq(argv[1:], stdin)
	case "grep", "egrep", "fgrep":
		return grep(name, argv[1:], stdin)
	}
	return "", 127, unsupported("%q is not a program the simulator can run", argv[0])
}

// request performs an HTTP request as curl or wget would from inside the
// pod: localhost is the pod, other hosts must be IP addresses unless the
// runner resolves names (the simulator resolves none).
func (r *Runner) request(ctx context.Context, method, rawURL string, headers http.Header, body string, timeout time.Duration, follow, insecure bool) (*http.Response, []byte, error) {
	if !strings.Contains(rawURL, "://") {
		rawURL = "http://" + rawURL
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, nil, unsupported("URL %q: %v", rawURL, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, nil, unsupported("URL scheme %q", u.Scheme)
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	// A name resolved here is still the request's Host, as curl sends it.
	named := ""
	host := u.Hostname()
	switch host {
	case "localhost", "127.0.0.1", "0.0.0.0", "::1", "":
		host = r.Host
	default:
		if net.ParseIP(host) != nil {
			break
		}
		if r.Resolve == nil {
			return nil, nil, unsupported("host name %q: the simulator resolves no names", host)
		}
		addrs, err := r.Resolve(ctx, host)
		if err != nil {
			return nil, nil, err
		}
		if len(addrs) == 0 {
			return nil, nil, &net.DNSError{Err: "no addresses", Name: host, IsNotFound: true}
		}
		named, host = u.Host, addrs[0]
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	u.Host = net.JoinHostPort(host, port)
	req, err := http.NewRequestWithContext(ctx, method, u.String(), strings.NewReader(body))
	if err != nil {
		return nil, nil, unsupported("request: %v", err)
	}
	if named != "" {
		req.Host = named
	}
	for k, v := range headers {
		req.Header[k] = v
	}
	client := &http.Client{Transport: &http.Transport{
		DisableKeepAlives: true,
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: insecure}, //nolint:gosec // only with -k / --no-check-certificate, as asked
	}}
	if !follow {
		client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp, data, err
}

// curl is the subset of curl's options probes use.
func (r *Runner) curl(ctx context.Context, args []string) (string, int, error) {
	var (
		target, writeOut, method, body   string
		fail, failBody, follow, insecure bool
		discard                          bool
		timeout                          time.Duration
		headers                          = http.Header{}
	)
	takes := map[string]bool{"o": true, "m": true, "w": true, "H": true, "X": true, "d": true,
		"--output": true, "--max-time": true, "--write-out": true, "--header": true, "--request": true,
		"--data": true, "--data-raw": true, "--connect-timeout": true, "--retry": true, "--retry-delay": true, "--retry-max-time": true}
	set := func(opt, v string) error {
		switch opt {
		case "o", "--output":
			discard = true // a file nothing here reads
		case "m", "--max-time":
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return unsupported("curl %s %q", opt, v)
			}
			timeout = time.Duration(f * float64(time.Second))
		case "w", "--write-out":
			writeOut = v
		case "H", "--header":
			k, val, ok := strings.Cut(v, ":")
			if !ok {
				return unsupported("curl header %q", v)
			}
			headers.Add(strings.TrimSpace(k), strings.TrimSpace(val))
		case "X", "--request":
			method = v
		case "d", "--data", "--data-raw":
			body = v
			if method == "" {
				method = http.MethodPost
			}
		}
		return nil
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case strings.HasPrefix(a, "--"):
			opt, v, hasV := strings.Cut(a, "=")
			switch opt {
			case "--silent", "--show-error", "--no-progress-meter", "--verbose", "--compressed":
			case "--fail":
				fail = true
			case "--fail-with-body":
				fail, failBody = true, true
			case "--location":
				follow = true
			case "--insecure":
				insecure = true
			default:
				if !takes[opt] {
					return "", 2, unsupported("curl option %q", a)
				}
				if !hasV {
					if i+1 >= len(args) {
						return "", 2, unsupported("curl option %q without a value", a)
					}
					i++
					v = args[i]
				}
				if err := set(opt, v); err != nil {
					return "", 2, err
				}
			}
		case strings.HasPrefix(a, "-") && len(a) > 1:
			for j := 1; j < len(a); j++ {
				c := string(a[j])
				switch c {
				case "s", "S", "v":
				case "f":
					fail = true
				case "L":
					follow = true
				case "k":
					insecure = true
				default:
					if !takes[c] {
						return "", 2, unsupported("curl option -%s", c)
					}
					v := a[j+1:]
					if v == "" {
						if i+1 >= len(args) {
							return "", 2, unsupported("curl option -%s without a value", c)
						}
						i++
						v = args[i]
					}
					if err := set(c, v); err != nil {
						return "", 2, err
					}
					j = len(a)
				}
			}
		default:
			if target != "" {
				return "", 2, unsupported("curl of more than one URL")
			}
			target = a
		}
	}
	if target == "" {
		return "", 2, unsupported("curl without a URL")
	}
	if method == "" {
		method = http.MethodGet
	}
	resp, data, err := r.request(ctx, method, target, headers, body, timeout, follow, insecure)
	if errors.Is(err, ErrUnsupported) {
		return "", 2, err
	}
	if err != nil {
		if ctx.Err() != nil {
			return "", 28, ctx.Err()
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return "", 28, nil // operation timed out
		}
		var dns *net.DNSError
		if errors.As(err, &dns) {
			return "", 6, nil // could not resolve host
		}
		return "", 7, nil // failed to connect
	}
	out := string(data)
	if discard {
		out = ""
	}
	code := 0
	if fail && resp.StatusCode >= 400 {
		code = 22
		if !failBody {
			out = ""
		}
	}
	if writeOut != "" {
		w := strings.NewReplacer(`%{http_code}`, strconv.Itoa(resp.StatusCode), `%{response_code}`, strconv.Itoa(resp.StatusCode), `\n`, "\n").Replace(writeOut)
		if strings.Contains(w, "%{") {
			return "", 2, unsupported("curl --write-out %q", writeOut)
		}
		out += w
	}
	return out, code, nil
}

// wget is the subset of busybox's and GNU wget's options probes use.
func (r *Runner) wget(ctx context.Context, args []string) (string, int, error) {
	var target string
	toStdout, spider := false, false
	var timeout time.Duration
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-q" || a == "--quiet" || a == "--no-verbose" || a == "-nv":
		case a == "--spider":
			spider = true
		case a == "-O" || a == "-qO" || a == "--output-document":
			if i+1 >= len(args) {
				return "", 2, unsupported("wget %s without a file", a)
			}
			i++
			toStdout = args[i] == "-"
		case a == "-O-" || a == "-qO-" || a == "--output-document=-":
			toStdout = true
		case a == "-T" || strings.HasPrefix(a, "--timeout="):
			v := strings.TrimPrefix(a, "--timeout=")
			if a == "-T" {
				if i+1 >= len(args) {
					return "", 2, unsupported("wget -T without a value")
				}
				i++
				v = args[i]
			}
			n, err := strconv.Atoi(v)
			if err != nil {
				return "", 2, unsupported("wget timeout %q", v)
			}
			timeout = time.Duration(n) * time.Second
		case strings.HasPrefix(a, "-"):
			return "", 2, unsupported("wget option %q", a)
		default:
			target = a
		}
	}
	if target == "" {
		return "", 2, unsupported("wget without a URL")
	}
	if !toStdout && !spider {
		return "", 2, unsupported("wget saving a file: the simulator's pods have no file system")
	}
	method := http.MethodGet
	if spider {
		method = http.MethodHead
	}
	resp, data, err := r.request(ctx, method, target, nil, "", timeout, true, false)
	if errors.Is(err, ErrUnsupported) {
		return "", 2, err
	}
	if err != nil {
		if ctx.Err() != nil {
			return "", 4, ctx.Err()
		}
		return "", 4, nil // network failure
	}
	if resp.StatusCode >= 400 {
		return "", 8, nil // server issued an error response
	}
	if spider {
		return "", 0, nil
	}
	return string(data), 0, nil
}

// grep matches standard input's lines.
func grep(name string, args []string, stdin string) (string, int, error) {
	quiet, icase, fixed, invert, count := false, false, name == "fgrep", false, false
	var pattern string
	havePattern := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "-e" && i+1 < len(args) && !havePattern {
			i++
			pattern, havePattern = args[i], true
			continue
		}
		if strings.HasPrefix(a, "-") && len(a) > 1 && !havePattern {
			for _, c := range a[1:] {
				switch c {
				case 'q', 's':
					quiet = quiet || c == 'q'
				case 'i':
					icase = true
				case 'F':
					fixed = true
				case 'E':
				case 'v':
					invert = true
				case 'c':
					count = true
				default:
					return "", 2, unsupported("grep option -%c", c)
				}
			}
			continue
		}
		if havePattern {
			return "", 2, unsupported("grep of files: the simulator's pods have no file system")
		}
		pattern, havePattern = a, true
	}
	if !havePattern {
		return "", 2, unsupported("grep without a pattern")
	}
	if fixed {
		pattern = regexp.QuoteMeta(pattern)
	}
	if icase {
		pattern = "(?i)" + pattern
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return "", 2, unsupported("grep pattern %q: %v", pattern, err)
	}
	var out strings.Builder
	n := 0
	for _, line := range strings.SplitAfter(stdin, "\n") {
		if line == "" {
			continue
		}
		if re.MatchString(strings.TrimSuffix(line, "\n")) != invert {
			n++
			if !quiet && !count {
				out.WriteString(line)
				if !strings.HasSuffix(line, "\n") {
					out.WriteByte('\n')
				}
			}
		}
	}
	if count && !quiet {
		out.WriteString(strconv.Itoa(n) + "\n")
	}
	if n == 0 {
		return out.String(), 1, nil
	}
	return out.String(), 0, nil
}
