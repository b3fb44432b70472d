package parts

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParsePart(t *testing.T) {
	for in, want := range map[string]Part{"": {1, 1}, "1/2": {1, 2}, "2/2": {2, 2}, "3/3": {3, 3}} {
		got, err := Parse(in)
		if err != nil || got != want {
			t.Errorf("Parse(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"0/2", "3/2", "2", "a/b", "1/0", "-1/2"} {
		if _, err := Parse(in); err == nil || !strings.Contains(err.Error(), "DYNAMO_FEATURES_PART") {
			t.Errorf("Parse(%q) error = %v, want one naming DYNAMO_FEATURES_PART", in, err)
		}
	}
}

// Every feature file of the repository and the documentation's commands
// run in exactly one part, however many parts; the parts' measured times
// differ by no more than the longest item.
func TestPartsCoverEveryFeatureFileOnce(t *testing.T) {
	all, err := All(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	for n := 1; n <= 4; n++ {
		var got []string
		longest, shortest := 0, -1
		for k := 1; k <= n; k++ {
			items := Part{k, n}.Items(all)
			got = append(got, items...)
			total := 0
			for _, it := range items {
				total += weight(it)
			}
			longest = max(longest, total)
			if shortest < 0 || total < shortest {
				shortest = total
			}
		}
		slices.Sort(got)
		want := slices.Sorted(slices.Values(all))
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%d parts: items run (-want +got):\n%s", n, diff)
		}
		// Longest first to the least loaded part: the last item the
		// longest part got came when it was the shortest.
		top := 0
		for _, it := range all {
			top = max(top, weight(it))
		}
		if longest-shortest > top {
			t.Errorf("%d parts: %d s to %d s, unbalanced", n, shortest, longest)
		}
	}
}

// The two parts CI runs, as measured: graph.feature's 914 s share a part
// with lighter files, and neither part exceeds half the whole by more than
// a small file.
func TestTwoPartsBalance(t *testing.T) {
	var all []string
	for it := range seconds {
		all = append(all, it)
	}
	total := 0
	for _, it := range all {
		total += weight(it)
	}
	for k := 1; k <= 2; k++ {
		sum := 0
		for _, it := range (Part{k, 2}).Items(all) {
			sum += weight(it)
		}
		if sum > total/2+seconds["modes.feature"] {
			t.Errorf("part %d/2 takes %d s of %d s", k, sum, total)
		}
	}
}
