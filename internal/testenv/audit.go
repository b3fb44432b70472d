package testenv

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// auditPolicy records every request that can change state, at metadata
// level (who, what, which object, which response code), and no reads.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: None
  verbs: ["get", "list", "watch"]
- level: Metadata
`

// AuditEvent is one write the API server recorded.
type AuditEvent struct {
	Verb string `json:"verb"`
	User struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef struct {
		Resource    string `json:"resource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
		Subresource string `json:"subresource"`
		APIGroup    string `json:"apiGroup"`
	} `json:"objectRef"`
	ResponseStatus struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	Stage string `json:"stage"`
	// RequestReceivedTimestamp is when the API server got the request;
	// StageTimestamp when the response was complete: the write had happened.
	RequestReceivedTimestamp metav1.MicroTime `json:"requestReceivedTimestamp"`
	StageTimestamp           metav1.MicroTime `json:"stageTimestamp"`
}

func auditFiles(dir string) (policy, log string, err error) {
	policy = filepath.Join(dir, "audit-policy.yaml")
	log = filepath.Join(dir, "audit.log")
	return policy, log, os.WriteFile(policy, []byte(auditPolicy), 0o600)
}

// AuditEvents reads every write recorded so far. It fails when the Env was
// started without an audit log.
func (e *Env) AuditEvents() ([]AuditEvent, error) {
	if e.auditLog == "" {
		return nil, fmt.Errorf("testenv: started without Options.Audit")
	}
	return ReadAuditLog(e.auditLog)
}

// ReadAuditLog reads the completed requests of a JSON audit log, such as
// the simulator's, oldest first, with the files the API server rotated it
// into (at 100 MB by default: <name>-<timestamp><ext> beside it; a
// 2,000-graph benchmark writes more than that).
func ReadAuditLog(path string) ([]AuditEvent, error) {
	ext := filepath.Ext(path)
	rotated, err := filepath.Glob(strings.TrimSuffix(path, ext) + "-*" + ext)
	if err != nil {
		return nil, err
	}
	sort.Strings(rotated) // the timestamps sort as text
	var out []AuditEvent
	for _, p := range append(rotated, path) {
		events, err := readAuditFile(p)
		if err != nil {
			return nil, err
		}
		out = append(out, events...)
	}
	return out, nil
}

func readAuditFile(path string) ([]AuditEvent, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	var out []AuditEvent
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 1<<24)
	for sc.Scan() {
		var ev AuditEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			// The API server may be writing the last line right now.
			continue
		}
		if ev.Stage == "ResponseComplete" {
			out = append(out, ev)
		}
	}
	return out, sc.Err()
}
