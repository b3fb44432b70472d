// Package parts splits the simulator's feature suite into parts that run
// side by side (DYNAMO_FEATURES_PART=k/n, make features-sim PART=k/n): CI
// runs the parts at once, each on a simulator of its own, so the suite's
// wall time is that of its longest part rather than of every feature file
// in turn. Every feature file, and the documentation's commands, run in
// exactly one part.
package parts

import (
	"cmp"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Docs stands for the documentation's commands (TestDocs) among the
// feature files.
const Docs = "docs"

// seconds are what each feature file (and the documentation's commands)
// took on the simulator in a CI run, on a machine with two cores shared
// with the other suites; they balance the parts. A file missing here
// weighs defaultSeconds. To measure them again: run make features-sim and
// add up, per file, the times of its scenarios (go test -v prints each).
var seconds = map[string]int{
	"graph.feature":       914,
	"restart.feature":     310,
	"serving.feature":     306,
	"multinode.feature":   273,
	"models.feature":      238,
	"api.feature":         153,
	Docs:                  147,
	"autoscaling.feature": 115,
	"install.feature":     112,
	"components.feature":  105,
	"engine.feature":      100,
	"modes.feature":       65,
	"metrics.feature":     39,
	"topology.feature":    25,
	"certs.feature":       1,
	"webhooks.feature":    1,
}

const defaultSeconds = 100

// All are the names of the feature files in dir and Docs: what the parts
// split.
func All(dir string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.feature"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no feature files in %s", dir)
	}
	all := []string{Docs}
	for _, f := range files {
		all = append(all, filepath.Base(f))
	}
	return all, nil
}

// Part is one of n parts of a run: Index counts from 1.
type Part struct{ Index, Of int }

func (p Part) String() string { return fmt.Sprintf("%d/%d", p.Index, p.Of) }

// Parse reads k/n; the empty string is the whole run (1/1).
func Parse(s string) (Part, error) {
	if s == "" {
		return Part{1, 1}, nil
	}
	k, n, ok := strings.Cut(s, "/")
	index, err1 := strconv.Atoi(k)
	of, err2 := strconv.Atoi(n)
	if !ok || err1 != nil || err2 != nil || of < 1 || index < 1 || index > of {
		return Part{}, fmt.Errorf("DYNAMO_FEATURES_PART=%q: want k/n with 1 <= k <= n, e.g. 1/2", s)
	}
	return Part{index, of}, nil
}

// Items are what p runs of all (feature file names and Docs): the
// longest first, each to the part with the least time so far, ties to the
// lower part and then by name, so every run of every part agrees on the
// split.
func (p Part) Items(all []string) []string {
	sorted := slices.Clone(all)
	slices.SortFunc(sorted, func(a, b string) int {
		return cmp.Or(cmp.Compare(weight(b), weight(a)), cmp.Compare(a, b))
	})
	load := make([]int, p.Of)
	var mine []string
	for _, it := range sorted {
		least := 0
		for i := range load {
			if load[i] < load[least] {
				least = i
			}
		}
		load[least] += weight(it)
		if least == p.Index-1 {
			mine = append(mine, it)
		}
	}
	slices.Sort(mine)
	return mine
}

func weight(item string) int {
	if s, ok := seconds[item]; ok {
		return s
	}
	return defaultSeconds
}
