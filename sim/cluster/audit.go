package cluster

import (
	"errors"
	"net/http"
	"os"
	"time"

	"github.com/dynamoctl/dynamo-operator/internal/audit"
)

// auditPolicy records the operators' writes only: enough to tell whether a
// reconcile with nothing to do wrote anything, and cheap at scale (the
// nodes', kubelets' and controllers' writes would fill the log).
var auditPolicy = audit.Policy(OperatorUser, LocalOperatorUser, ChartOperatorUser)

// AuditPolicy is the simulator's audit policy, for another cluster whose
// operators' writes are counted as the simulator's are (make kind's).
func AuditPolicy() []byte { return append([]byte(nil), auditPolicy...) }

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
	// Resource and Name are the object written; UserAgent the client's,
	// which tells a user's processes apart.
	Resource, Name, UserAgent string
	// Received is when the API server got the request.
	Received time.Time
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
// oldest first. A missing log means no writes yet.
func WritesBy(auditLog, user string) ([]Write, error) {
	events, err := audit.Read(auditLog)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Write
	for _, ev := range events {
		if ev.User.Username != user {
			continue
		}
		m := verbMethods[ev.Verb]
		if m == "" {
			m = ev.Verb
		}
		out = append(out, Write{Line: m + " " + ev.RequestURI, Namespace: ev.ObjectRef.Namespace, At: ev.StageTimestamp.Time, Code: ev.ResponseStatus.Code,
			Resource: ev.ObjectRef.Resource, Name: ev.ObjectRef.Name, UserAgent: ev.UserAgent, Received: ev.RequestReceivedTimestamp.Time})
	}
	return out, nil
}
