package metrics

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/prometheus/common/expfmt"
	"k8s.io/apimachinery/pkg/types"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// TestInventoryScrapeSize measures what the inventory adds to a scrape for
// 500 graphs of 4 services (2,000 components) over 50 namespaces: the
// series are per namespace and state, never per object. It prints the
// figures and checks the series count, which is the bound that matters.
func TestInventoryScrapeSize(t *testing.T) {
	before := gatherBytes(t)
	inv := NewInventory(nil)
	graphStates := []string{"successful", "successful", "successful", "pending", "failed"}
	for i := range 500 {
		ns := fmt.Sprintf("team-%02d", i%50)
		inv.Set("DynamoGraphDeployment", types.NamespacedName{Namespace: ns, Name: fmt.Sprintf("g%d", i)}, graphStates[(i/50)%len(graphStates)])
		for s := range 4 {
			state := StateReady
			if (i/50)%5 == 3 {
				state = StateNotReady
			}
			inv.Set("DynamoComponentDeployment", types.NamespacedName{Namespace: ns, Name: fmt.Sprintf("g%d-s%d", i, s)}, state)
		}
	}
	inventories.add(inv)
	defer inventories.remove(inv)
	after := gatherBytes(t)
	series := len(inv.Snapshot())
	t.Logf("500 graphs, 2000 components, 50 namespaces: %d resources_total series, %d bytes of the scrape (registry without them: %d bytes)",
		series, after-before, before)
	// 50 namespaces x (3 graph states + 2 component states).
	if series != 250 {
		t.Fatalf("%d series, want 250", series)
	}
}

func gatherBytes(t *testing.T) int {
	t.Helper()
	mfs, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	for _, mf := range mfs {
		if _, err := expfmt.MetricFamilyToText(&buf, mf); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Len()
}
