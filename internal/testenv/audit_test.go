package testenv

import (
	"os"
	"path/filepath"
	"testing"
)

// The API server rotates its audit log at 100 MB; the writes of a large
// benchmark are spread over the rotated files and the current one, and all
// of them count, oldest first.
func TestReadAuditLogReadsRotatedFiles(t *testing.T) {
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
	events, err := ReadAuditLog(filepath.Join(dir, "audit.log"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range events {
		names = append(names, e.ObjectRef.Name)
	}
	if len(names) != 3 || names[0] != "first" || names[1] != "second" || names[2] != "third" {
		t.Fatalf("read %v, want [first second third]", names)
	}
}
