package testenv

import "testing"

// Long marks t as one of the long real-time tests (certificate rotations,
// take-overs of a whole cluster, the simulated kubelet's process pods) that
// a newcomer's `make test` leaves to CI: `go test -short` skips it, and CI's
// `make test FULL=1` runs it. Each such test proves something no shorter
// test does; they are left out of the first run only for its time.
func Long(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("a long real-time test: CI runs it (make test FULL=1)")
	}
}
