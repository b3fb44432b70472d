package harness

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
)

func TestSanitizeTag(t *testing.T) {
	for in, want := range map[string]string{
		"v0.1.0":            "v0.1.0",
		"v0.1.0-2-g441b13a": "v0.1.0-2-g441b13a",
		"feature/x+y":       "feature-x-y",
		"":                  "",
	} {
		if got := sanitizeTag(in); got != want {
			t.Errorf("sanitizeTag(%q) = %q, want %q", in, got, want)
		}
	}
	long := make([]byte, 200)
	for i := range long {
		long[i] = 'a'
	}
	if got := sanitizeTag(string(long)); len(got) != 128 {
		t.Errorf("sanitizeTag of 200 characters has %d, want 128", len(got))
	}
}

// TestPreviousTag builds a repository with tags v1 and v2 and checks the
// previous release seen from v2's commit (v1: a tag on HEAD is the
// release being made) and from a commit after v2 (v2).
func TestPreviousTag(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir := t.TempDir()
	ctx := context.Background()
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(cmd.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	run("init", "-q")
	run("commit", "-q", "--allow-empty", "-m", "one")
	run("tag", "v1")
	run("commit", "-q", "--allow-empty", "-m", "two")
	run("tag", "v2")
	if got, err := PreviousTag(ctx, dir); err != nil || got != "v1" {
		t.Errorf("at v2: PreviousTag = %q, %v; want v1", got, err)
	}
	run("commit", "-q", "--allow-empty", "-m", "three")
	if got, err := PreviousTag(ctx, dir); err != nil || got != "v2" {
		t.Errorf("after v2: PreviousTag = %q, %v; want v2", got, err)
	}
	if _, err := PreviousTag(ctx, filepath.Join(dir, "missing")); err == nil {
		t.Error("PreviousTag of a missing repository: want an error")
	}
}
