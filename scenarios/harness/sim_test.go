package harness

import (
	"os"
	"path/filepath"
	"testing"
)

// A failed scenario's logs move out of the state directory, replacing an
// earlier run's, and the next simulator's directory no longer holds them.
func TestMoveLogsKeepsThemOutOfTheNextSimulatorsWay(t *testing.T) {
	dir := t.TempDir()
	s := &Sim{Dir: filepath.Join(dir, "sim")}
	if err := os.MkdirAll(s.PodLogs(), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.AuditLog(), []byte("audit\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(dir, "failed", "a-scenario")
	if err := os.MkdirAll(filepath.Join(dest, "stale"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := s.MoveLogs(dest); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(dest, "audit.log")); err != nil || string(got) != "audit\n" {
		t.Errorf("audit log at dest = %q, %v", got, err)
	}
	for _, gone := range []string{filepath.Join(dest, "stale"), filepath.Join(s.Dir, "logs")} {
		if _, err := os.Stat(gone); !os.IsNotExist(err) {
			t.Errorf("%s still there (%v)", gone, err)
		}
	}
	if err := s.MoveLogs(dest); err == nil {
		t.Error("moving logs that are gone succeeded")
	}
	if _, err := os.Stat(filepath.Join(dest, "audit.log")); err != nil {
		t.Errorf("a move of no logs lost the kept ones: %v", err)
	}
}
