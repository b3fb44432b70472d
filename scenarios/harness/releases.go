// Package harness is what the upgrade and fault scenarios run on: operator
// releases built from any git ref (binary, image archive, packaged chart),
// a simulator started with no operator whose kubelet runs each release's
// image as that release's binary, and helm driving the releases.
package harness

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/dynamoctl/dynamo-operator/internal/testenv"
)

// ImageRepository is the operator image's repository, as the chart names it.
const ImageRepository = "ghcr.io/dynamoctl/dynamo-operator"

// WorkingTree names the release built from the working tree, as it is.
const WorkingTree = "the working tree"

// Release is one operator version, built and ready to install.
type Release struct {
	// Name is how the scenarios call it: the ref asked for, or WorkingTree.
	Name string
	// Commit is the commit it was built from (for the working tree, HEAD,
	// possibly with uncommitted changes on top).
	Commit string
	// Tag is the image tag and so the operator version (--operator-version
	// comes from the tag in the chart): a git tag's name, or what
	// git describe says of the working tree. Distinct releases get distinct
	// tags, as real releases do, so their renderer identities differ.
	Tag string
	// Source is the checkout it was built from.
	Source string
	// Binary is the operator manager (linux, static), what the image runs.
	Binary string
	// ImageArchive is the OCI image archive (docker load -i, kind load).
	ImageArchive string
	// Chart is the packaged dynamo-platform chart (.tgz), as chart/README.md's
	// commands install it.
	Chart string
	// CRDs is the release's crds/ directory.
	CRDs string
}

// Image is the release's operator image reference.
func (r *Release) Image() string { return ImageRepository + ":" + r.Tag }

// RunImage is the simulator's --run-image mapping for the release.
func (r *Release) RunImage() string { return r.Image() + "=" + r.Binary }

// Builder builds releases of the repository at Root into
// Root/.cache/releases/<commit>/, once per commit; the working tree is
// rebuilt each run (Go's build cache makes that quick).
type Builder struct {
	Root string
	// Helm packages the charts.
	Helm string
	// Log receives progress lines; nil is quiet.
	Log func(format string, args ...any)

	mu    sync.Mutex
	built map[string]*Release
}

func (b *Builder) logf(format string, args ...any) {
	if b.Log != nil {
		b.Log(format, args...)
	}
}

// Build returns the release of ref (a tag, branch or commit, or
// WorkingTree). A ref that is the working tree's HEAD is built from the
// working tree.
func (b *Builder) Build(ctx context.Context, ref string) (*Release, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if r, ok := b.built[ref]; ok {
		return r, nil
	}
	head, err := git(ctx, b.Root, "rev-parse", "HEAD")
	if err != nil {
		return nil, err
	}
	var r *Release
	if ref == WorkingTree {
		r, err = b.buildWorkingTree(ctx, head)
	} else {
		commit, listed, cerr := resolve(ctx, b.Root, ref)
		if cerr != nil {
			return nil, cerr
		}
		if commit == head {
			r, err = b.buildWorkingTree(ctx, head)
		} else {
			r, err = b.buildCommit(ctx, ref, commit, listed)
		}
	}
	if err != nil {
		return nil, err
	}
	r.Name = ref
	if b.built == nil {
		b.built = map[string]*Release{}
	}
	b.built[ref] = r
	return r, nil
}

func (b *Builder) buildWorkingTree(ctx context.Context, head string) (*Release, error) {
	tag, err := git(ctx, b.Root, "describe", "--tags", "--always", "--dirty")
	if err != nil {
		return nil, err
	}
	out := filepath.Join(b.Root, ".cache", "releases", "worktree")
	r := &Release{Commit: head, Tag: sanitizeTag(tag), Source: b.Root}
	return r, b.make(ctx, r, out, true)
}

func (b *Builder) buildCommit(ctx context.Context, ref, commit, listed string) (*Release, error) {
	tag := ref
	if exact, err := git(ctx, b.Root, "describe", "--tags", "--exact-match", commit); err == nil {
		tag = exact
	} else if listed != "" {
		tag = listed
	} else if ref == commit || strings.HasPrefix(commit, ref) {
		tag = "sha-" + commit[:12]
	}
	out := filepath.Join(b.Root, ".cache", "releases", commit)
	src := filepath.Join(out, "src")
	if _, err := os.Stat(filepath.Join(src, "go.mod")); err != nil {
		// A checkout left half-made by an interrupted run is removed first.
		_, _ = git(ctx, b.Root, "worktree", "remove", "--force", src)
		_ = os.RemoveAll(src)
		_, _ = git(ctx, b.Root, "worktree", "prune")
		b.logf("release %s: git worktree add %s (%s)", ref, src, commit[:12])
		if _, err := git(ctx, b.Root, "worktree", "add", "--detach", src, commit); err != nil {
			return nil, fmt.Errorf("release %s: %w", ref, err)
		}
	}
	r := &Release{Commit: commit, Tag: sanitizeTag(tag), Source: src}
	return r, b.make(ctx, r, out, false)
}

