package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/dynamoctl/dynamo-operator/sim/faults"
)

// routes is the control API on the Unix socket.
func (d *Daemon) routes(ctx context.Context) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, 200, d.snapshot()) })
	mux.HandleFunc("GET /workers/calls", func(w http.ResponseWriter, _ *http.Request) {
		if d.workers == nil {
			writeJSON(w, 200, []any{})
			return
		}
		writeJSON(w, 200, d.workers.Recorder.Calls())
	})
	mux.HandleFunc("GET /workers", func(w http.ResponseWriter, _ *http.Request) {
		if d.workers == nil {
			writeJSON(w, 200, map[string]string{})
			return
		}
		writeJSON(w, 200, d.workers.Serving())
	})
	mux.HandleFunc("POST /fault", func(w http.ResponseWriter, r *http.Request) {
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
	})
	return mux
}

type opHandle struct{ d *Daemon }

func (h opHandle) Kill() {
	if h.d.op != nil {
		h.d.op.stop(true)
	}
}

func (h opHandle) Restart() error {
	if h.d.op == nil {
		return fmt.Errorf("the simulator runs no operator")
	}
	return h.d.op.restart(false)
}

func (h opHandle) Start() error {
	if h.d.op == nil {
		return fmt.Errorf("the simulator runs no operator")
	}
	h.d.op.mu.Lock()
	h.d.op.restarts++
	h.d.op.mu.Unlock()
	return h.d.op.start()
}

func (d *Daemon) faultEnv(ctx context.Context) faults.Env {
	return faults.Env{
		Client:   d.client,
		Clock:    d.clock,
		Operator: opHandle{d},
		RestartAPIServer: func(rctx context.Context, down time.Duration) error {
			d.setState(func(s *State) { s.Step = "restarting kube-apiserver" })
			defer d.setState(func(s *State) { s.Step = "" })
			return d.cluster.RestartAPIServer(rctx, down)
		},
		SetWorkerDown:     func(pod string, down bool) { d.workers.SetDown(pod, down) },
		OperatorNamespace: d.o.SystemNamespace,
		WebhookCertSecret: "dynamo-operator-webhook-cert",
	}
}
