package steps

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dynamoctl/dynamo-operator/sim/cluster"
)

// What became of each object across a take-over: the verdicts the
// migration scenario's assertions and figures rest on.
func TestDiffInventories(t *testing.T) {
	before := inventory{
		"Pod/a":        {uid: "1", restarts: 0},
		"Pod/b":        {uid: "2", restarts: 1},
		"Pod/c":        {uid: "3"},
		"Deployment/d": {uid: "4"},
		"Service/s":    {uid: "5"},
	}
	after := inventory{
		"Pod/a":          {uid: "1", restarts: 0},
		"Pod/b":          {uid: "2", restarts: 2},
		"Deployment/d":   {uid: "40"},
		"Service/s":      {uid: "5"},
		"Service/s-more": {uid: "6"},
	}
	got := diffInventories(before, after)
	want := inventoryDiff{
		kept:      []string{"Pod/a", "Pod/b", "Service/s"},
		replaced:  []string{"Deployment/d"},
		created:   []string{"Service/s-more"},
		deleted:   []string{"Pod/c"},
		restarted: []string{"Pod/b (1 -> 2)"},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(inventoryDiff{})); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"Pod/a", "Pod/b"}, ofKind(got.kept, "Pod")); diff != "" {
		t.Errorf("ofKind (-want +got):\n%s", diff)
	}
	if len(diffInventories(before, before).kept) != len(before) {
		t.Error("an unchanged inventory is not all kept")
	}
}

// A write counts for an object only when its path names that object, not
// one whose name it prefixes, with or without a query.
func TestWrote(t *testing.T) {
	writes := []cluster.Write{
		{Line: "PATCH /apis/apps/v1/namespaces/n/deployments/web-frontend?fieldManager=x"},
		{Line: "PATCH /apis/nvidia.com/v1alpha1/namespaces/n/dynamographdeployments/g/status"},
	}
	for _, c := range []struct {
		suffix string
		want   bool
	}{
		{"deployments/web-frontend", true},
		{"deployments/frontend", false},
		{"dynamographdeployments/g/status", true},
		{"dynamographdeployments/g", false},
	} {
		if got := wrote(writes, c.suffix); got != c.want {
			t.Errorf("wrote(%q) = %v, want %v", c.suffix, got, c.want)
		}
	}
}
