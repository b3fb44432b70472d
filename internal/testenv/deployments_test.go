package testenv

import (
	"testing"

	"k8s.io/utils/ptr"

	"github.com/dynamoctl/dynamo-operator/internal/builders"
)

// The driver walks a template change through the states a real rollout
// shows: observed with nothing updated and a surge pod, one more replica
// updated per step, then only new replicas.
func TestDeploymentDriverRollout(t *testing.T) {
	d := &deploymentDriver{}
	deploy := builders.MakeDeployment("", "").UID("u").Generation(1).Replicas(2).Container("main", "a:1").Obj()
	type counts struct{ replicas, updated, available int32 }
	step := func() (counts, bool) {
		st, done := d.nextStatus(deploy)
		deploy.Status = st
		return counts{st.Replicas, st.UpdatedReplicas, st.AvailableReplicas}, done
	}
	expect := func(want counts, wantDone bool) {
		t.Helper()
		got, done := step()
		if got != want || done != wantDone {
			t.Fatalf("status %+v done=%v, want %+v done=%v", got, done, want, wantDone)
		}
	}
	expect(counts{0, 0, 0}, false) // new: observed, no pods yet
	expect(counts{2, 2, 2}, true)  // all available

	deploy.Generation = 2
	deploy.Spec.Template.Spec.Containers[0].Image = "a:2"
	expect(counts{3, 0, 2}, false) // rollout begins, old pods serve
	expect(counts{3, 1, 2}, false)
	expect(counts{3, 2, 2}, false)
	expect(counts{2, 2, 2}, true)

	deploy.Generation = 3
	deploy.Spec.Replicas = ptr.To[int32](3)
	expect(counts{3, 3, 3}, true) // scaling converges in one step
}