// make builds the binary, the image archive and the chart package of r
// into out; with force false, what is already there is kept (a commit's
// build never changes).
func (b *Builder) make(ctx context.Context, r *Release, out string, force bool) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	r.Binary = filepath.Join(out, "dynamo-operator-"+r.Tag)
	r.ImageArchive = filepath.Join(out, "dynamo-operator-"+r.Tag+".tar")
	r.CRDs = filepath.Join(r.Source, "crds")
	if force || !exists(r.Binary) {
		b.logf("release %s: building the operator (%s)", r.Tag, r.Source)
		cmd := testenv.GoBuild(ctx, r.Source, r.Binary, "./operator/cmd/manager",
			"-s -w -X github.com/dynamoctl/dynamo-operator/operator/config.Version="+r.Tag)
		cmd.Env = append(cmd.Env, "GOOS=linux", "GOARCH="+runtime.GOARCH)
		if err := run(cmd); err != nil {
			return fmt.Errorf("release %s: building the operator: %w", r.Tag, err)
		}
	}
	if force || !exists(r.ImageArchive) {
		cmd := exec.CommandContext(ctx, "go", "run", ".", "--binary", r.Binary, "--arch", runtime.GOARCH,
			"--repository", ImageRepository, "--tag", r.Tag, "--out", r.ImageArchive)
		cmd.Dir = filepath.Join(r.Source, "tools", "image")
		if err := run(cmd); err != nil {
			return fmt.Errorf("release %s: building the image archive: %w", r.Tag, err)
		}
	}
	chartDir := filepath.Join(out, "chart")
	charts, _ := filepath.Glob(filepath.Join(chartDir, "dynamo-platform-*.tgz"))
	if force || len(charts) != 1 {
		_ = os.RemoveAll(chartDir)
		cmd := exec.CommandContext(ctx, b.Helm, "package", filepath.Join(r.Source, "chart", "dynamo-platform"), "--destination", chartDir)
		if err := run(cmd); err != nil {
			return fmt.Errorf("release %s: helm package: %w", r.Tag, err)
		}
		charts, _ = filepath.Glob(filepath.Join(chartDir, "dynamo-platform-*.tgz"))
		if len(charts) != 1 {
			return fmt.Errorf("release %s: helm package made %d charts in %s", r.Tag, len(charts), chartDir)
		}
	}
	r.Chart = charts[0]
	return nil
}

// PreviousTag is the newest tag among HEAD's ancestors that is not on HEAD
// itself: the release the working tree is the next one of. A clone with no
// tags fetches them from its origin; where that brings none (a bundle of
// main, an origin without tags), the newest release of scenarios/releases.txt
// whose commit is a proper ancestor of HEAD is the previous one.
func PreviousTag(ctx context.Context, root string) (string, error) {
	tag, err := git(ctx, root, "describe", "--tags", "--abbrev=0", "HEAD")
	if err != nil && fetchHistory(ctx, root) {
		tag, err = git(ctx, root, "describe", "--tags", "--abbrev=0", "HEAD")
	}
	if err != nil {
		listed, lerr := previousListed(ctx, root)
		if lerr != nil {
			return "", fmt.Errorf("no release tag among HEAD's ancestors (git tag v0.1.0 ...): %w; nor in %s: %w", err, ReleasesFile, lerr)
		}
		return listed, nil
	}
	if at, _ := git(ctx, root, "rev-list", "-n1", tag); at != "" {
		if head, _ := git(ctx, root, "rev-parse", "HEAD"); head == at {
			if tag, err = git(ctx, root, "describe", "--tags", "--abbrev=0", "HEAD^"); err != nil {
				return "", fmt.Errorf("HEAD is the only tagged release: %w", err)
			}
		}
	}
	return tag, nil
}

// ReleasesFile lists the project's releases, relative to the repository.
const ReleasesFile = "scenarios/releases.txt"

// Listed is one line of ReleasesFile.
type Listed struct {
	Tag, Commit string
}

