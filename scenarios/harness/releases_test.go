package harness

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
	// A shallow clone without tags, as some CI systems make, fetches them
	// from its origin.
	clone := filepath.Join(t.TempDir(), "clone")
	if out, err := exec.Command("git", "clone", "-q", "--depth", "1", "--no-tags", "file://"+dir, clone).CombinedOutput(); err != nil {
		t.Fatalf("git clone: %v\n%s", err, out)
	}
	if got, err := PreviousTag(ctx, clone); err != nil || got != "v2" {
		t.Errorf("in a shallow clone without tags: PreviousTag = %q, %v; want v2", got, err)
	}
	// A clone of a bundle of main has neither tags nor an origin with tags:
	// the releases list, committed with the tree, names them.
	v1 := strings.TrimSpace(gitOut(t, dir, "rev-parse", "v1^{commit}"))
	v2 := strings.TrimSpace(gitOut(t, dir, "rev-parse", "v2^{commit}"))
	if err := os.MkdirAll(filepath.Join(dir, "scenarios"), 0o755); err != nil {
		t.Fatal(err)
	}
	list := "# releases\nv1 " + v1 + "\nv2 " + v2 + " # the newest\n"
	if err := os.WriteFile(filepath.Join(dir, ReleasesFile), []byte(list), 0o644); err != nil {
		t.Fatal(err)
	}
	run("add", ReleasesFile)
	run("commit", "-q", "-m", "four")
	bundle := filepath.Join(t.TempDir(), "main.bundle")
	run("bundle", "create", bundle, "HEAD", "--branches")
	fromBundle := filepath.Join(t.TempDir(), "bundle-clone")
	if out, err := exec.Command("git", "clone", "-q", bundle, fromBundle).CombinedOutput(); err != nil {
		t.Fatalf("git clone: %v\n%s", err, out)
	}
	if tags := strings.TrimSpace(gitOut(t, fromBundle, "tag")); tags != "" {
		t.Fatalf("the bundle's clone has tags %q; the test needs none", tags)
	}
	if got, err := PreviousTag(ctx, fromBundle); err != nil || got != "v2" {
		t.Errorf("in a clone of a bundle: PreviousTag = %q, %v; want v2", got, err)
	}
	if commit, listed, err := resolve(ctx, fromBundle, "v1"); err != nil || commit != v1 || listed != "v1" {
		t.Errorf("in a clone of a bundle: resolve(v1) = %q, %q, %v; want %s, v1", commit, listed, err, v1)
	}
	if _, _, err := resolve(ctx, fromBundle, "v3"); err == nil || !strings.Contains(err.Error(), ReleasesFile) {
		t.Errorf("resolve(v3), listed nowhere: want an error naming %s, got %v", ReleasesFile, err)
	}
	if _, err := PreviousTag(ctx, filepath.Join(dir, "missing")); err == nil {
		t.Error("PreviousTag of a missing repository: want an error")
	}
}

func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %v: %v", args, err)
	}
	return string(out)
}

// TestReleasesList checks the repository's own releases list: well formed,
// every commit in HEAD's history, and in agreement with the clone's tags
// where it has any (a tag missing from the list fails, so tagging a release
// without listing it is caught).
func TestReleasesList(t *testing.T) {
	ctx := context.Background()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	listed, err := ReadReleases(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(listed) == 0 {
		t.Fatalf("%s lists no release", ReleasesFile)
	}
	byTag := map[string]string{}
	for _, l := range listed {
		if _, dup := byTag[l.Tag]; dup {
			t.Errorf("%s lists %s twice", ReleasesFile, l.Tag)
		}
		byTag[l.Tag] = l.Commit
		commit, _, err := resolve(ctx, root, l.Commit)
		if err != nil {
			t.Errorf("release %s: %v", l.Tag, err)
			continue
		}
		if _, err := git(ctx, root, "merge-base", "--is-ancestor", commit, "HEAD"); err != nil {
			t.Errorf("release %s (%s) is not in HEAD's history", l.Tag, l.Commit[:12])
		}
	}
	tags, err := git(ctx, root, "tag", "--list", "v*")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d releases listed; the clone has %d tags", len(listed), len(strings.Fields(tags)))
	for _, tag := range strings.Fields(tags) {
		at, err := git(ctx, root, "rev-parse", tag+"^{commit}")
		if err != nil {
			t.Fatal(err)
		}
		if want, ok := byTag[tag]; !ok {
			t.Errorf("tag %s (%s) is not listed in %s", tag, at[:12], ReleasesFile)
		} else if want != at {
			t.Errorf("tag %s names %s, %s lists %s", tag, at[:12], ReleasesFile, want[:12])
		}
	}
}

// TestImageTagArgsKeepADigitsOnlyTagAString renders the chart with the
// arguments Install and Upgrade pass for a working tree whose git describe
// is all digits, as a clone without tags gives: the chart's schema wants a
// string, and --set would make it a number.
func TestImageTagArgsKeepADigitsOnlyTagAString(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	helm := os.Getenv("HELM")
	if helm == "" {
		helm = filepath.Join(root, ".cache", "bin", "helm")
	}
	if _, err := os.Stat(helm); err != nil {
		t.Fatalf("no helm (HELM, or make helm): %v", err)
	}
	args := append([]string{"template", "r", filepath.Join(root, "chart", "dynamo-platform"),
		"--namespace", "dynamo-system"}, imageTagArgs("3742312")...)
	out, err := exec.Command(helm, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("helm %v: %v\n%s", args, err, out)
	}
	if !strings.Contains(string(out), ImageRepository+":3742312") {
		t.Errorf("the rendered chart does not run %s:3742312", ImageRepository)
	}
}
