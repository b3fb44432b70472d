// Command align raises a tool module's dependencies to the versions a
// reference module builds with, where the reference's are newer:
//
//	go run ./align <tool module dir> <reference module dir>
//
// The Go cache keys a compiled package by its module version and by the
// compiled copies of everything it imports, so a dependency at the same
// version as the reference's, with the same build flags (the Makefile's
// GOBUILD), is compiled once for both. On a fresh machine the tool modules
// (helm, controller-gen, the LeaderWorkerSet controller) otherwise compile
// their own copies of client-go, the API types and their dependencies:
// minutes each on two cores. Versions are only raised, never lowered below
// what the tool requires; a module whose reference version is older stays.
// tools/align.sh runs it for every tool module; run that after changing a
// go.mod.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/mod/semver"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: align <tool module dir> <reference module dir>")
		os.Exit(2)
	}
	if err := align(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "align:", err)
		os.Exit(1)
	}
}

func align(tool, ref string) error {
	want, err := modules(ref)
	if err != nil {
		return err
	}
	// Raising one module can raise others past the reference (their go.mod
	// asks for more): those stay, and a few rounds reach the fixed point.
	for round := 0; round < 5; round++ {
		have, err := built(tool)
		if err != nil {
			return err
		}
		upgrades := raise(have, want)
		if len(upgrades) == 0 {
			shared := 0
			for path, v := range have {
				if want[path] == v {
					shared++
				}
			}
			fmt.Printf("align: %s: %d of %d modules at %s's versions\n", tool, shared, len(have), ref)
			return nil
		}
		fmt.Printf("align: %s: raising %s\n", tool, strings.Join(upgrades, " "))
		if err := gocmd(tool, append([]string{"get"}, upgrades...)...); err != nil {
			return err
		}
		if err := gocmd(tool, "mod", "tidy"); err != nil {
			return err
		}
	}
	return fmt.Errorf("%s: no fixed point after 5 rounds", tool)
}

// raise lists path@version for every module of have that want has newer.
func raise(have, want map[string]string) []string {
	var out []string
	for path, v := range have {
		if w, ok := want[path]; ok && semver.Compare(w, v) > 0 {
			out = append(out, path+"@"+w)
		}
	}
	slices.Sort(out)
	return out
}

// modules maps each module of dir's build list to the version built: a
// replacement's when replaced (tools/kube pins Kubernetes' staging modules
// so). The main module has no version and is left out.
func modules(dir string) (map[string]string, error) {
	return list(dir, "-m", "-f", "{{.Path}} {{.Version}}{{with .Replace}} {{.Version}}{{end}}", "all")
}

// built is modules, for only the modules whose packages dir's tools and
// own packages compile: the others cost nothing, and go mod tidy drops
// what raise would add for them.
func built(dir string) (map[string]string, error) {
	var patterns []string
	if mod, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.Contains(string(mod), "\ntool ") {
		patterns = append(patterns, "tool")
	}
	top, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	sub, _ := filepath.Glob(filepath.Join(dir, "*", "*.go"))
	if len(top)+len(sub) > 0 { // the module has packages of its own
		patterns = append(patterns, "./...")
	}
	return list(dir, append([]string{"-deps", "-f",
		"{{with .Module}}{{.Path}} {{.Version}}{{with .Replace}} {{.Version}}{{end}}{{end}}"}, patterns...)...)
}

func list(dir string, args ...string) (map[string]string, error) {
	cmd := exec.Command("go", append([]string{"list", "-e"}, args...)...)
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list %s in %s: %w", strings.Join(args, " "), dir, err)
	}
	m := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && semver.IsValid(f[len(f)-1]) {
			m[f[0]] = f[len(f)-1]
		}
	}
	return m, nil
}

func gocmd(dir string, args ...string) error {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go %s in %s: %w", strings.Join(args, " "), dir, err)
	}
	return nil
}