// ReadReleases reads ReleasesFile: "<tag> <commit>" lines, oldest first;
// '#' starts a comment.
func ReadReleases(root string) ([]Listed, error) {
	data, err := os.ReadFile(filepath.Join(root, ReleasesFile))
	if err != nil {
		return nil, err
	}
	var out []Listed
	for i, line := range strings.Split(string(data), "\n") {
		if j := strings.IndexByte(line, '#'); j >= 0 {
			line = line[:j]
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) != 2 || len(f[1]) != 40 || strings.Trim(f[1], "0123456789abcdef") != "" {
			return nil, fmt.Errorf("%s:%d: want \"<tag> <40-hex commit>\", got %q", ReleasesFile, i+1, line)
		}
		out = append(out, Listed{Tag: f[0], Commit: f[1]})
	}
	return out, nil
}

// previousListed is the newest listed release whose commit is a proper
// ancestor of HEAD.
func previousListed(ctx context.Context, root string) (string, error) {
	listed, err := ReadReleases(root)
	if err != nil {
		return "", err
	}
	head, err := git(ctx, root, "rev-parse", "HEAD")
	if err != nil {
		return "", err
	}
	for i := len(listed) - 1; i >= 0; i-- {
		l := listed[i]
		if l.Commit == head {
			continue
		}
		if _, err := git(ctx, root, "merge-base", "--is-ancestor", l.Commit, "HEAD"); err == nil {
			return l.Tag, nil
		}
	}
	return "", fmt.Errorf("no listed release is an ancestor of HEAD (%s)%s", head[:12], historyHint(ctx, root))
}

// resolve is ref's commit: a git ref, or else a release of ReleasesFile
// (listed names it then). A listed commit missing from a shallow clone is
// fetched from origin.
func resolve(ctx context.Context, root, ref string) (commit, listed string, err error) {
	commit, err = git(ctx, root, "rev-parse", "--verify", ref+"^{commit}")
	if err == nil {
		return commit, "", nil
	}
	releases, lerr := ReadReleases(root)
	for _, l := range releases {
		if l.Tag != ref {
			continue
		}
		if _, cerr := git(ctx, root, "cat-file", "-e", l.Commit+"^{commit}"); cerr != nil {
			_, _ = git(ctx, root, "fetch", "--quiet", "origin", l.Commit)
			if _, cerr = git(ctx, root, "cat-file", "-e", l.Commit+"^{commit}"); cerr != nil {
				return "", "", fmt.Errorf("release %s: the clone lacks its commit %s%s", ref, l.Commit[:12], historyHint(ctx, root))
			}
		}
		return l.Commit, l.Tag, nil
	}
	if lerr != nil {
		return "", "", fmt.Errorf("release %q: not a git ref of %s (%w), and %w", ref, root, err, lerr)
	}
	return "", "", fmt.Errorf("release %q: not a git ref of %s, nor listed in %s: %w", ref, root, ReleasesFile, err)
}

// historyHint says what the clone has, for an error about a missing release.
func historyHint(ctx context.Context, root string) string {
	shallow, _ := git(ctx, root, "rev-parse", "--is-shallow-repository")
	count, _ := git(ctx, root, "rev-list", "--count", "HEAD")
	if shallow == "true" {
		return fmt.Sprintf("; the clone is shallow (%s commits) and its origin did not give the history: clone without --depth", count)
	}
	return fmt.Sprintf("; the clone has %s commits", count)
}

// fetchHistory fetches the tags, and the history they point into, from the
// clone's origin when the clone has none of them: a shallow or --no-tags
// clone, as some CI systems make, still has a previous release to upgrade
// from. It reports whether it fetched anything.
func fetchHistory(ctx context.Context, root string) bool {
	if _, err := git(ctx, root, "remote", "get-url", "origin"); err != nil {
		return false
	}
	args := []string{"fetch", "--quiet", "--tags", "origin"}
	if shallow, _ := git(ctx, root, "rev-parse", "--is-shallow-repository"); shallow == "true" {
		args = append(args, "--unshallow")
	}
	_, err := git(ctx, root, args...)
	return err == nil
}

// sanitizeTag keeps what an image tag allows: [A-Za-z0-9_.-], at most 128.
func sanitizeTag(s string) string {
	b := []byte(s)
	for i, c := range b {
		ok := c == '_' || c == '.' || c == '-' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
		if !ok {
			b[i] = '-'
		}
	}
	if len(b) > 128 {
		b = b[:128]
	}
	return string(b)
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}

func run(cmd *exec.Cmd) error {
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w\n%s", strings.Join(cmd.Args, " "), err, out)
	}
	return nil
}
