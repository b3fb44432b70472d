// Package doccheck reads the user documentation (README.md, docs/ but for
// the contributors' docs/design and docs/dev, chart/README.md,
// sim/README.md), takes out its fenced shell and YAML blocks, and checks
// them against the repository: the make targets, paths, chart values,
// operator flags and resource names a command names exist, and the
// manifests parse and pass the operator's own admission rules
// (doccheck_test.go, in make test). features/sim runs the shell blocks a
// simulated cluster can run on the simulator (make features-sim).
//
// A block the simulator cannot run is marked in the Markdown by an HTML
// comment on the line before its fence, saying why:
//
//	<!-- doccheck: skip: needs a registry -->
//
// A YAML block that shows only part of an object, so that the admission
// rules cannot judge it, is marked the same way with "fragment:". Both kinds
// of block are still checked statically, and both are counted and reported
// with their reasons.
package doccheck

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// Block is one fenced code block of a page.
type Block struct {
	Page string // relative to the repository root
	Line int    // of the opening fence, 1-based
	Lang string // the fence's info string: sh, bash, yaml, ...
	Text string // the block's lines, without the fence's indentation
	// Skip is the reason the simulator does not run this block (a
	// "doccheck: skip:" comment); empty: it runs.
	Skip string
	// Fragment is the reason a YAML block is only parsed, not admitted (a
	// "doccheck: fragment:" comment).
	Fragment string
}

// Where names the block for messages: page:line.
func (b Block) Where() string { return fmt.Sprintf("%s:%d", b.Page, b.Line) }

// Shell says whether the block holds shell commands.
func (b Block) Shell() bool {
	switch b.Lang {
	case "sh", "bash", "shell", "console":
		return true
	}
	return false
}

// YAML says whether the block holds YAML.
func (b Block) YAML() bool { return b.Lang == "yaml" || b.Lang == "yml" }

// Pages lists the user documentation, relative to root, in the order the
// simulator runs it: README.md first (the first install), then docs/ as
// its index orders the sections, then the chart's and the simulator's
// READMEs. docs/design and docs/dev are for contributors and not checked.
func Pages(root string) ([]string, error) {
	pages := []string{"README.md", "docs/README.md"}
	for _, dir := range []string{"docs", "docs/concepts", "docs/tasks", "docs/reference"} {
		found, err := filepath.Glob(filepath.Join(root, dir, "*.md"))
		if err != nil {
			return nil, err
		}
		sort.Strings(found)
		for _, f := range found {
			rel, _ := filepath.Rel(root, f)
			if rel != "docs/README.md" {
				pages = append(pages, rel)
			}
		}
	}
	return append(pages, "chart/README.md", "sim/README.md"), nil
}

var (
	fence     = regexp.MustCompile("^(\\s*)(```+)\\s*([A-Za-z0-9_+-]*)\\s*$")
	directive = regexp.MustCompile(`^\s*<!--\s*doccheck:\s*(\w+):\s*(.*?)\s*-->\s*$`)
)

// ReadPage reads the fenced blocks of the page at root/page.
func ReadPage(root, page string) ([]Block, error) {
	data, err := os.ReadFile(filepath.Join(root, page))
	if err != nil {
		return nil, err
	}
	return Parse(page, string(data))
}

// Parse takes the fenced blocks out of a Markdown page. A "doccheck:"
// comment that is not skip or fragment, or that stands anywhere but right
// before a fence, is an error: a marker must never be ignored silently.
func Parse(page, text string) ([]Block, error) {
	var (
		blocks  []Block
		cur     *Block
		indent  string
		closing string
		body    []string
		pending struct {
			kind, reason string
			line         int
		}
	)
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if cur != nil {
			if m := fence.FindStringSubmatch(line); m != nil && m[3] == "" && len(m[2]) >= len(closing) {
				cur.Text = strings.Join(body, "\n") + "\n"
				blocks = append(blocks, *cur)
				cur, body = nil, nil
				continue
			}
			body = append(body, strings.TrimPrefix(line, indent))
			continue
		}
		if m := directive.FindStringSubmatch(line); m != nil {
			if m[1] != "skip" && m[1] != "fragment" {
				return nil, fmt.Errorf("%s:%d: unknown doccheck marker %q (skip or fragment)", page, n, m[1])
			}
			if m[2] == "" {
				return nil, fmt.Errorf("%s:%d: a doccheck %s marker must give its reason", page, n, m[1])
			}
			pending.kind, pending.reason, pending.line = m[1], m[2], n
			continue
		}
		if m := fence.FindStringSubmatch(line); m != nil {
			cur = &Block{Page: page, Line: n, Lang: strings.ToLower(m[3])}
			indent, closing = m[1], m[2]
			if pending.line == n-1 {
				switch pending.kind {
				case "skip":
					cur.Skip = pending.reason
				case "fragment":
					cur.Fragment = pending.reason
				}
				pending.line = 0
			}
			continue
		}
		if pending.line != 0 {
			return nil, fmt.Errorf("%s:%d: the doccheck marker must stand on the line right before a fence", page, pending.line)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if cur != nil {
		return nil, fmt.Errorf("%s:%d: the fence is never closed", page, cur.Line)
	}
	if pending.line != 0 {
		return nil, fmt.Errorf("%s:%d: the doccheck marker must stand on the line right before a fence", page, pending.line)
	}
	for _, b := range blocks {
		if b.Fragment != "" && !b.YAML() {
			return nil, fmt.Errorf("%s: fragment marks a YAML block; a shell block the simulator cannot run is marked skip", b.Where())
		}
	}
	return blocks, nil
}
