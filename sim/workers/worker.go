// Package workers runs fake Dynamo workers: for each Running pod of a Dynamo
// component, what Dynamo's runtime would serve, read from the pod's
// containers as its images run them (EndpointsOf): the command and args say
// which programs start (`python3 -m dynamo.frontend` serves the OpenAI HTTP
// port, --http-port or DYN_HTTP_PORT or 8000, whatever the pod's labels;
// `python3 -m dynamo.vllm|sglang|trtllm|...` is an engine worker), and each
// program's env whether it serves the runtime's system server (health
// checks and the LoRA API the DynamoModel controller calls) on <podIP>:
// $DYN_SYSTEM_PORT when DYN_SYSTEM_ENABLED=true or DYN_SYSTEM_PORT is set.
// A container whose command starts no Python module falls back to its env
// and the pod's component type label (frontends serve the HTTP port). The
// system server's /live answers at once; its /health is 503 until a
// simulated model load completes. Every call is recorded so tests and
// `dynamo-sim workers` can see them.
package workers

import (
	"encoding/json"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/dynamoctl/dynamo-operator/sim/command"
)

// Port is the Dynamo system port when DYN_SYSTEM_PORT does not say.
const Port = command.DefaultSystemPort

// FrontendPort is the frontend's HTTP port when DYN_HTTP_PORT does not say.
const FrontendPort = command.FrontendPort

// Call is one request a fake worker received.
type Call struct {
	Time   time.Time `json:"time"`
	Pod    string    `json:"pod"` // namespace/name
	Addr   string    `json:"addr"`
	Method string    `json:"method"`
	Path   string    `json:"path"`
	Body   string    `json:"body,omitempty"`
	Status int       `json:"status"`
}

// LoRA is an adapter loaded on a worker.
type LoRA struct {
	Name   string `json:"lora_name"`
	Source struct {
		URI string `json:"uri"`
	} `json:"source"`
}

// Recorder keeps the calls of every worker.
type Recorder struct {
	clock clock.Clock
	mu    sync.Mutex
	calls []Call
}

// NewRecorder makes a Recorder stamping calls with clk.
func NewRecorder(clk clock.Clock) *Recorder { return &Recorder{clock: clk} }

func (r *Recorder) add(c Call) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c.Time = r.clock.Now()
	r.calls = append(r.calls, c)
}

// Calls returns the calls so far, oldest first.
func (r *Recorder) Calls() []Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Call(nil), r.calls...)
}

// Worker is the state of one fake worker: its loaded adapters and when its
// model is loaded.
type Worker struct {
	pod, addr string
	rec       *Recorder
	// loadedAt is when the simulated model load completes; never set means
	// it never does (the model-never-loads fault).
	loadedAt time.Time
	never    bool

	mu    sync.Mutex
	loras map[string]LoRA
	// failLoads makes every POST /v1/loras fail, as a worker that cannot
	// fetch the adapter does (LoRALoadFailsAnnotation).
	failLoads bool
}

// SetFailLoads makes the worker refuse (true) or accept adapter loads.
func (w *Worker) SetFailLoads(fail bool) {
	w.mu.Lock()
	w.failLoads = fail
	w.mu.Unlock()
}

// Forget drops every loaded adapter, as a runtime that lost its LoRA state
// without its container restarting would.
func (w *Worker) Forget() {
	w.mu.Lock()
	w.loras = map[string]LoRA{}
	w.mu.Unlock()
}

// LoRAs lists the names of the loaded adapters, sorted.
func (w *Worker) LoRAs() []string {
	var out []string
	for _, l := range w.list() {
		out = append(out, l.Name)
	}
	return out
}

// NewWorker makes the fake worker of pod (namespace/name) at addr, its
// model loaded at once.
func NewWorker(pod, addr string, rec *Recorder) *Worker {
	return &Worker{pod: pod, addr: addr, rec: rec, loras: map[string]LoRA{}, loadedAt: rec.clock.Now()}
}

// NewLoadingWorker is NewWorker with a model that takes load to load;
// never is a model that never loads.
func NewLoadingWorker(pod, addr string, rec *Recorder, load time.Duration, never bool) *Worker {
	w := NewWorker(pod, addr, rec)
	w.loadedAt, w.never = w.loadedAt.Add(load), never
	return w
}

// loaded reports whether the simulated model load has completed.
func (w *Worker) loaded() bool { return !w.never && !w.rec.clock.Now().Before(w.loadedAt) }

// ServeHTTP answers the subset of the Dynamo system API the operator uses.
func (w *Worker) ServeHTTP(rw http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	status, resp := w.handle(req.Method, req.URL.Path, body)
	w.rec.add(Call{Pod: w.pod, Addr: w.addr, Method: req.Method, Path: req.URL.Path, Body: string(body), Status: status})
	rw.Header().Set("Content-Type", "application/json")
	rw.WriteHeader(status)
	_ = json.NewEncoder(rw).Encode(resp)
}

