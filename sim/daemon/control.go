package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/dynamoctl/dynamo-operator/sim/faults"
	"github.com/dynamoctl/dynamo-operator/sim/workers"
)

// routes is the control API on the Unix socket.
func (d *Daemon) routes(ctx context.Context) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, 200, d.snapshot()) })
	mux.HandleFunc("GET /workers/calls", d.fromWorkers([]any{}, func(m *workers.Manager) any { return m.Recorder.Calls() }))
	mux.HandleFunc("GET /workers/loras", d.fromWorkers(map[string][]string{}, func(m *workers.Manager) any { return m.LoRAs() }))
	mux.HandleFunc("GET /workers", d.fromWorkers(map[string]string{}, func(m *workers.Manager) any { return m.Serving() }))
	mux.HandleFunc("POST /operators", func(w http.ResponseWriter, r *http.Request) { d.serveStartOperator(ctx, w, r) })
	mux.HandleFunc("POST /operators/stop", d.serveStopOperator)
	mux.HandleFunc("POST /fault", func(w http.ResponseWriter, r *http.Request) { d.serveFault(ctx, w, r) })
	return mux
}

// fromWorkers answers with what get reads from the fake workers, or with
// empty before they run.
func (d *Daemon) fromWorkers(empty any, get func(*workers.Manager) any) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		if d.workers == nil {
			writeJSON(w, 200, empty)
			return
		}
		writeJSON(w, 200, get(d.workers))
	}
}

func (d *Daemon) serveStartOperator(ctx context.Context, w http.ResponseWriter, r *http.Request) {
	var req OperatorRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Name == "" {
		writeJSON(w, 400, map[string]string{"error": fmt.Sprintf("request needs a name (%v)", err)})
		return
	}
	op, err := d.startOperator(ctx, req.Name, req.Namespace, req.Args)
	if err != nil {
		writeJSON(w, 500, map[string]string{"error": err.Error()})
		return
	}
	pid, _, _, log := op.status()
	writeJSON(w, 200, map[string]string{"result": fmt.Sprintf("operator %s started (pid %d, log %s)", req.Name, pid, log)})
}

func (d *Daemon) serveStopOperator(w http.ResponseWriter, r *http.Request) {
	var req OperatorRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeJSON(w, 400, map[string]string{"error": err.Error()})
		return
	}
	op, err := d.operator(req.Name)
	if err != nil {
		writeJSON(w, 404, map[string]string{"error": err.Error()})
		return
	}
	op.stop(req.Kill)
	writeJSON(w, 200, map[string]string{"result": "operator " + op.name + " stopped; fault operator-restart --operator " + op.name + " starts it again"})
}

func (d *Daemon) serveFault(ctx context.Context, w http.ResponseWriter, r *http.Request) {
	var req faults.Request
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeJSON(w, 400, map[string]string{"error": "request: " + err.Error()})
		return
	}
	if d.snapshot().Phase != PhaseReady {
		writeJSON(w, 409, map[string]string{"error": "the simulator is not ready"})
		return
	}
	msg, err := faults.Inject(r.Context(), d.faultEnv(ctx), req)
	if err != nil {
		writeJSON(w, 500, map[string]string{"error": err.Error()})
		return
	}
	fmt.Fprintf(d.log, "dynamo-sim: fault %s: %s\n", req.Kind, msg)
	writeJSON(w, 200, map[string]string{"result": msg})
}

// opHandle gives faults an operator process.
type opHandle struct{ op *operatorProc }

func (h opHandle) Kill()          { h.op.stop(true) }
func (h opHandle) Restart() error { return h.op.restart(false) }

func (h opHandle) Start() error {
	h.op.mu.Lock()
	h.op.restarts++
	h.op.mu.Unlock()
	return h.op.start()
}

// OperatorRequest starts (or stops) an operator process.
type OperatorRequest struct {
	Name string `json:"name"`
	// Namespace makes it namespace-scoped; empty is cluster-wide.
	Namespace string   `json:"namespace,omitempty"`
	Args      []string `json:"args,omitempty"`
	// Kill stops it with SIGKILL rather than SIGTERM.
	Kill bool `json:"kill,omitempty"`
}

func (d *Daemon) faultEnv(ctx context.Context) faults.Env {
	var k faults.Kubelet
	if d.kubelet != nil {
		k = d.kubelet
	}
	return faults.Env{
		Kubelet: k,
		Client:  d.client,
		Clock:   d.clock,
		Operator: func(name string) (faults.Operator, error) {
			op, err := d.operator(name)
			if err != nil {
				return nil, err
			}
			return opHandle{op}, nil
		},
		RestartAPIServer: func(rctx context.Context, down time.Duration) error {
			d.setState(func(s *State) { s.Step = "restarting kube-apiserver" })
			defer d.setState(func(s *State) { s.Step = "" })
			return d.cluster.RestartAPIServer(rctx, down)
		},
		SetWorkerDown:       func(pod string, down bool) { d.workers.SetDown(pod, down) },
		SetImagePullFailure: d.admit.SetImagePullFailure,
		RestartWorker:       d.workers.Restart,
		ForgetWorker:        d.workers.Forget,
		OperatorNamespace:   d.o.SystemNamespace,
		WebhookCertSecret:   "dynamo-operator-webhook-cert",
		SetNodeLost: func(node string, lost bool) []string {
			if d.prober != nil {
				d.prober.SetNodeLost(node, lost)
			}
			if lost && d.kubelet != nil {
				return d.kubelet.LoseNode(node)
			}
			return nil
		},
	}
}
