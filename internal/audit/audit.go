// Package audit is the API server audit log the tests and the simulator
// count writes from: one policy, which records every write at metadata
// level (who, which verb, which object, the response code, when) and no
// reads, and one reader of the JSON log it produces.
package audit

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Policy is the audit policy (kube-apiserver --audit-policy-file) for
// users' writes, or every user's when none is named. A cluster that runs
// many writers no test counts (the simulator's nodes, kubelets and
// controllers) names the users it counts, so that its log stays cheap at
// scale.
func Policy(users ...string) []byte {
	who := ""
	if len(users) > 0 {
		quoted := make([]string, len(users))
		for i, u := range users {
			quoted[i] = `"` + u + `"`
		}
		who = "\n  users: [" + strings.Join(quoted, ", ") + "]"
	}
	return []byte(`apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: None
  verbs: ["get", "list", "watch"]
- level: Metadata` + who + `
- level: None
`)
}

// Event is one completed request the API server recorded: the fields of an
// audit.k8s.io/v1 Event that a policy at metadata level fills and the
// counts read.
type Event struct {
	Verb string `json:"verb"`
	// RequestURI is the request's path and query.
	RequestURI string `json:"requestURI"`
	User       struct {
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
	// UserAgent is the client's: which process of a user (replicas of one
	// ServiceAccount) sent the request.
	UserAgent string `json:"userAgent"`
	// RequestReceivedTimestamp is when the API server got the request;
	// StageTimestamp when the response was complete: the write had happened.
	RequestReceivedTimestamp metav1.MicroTime `json:"requestReceivedTimestamp"`
	StageTimestamp           metav1.MicroTime `json:"stageTimestamp"`
}

// Read reads the completed requests of a JSON audit log, oldest first,
// with the files the API server rotated it into (at 100 MB by default:
// <name>-<timestamp><ext> beside it; a 2,000-graph benchmark writes more
// than that). A log not written yet is an error that wraps
// os.ErrNotExist.
func Read(path string) ([]Event, error) {
	ext := filepath.Ext(path)
	rotated, err := filepath.Glob(strings.TrimSuffix(path, ext) + "-*" + ext)
	if err != nil {
		return nil, err
	}
	sort.Strings(rotated) // the timestamps sort as text
	var out []Event
	for _, p := range append(rotated, path) {
		events, err := readFile(p)
		if err != nil {
			return nil, err
		}
		out = append(out, events...)
	}
	return out, nil
}

func readFile(path string) ([]Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	var out []Event
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 1<<24)
	for sc.Scan() {
		var ev Event
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
