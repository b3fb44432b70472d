package controllers

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// firstReportDelay is how long a graph or component whose status does not
// yet describe its current spec may stay without a report of that spec
// while it is merely rolling out. A new Deployment is "not yet observed",
// then "0 of 1 available", then available; at scale each of those states
// lasted milliseconds to seconds and cost every component three status
// writes and every graph two, where one each says all a user needs. The
// hold applies only while the stored status says nothing false: it is
// absent, or not Ready/Available, for an older spec, which every reader,
// kstatus included, takes as "in progress". Ready or Available claimed for
// an older spec, a blocker (unschedulable, crash-looping, stalled) or an
// invalid spec is never held back, and a rollout still going after the
// delay is reported then.
const firstReportDelay = 5 * time.Second

// firstReports remembers when this process first computed a status for
// each object's current generation that it did not write yet, so the hold
// (firstReportDelay) is bounded from that moment. Entries go once the
// generation is reported or the object is gone.
type firstReports struct {
	mu sync.Mutex
	m  map[types.NamespacedName]firstSeen
}

type firstSeen struct {
	generation int64
	at         time.Time
}

// firstReportLimit bounds how long a graph's first report of a spec waits
// for its components' own first reports (GraphReconciler.holdFirstReport).
const firstReportLimit = 30 * time.Second

// hold returns how long the first report of generation may still wait;
// zero means write now.
func (f *firstReports) hold(key types.NamespacedName, generation int64, now time.Time) time.Duration {
	return f.holdUpTo(key, generation, now, false)
}

// holdUpTo is hold, extended to firstReportLimit when longer says so.
func (f *firstReports) holdUpTo(key types.NamespacedName, generation int64, now time.Time, longer bool) time.Duration {
	limit := firstReportDelay
	if longer {
		limit = firstReportLimit
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m == nil {
		f.m = map[types.NamespacedName]firstSeen{}
	}
	seen, ok := f.m[key]
	if !ok || seen.generation != generation {
		seen = firstSeen{generation: generation, at: now}
		f.m[key] = seen
	}
	if w := limit - now.Sub(seen.at); w > 0 {
		return w
	}
	return 0
}

// reported forgets key: its current generation has a status, or it is gone.
func (f *firstReports) reported(key types.NamespacedName) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.m, key)
}
