package steps

import (
	"testing"
	"time"
)

// A pod's refusals are excused from the removal of its release that began
// after it started: the pod a rollout was still terminating included, a
// pod of a later release of the same name not.
func TestRemovedAt(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 17, 0, 0, 0, time.UTC)
	first, second := t0.Add(time.Minute), t0.Add(3*time.Minute)
	noteRemoval("up", "dynamo-up-dynamo-operator", first)
	noteRemoval("up", "dynamo-up-dynamo-operator", second)
	for _, tc := range []struct {
		name, ns, pod string
		started       time.Time
		want          time.Time
		ok            bool
	}{
		{"a pod of the first release", "up", "dynamo-up-dynamo-operator-68f99c594-f8ddb", t0, first, true},
		{"a pod of the release installed again", "up", "dynamo-up-dynamo-operator-6d8ff599c9-c89h2", t0.Add(2 * time.Minute), second, true},
		{"a pod started after every removal", "up", "dynamo-up-dynamo-operator-6d8ff599c9-x", t0.Add(4 * time.Minute), time.Time{}, false},
		{"another namespace", "down", "dynamo-up-dynamo-operator-68f99c594-f8ddb", t0, time.Time{}, false},
		{"another release", "up", "dynamo-upgraded-dynamo-operator-68f99c594-f8ddb", t0, time.Time{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			at, ok := RemovedAt(tc.ns, tc.pod, tc.started)
			if ok != tc.ok || !at.Equal(tc.want) {
				t.Errorf("RemovedAt = %v, %v; want %v, %v", at, ok, tc.want, tc.ok)
			}
		})
	}
}
