package cluster

import (
	"bufio"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// auditEvent is the part of an audit log line OperatorWrites reads.
type auditEvent struct {
	Stage      string `json:"stage"`
	Verb       string `json:"verb"`
	RequestURI string `json:"requestURI"`
	User       struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef struct {
		Namespace string `json:"namespace"`
	} `json:"objectRef"`
	StageTimestamp metav1.MicroTime `json:"stageTimestamp"`
	ResponseStatus struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
}

// Write is one write recorded in the audit log.
type Write struct {
	// Line is "METHOD requestURI".
	Line      string
	Namespace string
	// At is when the write completed.
	At time.Time
	// Code is the HTTP status the API server answered (a refused write is
	// still an attempt to write).
	Code int
}

var verbMethods = map[string]string{
	"create": http.MethodPost, "update": http.MethodPut, "patch": http.MethodPatch,
	"delete": http.MethodDelete, "deletecollection": http.MethodDelete,
}

// OperatorWrites lists the operator's writes recorded in the API server's
// audit log, oldest first, as "METHOD requestURI". A missing log means no
// writes yet.
func OperatorWrites(auditLog string) ([]string, error) {
	ws, err := WritesBy(auditLog, OperatorUser)
	out := make([]string, 0, len(ws))
	for _, w := range ws {
		out = append(out, w.Line)
	}
	return out, err
}

// WritesBy lists user's writes recorded in the API server's audit log,
// oldest first.
func WritesBy(auditLog, user string) ([]Write, error) {
	f, err := os.Open(auditLog)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	var out []Write
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 1<<24)
	for sc.Scan() {
		var ev auditEvent
		if json.Unmarshal(sc.Bytes(), &ev) != nil {
			continue // the API server may be writing this line right now
		}
		if ev.Stage != "ResponseComplete" || ev.User.Username != user {
			continue
		}
		m := verbMethods[ev.Verb]
		if m == "" {
			m = ev.Verb
		}
		out = append(out, Write{Line: m + " " + ev.RequestURI, Namespace: ev.ObjectRef.Namespace, At: ev.StageTimestamp.Time, Code: ev.ResponseStatus.Code})
	}
	return out, sc.Err()
}
