package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/onsi/gomega"

	"github.com/dynamoctl/dynamo-operator/internal/await"
	"github.com/dynamoctl/dynamo-operator/sim/faults"
	"github.com/dynamoctl/dynamo-operator/sim/workers"
)

// Client talks to a daemon's control socket.
type Client struct {
	dir string
	hc  *http.Client
}

// NewClient reaches the daemon of state directory dir.
func NewClient(dir string) *Client {
	sock := SocketPath(dir)
	return &Client{dir: dir, hc: &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		},
	}}}
}

func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		data, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://sim"+path, body)
	if err != nil {
		return err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("the simulator in %s does not answer (is it up?): %w", c.dir, err)
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		var e struct{ Error string }
		if json.Unmarshal(data, &e) == nil && e.Error != "" {
			return fmt.Errorf("%s", e.Error)
		}
		return fmt.Errorf("%s %s: %s", method, path, resp.Status)
	}
	if out != nil {
		return json.Unmarshal(data, out)
	}
	return nil
}

// Status reads the daemon's state.
func (c *Client) Status(ctx context.Context) (State, error) {
	var s State
	err := c.do(ctx, http.MethodGet, "/status", nil, &s)
	return s, err
}

// Fault injects a fault and returns what it did.
func (c *Client) Fault(ctx context.Context, r faults.Request) (string, error) {
	var out struct{ Result string }
	err := c.do(ctx, http.MethodPost, "/fault", r, &out)
	return out.Result, err
}

// WorkerCalls lists every call the fake workers received.
func (c *Client) WorkerCalls(ctx context.Context) ([]workers.Call, error) {
	var out []workers.Call
	err := c.do(ctx, http.MethodGet, "/workers/calls", nil, &out)
	return out, err
}

// WorkerLoRAs lists the adapters each fake worker has loaded, by pod.
func (c *Client) WorkerLoRAs(ctx context.Context) (map[string][]string, error) {
	var out map[string][]string
	err := c.do(ctx, http.MethodGet, "/workers/loras", nil, &out)
	return out, err
}

// Workers lists the serving fake workers, pod -> address.
func (c *Client) Workers(ctx context.Context) (map[string]string, error) {
	var out map[string]string
	err := c.do(ctx, http.MethodGet, "/workers", nil, &out)
	return out, err
}

// WaitReady polls until the daemon is ready or failed, calling progress
// with each new step, until ctx's deadline (Rollout without one).
func (c *Client) WaitReady(ctx context.Context, progress func(State)) (State, error) {
	within := await.Rollout
	if deadline, ok := ctx.Deadline(); ok {
		within = time.Until(deadline)
	}
	last := ""
	var s State
	var failed error
	err := await.Until(ctx, "the simulator ready", func() error {
		st, err := c.Status(ctx)
		if err != nil {
			return err
		}
		s = st
		if s.Step != last || s.Phase != PhaseStarting {
			progress(s)
			last = s.Step
		}
		switch s.Phase {
		case PhaseReady:
			return nil
		case PhaseFailed, PhaseStopping:
			failed = fmt.Errorf("the simulator failed: %s", s.Error)
			return gomega.StopTrying(failed.Error())
		}
		return fmt.Errorf("%s: %s", s.Phase, s.Step)
	}, await.Within(within), await.Every(100*time.Millisecond))
	if failed != nil {
		return s, failed
	}
	return s, err
}

// StartOperator runs another operator process in the simulator.
func (c *Client) StartOperator(ctx context.Context, r OperatorRequest) (string, error) {
	var out struct{ Result string }
	err := c.do(ctx, http.MethodPost, "/operators", r, &out)
	return out.Result, err
}

// StopOperator stops an operator process; it stays down.
func (c *Client) StopOperator(ctx context.Context, name string, kill bool) (string, error) {
	var out struct{ Result string }
	err := c.do(ctx, http.MethodPost, "/operators/stop", OperatorRequest{Name: name, Kill: kill}, &out)
	return out.Result, err
}
