package testenv

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/dynamoctl/dynamo-operator/internal/audit"
)

// AuditEvent is one write the API server recorded.
type AuditEvent = audit.Event

// auditFiles writes the audit policy, for every user's writes, into dir and
// names the log beside it.
func auditFiles(dir string) (policy, log string, err error) {
	policy = filepath.Join(dir, "audit-policy.yaml")
	log = filepath.Join(dir, "audit.log")
	return policy, log, os.WriteFile(policy, audit.Policy(), 0o600)
}

// AuditEvents reads every write recorded so far. It fails when the Env was
// started without an audit log.
func (e *Env) AuditEvents() ([]AuditEvent, error) {
	if e.auditLog == "" {
		return nil, fmt.Errorf("testenv: started without Options.Audit")
	}
	return audit.Read(e.auditLog)
}
