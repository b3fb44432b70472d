// Command dynamo-runtime is the one program of the fake Dynamo runtime
// image (make runtime-image): the simulator's fake worker, run by a real
// container runtime (kind) under the image names Dynamo's graphs use. It
// behaves as the runtime image does from the container's command, args and
// env, reading them as the simulator does (sim/command, sim/workers):
//
//   - as python3 / python: `-m dynamo.frontend` serves the OpenAI HTTP port
//     (--http-port, DYN_HTTP_PORT, 8000); every `-m dynamo.<module>` serves
//     the runtime's system server when DYN_SYSTEM_PORT or
//     DYN_SYSTEM_ENABLED=true asks (/live at once, /health 503 until the
//     simulated model load is done, the LoRA API); a planner serves its
//     --prometheus-port. It runs until SIGTERM. Other modules fail as a
//     missing module does.
//   - as sh / bash: `-c SCRIPT` run by the simulator's shell, so a
//     container's `sh -c "python3 -m dynamo.frontend ..."` starts the
//     frontend, and an exec probe's `curl ... | jq -e ...` is evaluated
//     against the container's own servers.
//   - as curl, wget, jq, grep: the simulator's subsets of those programs;
//     as sleep, echo, cat, true, false: the shell's (cat of standard input
//     only, as the simulator's pods have no files).
//   - as nvidia_entrypoint.sh (the entrypoint, as NVIDIA's images have one):
//     runs its arguments as a command.
//
// The simulated model load takes DYN_SIM_MODEL_LOAD_DELAY (a duration,
// default 3s), as `dynamo-sim up --model-load-delay`.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/utils/clock"

	"github.com/dynamoctl/dynamo-operator/sim/command"
	"github.com/dynamoctl/dynamo-operator/sim/workers"
)

// Entrypoint is the image's entrypoint, the path NVIDIA's images use
// (tools/image lays the image out and links the other names).
const Entrypoint = "/opt/nvidia/nvidia_entrypoint.sh"

// LoadDelayEnv is the env variable that sets the simulated model load.
const LoadDelayEnv = "DYN_SIM_MODEL_LOAD_DELAY"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	var stdin string
	switch filepath.Base(os.Args[0]) {
	case "jq", "grep", "cat":
		b, _ := io.ReadAll(io.LimitReader(os.Stdin, 1<<20))
		stdin = string(b)
	}
	os.Exit(run(ctx, os.Args, os.Environ(), stdin, os.Stdout, os.Stderr))
}

// run is the program invoked as args[0].
func run(ctx context.Context, args, environ []string, stdin string, stdout, stderr io.Writer) int {
	env := map[string]string{}
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	rt := &runtime{stderr: stderr, loadDelay: 3 * time.Second, rec: workers.NewRecorder(clock.RealClock{})}
	if v, ok := env[LoadDelayEnv]; ok {
		d, err := time.ParseDuration(v)
		if err != nil {
			fmt.Fprintf(stderr, "%s=%q is not a duration\n", LoadDelayEnv, v)
			return 2
		}
		rt.loadDelay = d
	}
	r := &command.Runner{Host: "127.0.0.1", Resolve: net.DefaultResolver.LookupHost, Env: env, Stdin: stdin, Programs: map[string]command.Program{
		"python3": rt.python, "python": rt.python, "sleep": sleep,
	}}
	if filepath.Base(args[0]) == filepath.Base(Entrypoint) {
		args = args[1:]
		if len(args) == 0 {
			return 0
		}
	}
	res, err := r.Exec(ctx, args)
	_, _ = io.WriteString(stdout, res.Stdout)
	if err != nil && ctx.Err() == nil {
		fmt.Fprintf(stderr, "%s: %v\n", filepath.Base(args[0]), err)
		if res.Code == 0 {
			return 127
		}
	}
	return res.Code
}

type runtime struct {
	stderr    io.Writer
	loadDelay time.Duration
	rec       *workers.Recorder
}