func (w *Worker) handle(method, path string, body []byte) (int, any) {
	switch {
	case path == "/health" || path == "/live":
		if method != http.MethodGet {
			return http.StatusMethodNotAllowed, errBody("use GET")
		}
		// The runtime's system server answers both paths with its health:
		// {"status": "ready"|"notready", "uptime": ..., "endpoints": ...}.
		// /live is answered as ready at once: the process is up.
		if path == "/health" && !w.loaded() {
			return http.StatusServiceUnavailable, map[string]any{"status": "notready", "message": "model loading", "endpoints": map[string]string{}}
		}
		return http.StatusOK, map[string]any{"status": "ready", "endpoints": map[string]string{"generate": "ready"}}
	case path == "/v1/loras" && method == http.MethodGet:
		return http.StatusOK, map[string]any{"loras": w.list()}
	case path == "/v1/loras" && method == http.MethodPost:
		var l LoRA
		if err := json.Unmarshal(body, &l); err != nil {
			return http.StatusBadRequest, errBody("body is not JSON: " + err.Error())
		}
		if l.Name == "" || l.Source.URI == "" {
			return http.StatusBadRequest, errBody("lora_name and source.uri are required")
		}
		w.mu.Lock()
		fail := w.failLoads
		if !fail {
			w.loras[l.Name] = l
		}
		w.mu.Unlock()
		if fail {
			return http.StatusInternalServerError, errBody("failed to load LoRA adapter '" + l.Name + "' from " + l.Source.URI + ": simulated failure")
		}
		return http.StatusOK, map[string]string{"status": "success", "message": "LoRA adapter '" + l.Name + "' loaded"}
	case strings.HasPrefix(path, "/v1/loras/") && method == http.MethodDelete:
		name := strings.TrimPrefix(path, "/v1/loras/")
		w.mu.Lock()
		_, ok := w.loras[name]
		delete(w.loras, name)
		w.mu.Unlock()
		if !ok {
			return http.StatusNotFound, errBody("LoRA adapter '" + name + "' is not loaded")
		}
		return http.StatusOK, map[string]string{"status": "success", "message": "LoRA adapter '" + name + "' unloaded"}
	default:
		return http.StatusNotFound, errBody(method + " " + path + " is not served by this fake worker")
	}
}

func (w *Worker) list() []LoRA {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]LoRA, 0, len(w.loras))
	for _, l := range w.loras {
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func errBody(msg string) map[string]string { return map[string]string{"error": msg} }

// Frontend is a fake Dynamo frontend's OpenAI HTTP server: /health and
// /live with the bodies of Dynamo's HTTP service, and an empty model list.
type Frontend struct {
	pod, addr string
	rec       *Recorder
}

// ServeHTTP answers the frontend's health endpoints and /v1/models.
func (f *Frontend) ServeHTTP(rw http.ResponseWriter, req *http.Request) {
	status, resp := http.StatusNotFound, any(errBody(req.Method+" "+req.URL.Path+" is not served by this fake frontend"))
	if req.Method == http.MethodGet {
		switch req.URL.Path {
		case "/health":
			status, resp = http.StatusOK, map[string]any{"status": "healthy", "message": "Service is healthy", "initial_discovery_complete": true, "endpoints": []string{}, "instances": []any{}}
		case "/live":
			status, resp = http.StatusOK, map[string]string{"status": "live", "message": "Service is live"}
		case "/v1/models":
			status, resp = http.StatusOK, map[string]any{"object": "list", "data": []any{}}
		}
	}
	f.rec.add(Call{Pod: f.pod, Addr: f.addr, Method: req.Method, Path: req.URL.Path, Status: status})
	rw.Header().Set("Content-Type", "application/json")
	rw.WriteHeader(status)
	_ = json.NewEncoder(rw).Encode(resp)
}

// NewFrontend makes the fake frontend of pod (namespace/name) at addr.
func NewFrontend(pod, addr string, rec *Recorder) *Frontend {
	return &Frontend{pod: pod, addr: addr, rec: rec}
}

// Metrics is a fake planner's Prometheus metrics server: like
// prometheus_client's, it answers every GET with the metrics.
type Metrics struct {
	pod, addr string
	rec       *Recorder
}

// NewMetrics makes the fake metrics server of pod (namespace/name) at addr.
func NewMetrics(pod, addr string, rec *Recorder) *Metrics {
	return &Metrics{pod: pod, addr: addr, rec: rec}
}

// ServeHTTP answers with an empty exposition.
func (m *Metrics) ServeHTTP(rw http.ResponseWriter, req *http.Request) {
	status := http.StatusOK
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		status = http.StatusMethodNotAllowed
	}
	m.rec.add(Call{Pod: m.pod, Addr: m.addr, Method: req.Method, Path: req.URL.Path, Status: status})
	rw.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	rw.WriteHeader(status)
	if status == http.StatusOK {
		_, _ = io.WriteString(rw, "# simulated planner: no metrics\n")
	}
}
