package audit

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	"k8s.io/apiserver/pkg/audit/policy"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// TestPolicy evaluates the policy as kube-apiserver does (its own policy
// reader and rule evaluator): writes at metadata level, by the users named
// or by everyone, and never a read.
func TestPolicy(t *testing.T) {
	type request struct {
		user, verb, resource string
	}
	cases := map[string]struct {
		users []string
		req   request
		want  auditinternal.Level
	}{
		"anyone's create":                 {req: request{"kwok", "create", "pods"}, want: auditinternal.LevelMetadata},
		"anyone's status patch":           {req: request{"kwok", "patch", "pods"}, want: auditinternal.LevelMetadata},
		"anyone's deletecollection":       {req: request{"gc", "deletecollection", "pods"}, want: auditinternal.LevelMetadata},
		"no read":                         {req: request{"kwok", "get", "pods"}, want: auditinternal.LevelNone},
		"no list":                         {req: request{"kwok", "list", "pods"}, want: auditinternal.LevelNone},
		"no watch":                        {req: request{"kwok", "watch", "pods"}, want: auditinternal.LevelNone},
		"a named user's update":           {users: []string{"op", "op-local"}, req: request{"op-local", "update", "services"}, want: auditinternal.LevelMetadata},
		"a named user's delete":           {users: []string{"op"}, req: request{"op", "delete", "leases"}, want: auditinternal.LevelMetadata},
		"no read of a named user":         {users: []string{"op"}, req: request{"op", "list", "leases"}, want: auditinternal.LevelNone},
		"no write of a user not named":    {users: []string{"op"}, req: request{"kwok", "patch", "pods"}, want: auditinternal.LevelNone},
		"a service account named in full": {users: []string{"system:serviceaccount:ns:op"}, req: request{"system:serviceaccount:ns:op", "create", "pods"}, want: auditinternal.LevelMetadata},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p, err := policy.LoadPolicyFromBytes(Policy(tc.users...))
			if err != nil {
				t.Fatal(err)
			}
			got := policy.NewPolicyRuleEvaluator(p).EvaluatePolicyRule(authorizer.AttributesRecord{
				User: &user.DefaultInfo{Name: tc.req.user}, Verb: tc.req.verb, Resource: tc.req.resource,
				Namespace: "default", ResourceRequest: true,
			})
			if diff := cmp.Diff(tc.want, got.Level); diff != "" {
				t.Errorf("level (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]auditinternal.Stage{auditinternal.StageRequestReceived}, got.OmitStages); diff != "" {
				t.Errorf("omitted stages (-want +got):\n%s", diff)
			}
		})
	}
}

// The API server rotates its audit log at 100 MB; the writes of a large
// benchmark are spread over the rotated files and the current one, and all
// of them count, oldest first.
func TestReadReadsRotatedFiles(t *testing.T) {
	dir := t.TempDir()
	line := func(name string) string {
		return `{"stage":"ResponseComplete","verb":"create","objectRef":{"resource":"events","name":"` + name + `"}}` + "\n"
	}
	files := map[string]string{
		"audit-2026-11-26T11-50-30.386.log": line("second"),
		"audit-2026-11-26T10-00-00.000.log": line("first"),
		"audit.log":                         line("third") + `{"stage":"RequestReceived"}` + "\n" + `{"trunc`,
		"other.log":                         line("not ours"),
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	events, err := Read(filepath.Join(dir, "audit.log"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range events {
		names = append(names, e.ObjectRef.Name)
	}
	if diff := cmp.Diff([]string{"first", "second", "third"}, names); diff != "" {
		t.Errorf("events read (-want +got):\n%s", diff)
	}
}

// TestReadParsesAWrite reads every field the counts use from a line as
// kube-apiserver writes it.
func TestReadParsesAWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	line := `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"a1","stage":"ResponseComplete",` +
		`"requestURI":"/api/v1/namespaces/team-a/pods/w-0/status?fieldManager=x","verb":"patch",` +
		`"user":{"username":"dynamo-operator","groups":["system:masters","system:authenticated"]},` +
		`"objectRef":{"resource":"pods","namespace":"team-a","name":"w-0","apiVersion":"v1","subresource":"status"},` +
		`"responseStatus":{"metadata":{},"code":409},` +
		`"requestReceivedTimestamp":"2026-11-26T10:00:00.000100Z","stageTimestamp":"2026-11-26T10:00:00.002300Z"}` + "\n"
	if err := os.WriteFile(path, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	events, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	var want Event
	want.Verb = "patch"
	want.RequestURI = "/api/v1/namespaces/team-a/pods/w-0/status?fieldManager=x"
	want.User.Username = "dynamo-operator"
	want.ObjectRef.Resource, want.ObjectRef.Namespace, want.ObjectRef.Name, want.ObjectRef.Subresource = "pods", "team-a", "w-0", "status"
	want.ResponseStatus.Code = 409
	want.Stage = "ResponseComplete"
	if err := want.RequestReceivedTimestamp.UnmarshalJSON([]byte(`"2026-11-26T10:00:00.000100Z"`)); err != nil {
		t.Fatal(err)
	}
	if err := want.StageTimestamp.UnmarshalJSON([]byte(`"2026-11-26T10:00:00.002300Z"`)); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]Event{want}, events); diff != "" {
		t.Errorf("events read (-want +got):\n%s", diff)
	}
}

func TestReadMissingLog(t *testing.T) {
	_, err := Read(filepath.Join(t.TempDir(), "audit.log"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("reading a log not written yet: %v, want an error wrapping os.ErrNotExist", err)
	}
}
