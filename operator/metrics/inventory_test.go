package metrics

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
)

func TestInventoryCountsAndForgets(t *testing.T) {
	inv := NewInventory(func(ns string) bool { return ns != "owned-elsewhere" })
	g := "DynamoGraphDeployment"
	a, b := types.NamespacedName{Namespace: "team", Name: "a"}, types.NamespacedName{Namespace: "team", Name: "b"}
	inv.Set(g, a, "pending")
	inv.Set(g, b, "pending")
	inv.Set(g, a, "pending") // an update that does not change the state
	inv.Set(g, types.NamespacedName{Namespace: "owned-elsewhere", Name: "c"}, "pending")
	if diff := cmp.Diff(map[seriesKey]int{{g, "team", "pending"}: 2}, inv.Snapshot(), cmp.AllowUnexported(seriesKey{})); diff != "" {
		t.Fatalf("after two graphs (-want +got):\n%s", diff)
	}
	inv.Set(g, a, "successful")
	if diff := cmp.Diff(map[seriesKey]int{{g, "team", "pending"}: 1, {g, "team", "successful"}: 1},
		inv.Snapshot(), cmp.AllowUnexported(seriesKey{})); diff != "" {
		t.Fatalf("after a state change (-want +got):\n%s", diff)
	}
	inv.Delete(g, b)
	inv.Delete(g, b) // a second delete (tombstone after delete) is harmless
	// The pending series is gone with its last object, not left at 0.
	if diff := cmp.Diff(map[seriesKey]int{{g, "team", "successful"}: 1}, inv.Snapshot(), cmp.AllowUnexported(seriesKey{})); diff != "" {
		t.Fatalf("after a delete (-want +got):\n%s", diff)
	}
	// The namespace handed back is counted again, without any event.
	inv.Counted = nil
	if n := inv.Snapshot()[seriesKey{g, "owned-elsewhere", "pending"}]; n != 1 {
		t.Fatalf("namespace handed back: count %d, want 1", n)
	}
}
