// Package daemon is the long-lived simulator process that `dynamo-sim up`
// starts in a network namespace of its own: it runs the control plane, the
// KWOK nodes, the fake workers and the operator, forwards a host loopback
// port to the API server, and serves a control API on a Unix socket in the
// state directory (a path socket, so it is reachable across namespaces).
package daemon

import (
	"encoding/json"
	"os"
	"path/filepath"
	"time"
)

// State is what the daemon publishes about itself at GET /status.
type State struct {
	Pid        int       `json:"pid"`
	Phase      string    `json:"phase"` // starting, ready, failed, stopping
	Step       string    `json:"step"`  // the step in progress while starting
	Error      string    `json:"error,omitempty"`
	HostPort   int       `json:"hostPort"`
	Kubeconfig string    `json:"kubeconfig"`
	Mode       string    `json:"mode"`
	StartedAt  time.Time `json:"startedAt"`
	// ClusterHealthy and ReadyAt time the start: control plane healthy,
	// then everything (nodes Ready, operator running).
	ClusterHealthy time.Duration `json:"clusterHealthy"`
	ReadyAt        time.Duration `json:"readyAfter"`
	// Operator is the primary operator; Operators lists every one.
	Operator struct {
		Pid      int    `json:"pid"`
		Running  bool   `json:"running"`
		Restarts int    `json:"restarts"`
		Log      string `json:"log"`
	} `json:"operator"`
	Operators []OperatorState `json:"operators"`
}

// OperatorState describes one operator process.
type OperatorState struct {
	Name     string   `json:"name"`
	Pid      int      `json:"pid"`
	Running  bool     `json:"running"`
	Restarts int      `json:"restarts"`
	Log      string   `json:"log"`
	Args     []string `json:"args"`
}

// Phases of State.
const (
	PhaseStarting = "starting"
	PhaseReady    = "ready"
	PhaseFailed   = "failed"
	PhaseStopping = "stopping"
)

// Files in the state directory.
func SocketPath(dir string) string { return filepath.Join(dir, "control.sock") }
func PidPath(dir string) string    { return filepath.Join(dir, "daemon.pid") }
func LogPath(dir string) string    { return filepath.Join(dir, "daemon.log") }

// ReadPid returns the daemon's pid from the state directory, 0 if none.
func ReadPid(dir string) int {
	data, err := os.ReadFile(PidPath(dir))
	if err != nil {
		return 0
	}
	var pid int
	if json.Unmarshal(data, &pid) != nil {
		return 0
	}
	return pid
}