// python runs `python3 -m dynamo.<module>` as the fake worker until ctx
// ends (SIGTERM).
func (rt *runtime) python(ctx context.Context, argv []string, env map[string]string, _ string) (string, int, error) {
	procs := command.Processes(argv, env)
	if len(procs) == 0 {
		fmt.Fprintf(rt.stderr, "%s: the fake Dynamo runtime runs only `python3 -m dynamo.<module>` (and the planner), not %q\n", argv[0], strings.Join(argv, " "))
		return "", 1, nil
	}
	p := procs[0]
	name, _ := os.Hostname()
	handlers := map[int]http.Handler{}
	if port, ok := command.SystemPort(p.Env); ok {
		handlers[port] = control(workers.NewLoadingWorker(name, ":"+strconv.Itoa(port), rt.rec, rt.loadDelay, false), rt.rec)
	}
	if p.Kind == command.Frontend {
		if _, taken := handlers[p.HTTPPort]; !taken {
			handlers[p.HTTPPort] = workers.NewFrontend(name, ":"+strconv.Itoa(p.HTTPPort), rt.rec)
		}
	}
	if p.MetricsPort != 0 {
		if _, taken := handlers[p.MetricsPort]; !taken {
			handlers[p.MetricsPort] = workers.NewMetrics(name, ":"+strconv.Itoa(p.MetricsPort), rt.rec)
		}
	}
	errs := make(chan error, len(handlers))
	var servers []*http.Server
	for port, h := range handlers {
		ln, err := net.Listen("tcp", ":"+strconv.Itoa(port))
		if err != nil {
			for _, s := range servers {
				_ = s.Close()
			}
			fmt.Fprintf(rt.stderr, "%s: %v\n", p.Module, err)
			return "", 1, nil
		}
		s := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
		servers = append(servers, s)
		go func() { errs <- s.Serve(ln) }()
		fmt.Fprintf(rt.stderr, "%s (simulated): serving on :%d\n", p.Module, port)
	}
	select {
	case <-ctx.Done():
	case err := <-errs:
		if !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(rt.stderr, "%s: %v\n", p.Module, err)
		}
	}
	for _, s := range servers {
		_ = s.Close()
	}
	return "", 0, nil
}

// ControlPath prefixes the system port's paths that tests call to read and
// steer the fake worker, as the simulator's control socket does for its
// own (the feature suite on kind, through the API server's pod proxy):
//
//	GET  /sim/calls             the calls the worker received, oldest first (workers.Call, Pod without namespace)
//	GET  /sim/loras             the names of the loaded adapters
//	POST /sim/forget            drop the adapters without restarting
//
// These calls are not recorded: they are not the operator's.
const ControlPath = "/sim/"

// control serves ControlPath for w, and the rest as w.
func control(w *workers.Worker, rec *workers.Recorder) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", w)
	reply := func(rw http.ResponseWriter, v any) {
		rw.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(rw).Encode(v)
	}
	mux.HandleFunc("GET "+ControlPath+"calls", func(rw http.ResponseWriter, _ *http.Request) { reply(rw, rec.Calls()) })
	mux.HandleFunc("GET "+ControlPath+"loras", func(rw http.ResponseWriter, _ *http.Request) { reply(rw, w.LoRAs()) })
	mux.HandleFunc("POST "+ControlPath+"forget", func(rw http.ResponseWriter, _ *http.Request) {
		w.Forget()
		reply(rw, w.LoRAs())
	})
	return mux
}

// sleep is sleep(1): seconds, or infinity.
func sleep(ctx context.Context, argv []string, _ map[string]string, _ string) (string, int, error) {
	if len(argv) != 2 {
		return "", 1, fmt.Errorf("%w: sleep %q", command.ErrUnsupported, argv[1:])
	}
	var d time.Duration
	if argv[1] != "infinity" {
		f, err := strconv.ParseFloat(strings.TrimSuffix(argv[1], "s"), 64)
		if err != nil {
			return "", 1, fmt.Errorf("%w: sleep %q", command.ErrUnsupported, argv[1])
		}
		d = time.Duration(f * float64(time.Second))
	}
	if d == 0 && argv[1] == "infinity" {
		<-ctx.Done()
		return "", 0, nil
	}
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
	return "", 0, nil
}
