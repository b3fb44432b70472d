package cluster

import (
	"bufio"
	"encoding/json"
	"errors"
	"net/http"
	"os"
)

// auditEvent is the part of an audit log line OperatorWrites reads.
type auditEvent struct {
	Stage      string `json:"stage"`
	Verb       string `json:"verb"`
	RequestURI string `json:"requestURI"`
	User       struct {
		Username string `json:"username"`
	} `json:"user"`
}

var verbMethods = map[string]string{
	"create": http.MethodPost, "update": http.MethodPut, "patch": http.MethodPatch,
	"delete": http.MethodDelete, "deletecollection": http.MethodDelete,
}

// OperatorWrites lists the operator's writes recorded in the API server's
// audit log, oldest first, as "METHOD requestURI". A missing log means no
// writes yet.
func OperatorWrites(auditLog string) ([]string, error) {
	f, err := os.Open(auditLog)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 1<<24)
	for sc.Scan() {
		var ev auditEvent
		if json.Unmarshal(sc.Bytes(), &ev) != nil {
			continue // the API server may be writing this line right now
		}
		if ev.Stage != "ResponseComplete" || ev.User.Username != OperatorUser {
			continue
		}
		m := verbMethods[ev.Verb]
		if m == "" {
			m = ev.Verb
		}
		out = append(out, m+" "+ev.RequestURI)
	}
	return out, sc.Err()
}
