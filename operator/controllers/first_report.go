package controllers

import (
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
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
// kstatus included, takes as "in progress" (for an absent status, only
// because the CRDs default it to observedGeneration 0: kstatus reads a new
// object with no status as Current; package v1alpha1). Ready or Available claimed for
// an older spec, a blocker (unschedulable, crash-looping, stalled) or an
// invalid spec is never held back, and a rollout still going after the
// delay is reported then: later only while its pods cannot be Ready yet
// (rolloutNotOverBefore), and at most firstReportLimit after the first look.
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
// for the first report of a component whose latest reconcile failed
// (GraphReconciler.holdFirstReport): one that fails again and again (an
// exhausted quota) is then reported as not yet reconciled.
const firstReportLimit = 30 * time.Second

// queuedReportLimit bounds how long a graph's first report of a spec waits
// for its components' own first reports while none of them is failing. A
// component reports within firstReportDelay of being reconciled, so a
// longer wait means only that the operator's own queue is long: a burst of
// graphs. Until then the graph could only say "not yet reconciled", which
// its absent status (observedGeneration behind, kstatus InProgress) says
// already, and writing it for every graph of the burst made the burst
// longer: waiting at most firstReportLimit, each of 500 graphs created at
// once cost 2.9 to 3.1 status writes where one (Ready) says it all. The
// limit is for a component controller that never gets there; one that
// demonstrably drains its queue (queuedProgress) is waited for up to
// queuedReportCap.
const queuedReportLimit = 5 * time.Minute

// queuedProgress: a component controller that finished a reconcile this
// recently is draining a backlog, not stuck. A burst longer than
// queuedReportLimit is not rare: 500 graphs on the simulator's loaded
// control plane took 10 minutes to get every child written, 2,000 on
// envtest 13, and every graph whose components came after the fifth minute
// wrote "not yet reconciled", then a progress report, then Ready: 2.97
// status writes per graph instead of 1.
const queuedProgress = 30 * time.Second

// queuedProgressRecheck is how often a graph held behind a draining
// backlog is looked at again: a component of its that starts failing, or
// the controller's progress stopping, is seen within it. Every 15 s
// (queuedRecheck), 500 graphs held through a 12-minute burst are 2,000
// reconciles a minute that find nothing new; a component's own report
// enqueues its graph anyway.
const queuedProgressRecheck = time.Minute

// queuedReportCap bounds the wait behind a draining backlog all the same:
// a component the controller never gets to while it works on others (a
// bug of ours) is reported as not yet reconciled at the latest then.
const queuedReportCap = time.Hour

// queuedRecheck is how often a graph held for its components past
// firstReportLimit is looked at again: nothing enqueues it when one of them
// starts failing.
const queuedRecheck = 15 * time.Second

// hold returns how long the first report of generation may still wait;
// zero means write now.
func (f *firstReports) hold(key types.NamespacedName, generation int64, now time.Time) time.Duration {
	return f.holdUpTo(key, generation, now, firstReportDelay)
}

// holdPast is hold, extended to firstReportDelay past notOverBefore (the
// soonest the rollout can be over, rolloutNotOverBefore; zero when
// unknown), and never beyond firstReportLimit from the first look.
func (f *firstReports) holdPast(key types.NamespacedName, generation int64, now, notOverBefore time.Time) time.Duration {
	since := now.Sub(f.firstLook(key, generation, now))
	w := firstReportDelay - since
	if !notOverBefore.IsZero() {
		w = min(max(w, notOverBefore.Add(firstReportDelay).Sub(now)), firstReportLimit-since)
	}
	return max(0, w)
}

// rolloutNotOverBefore is the soonest deploy's rollout can be over, as far
// as its pods tell: a container does not pass its readiness probe before
// initialDelaySeconds have passed since it started, so a pod not yet Ready
// whose container started at t is not Ready before t plus the longest
// readiness delay of the pod template (a frontend's is 10 s). A report
// before then could only say "not ready yet", which an absent status says
// already; at 500 graphs the first graphs' frontends each wrote it at the
// end of the 5 s hold, then Available. Zero when no pod tells: none has started,
// or the template has no readiness delay.
func rolloutNotOverBefore(deploy *appsv1.Deployment, pods []corev1.Pod) time.Time {
	var delay int32
	for _, c := range deploy.Spec.Template.Spec.Containers {
		if p := c.ReadinessProbe; p != nil {
			delay = max(delay, p.InitialDelaySeconds)
		}
	}
	if delay <= 0 {
		return time.Time{}
	}
	var started time.Time
	for i := range pods {
		p := &pods[i]
		if p.DeletionTimestamp != nil || podReady(p) {
			continue
		}
		for _, cs := range p.Status.ContainerStatuses {
			if run := cs.State.Running; run != nil && run.StartedAt.After(started) {
				started = run.StartedAt.Time
			}
		}
	}
	if started.IsZero() {
		return started
	}
	return started.Add(time.Duration(delay) * time.Second)
}

// holdUpTo is hold with another limit.
func (f *firstReports) holdUpTo(key types.NamespacedName, generation int64, now time.Time, limit time.Duration) time.Duration {
	return max(0, limit-now.Sub(f.firstLook(key, generation, now)))
}

// firstLook is when this process first looked at generation of key,
// recording now if it never did.
func (f *firstReports) firstLook(key types.NamespacedName, generation int64, now time.Time) time.Time {
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
	return seen.at
}

// reported forgets key: its current generation has a status, or it is gone.
func (f *firstReports) reported(key types.NamespacedName) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.m, key)
}

// Failing records, for the graph controller's hold (firstReportLimit,
// queuedReportLimit), the components whose latest reconcile failed and when
// the component controller last finished a reconcile that did not
// (queuedProgress).
type Failing struct {
	mu       sync.Mutex
	m        map[types.NamespacedName]struct{}
	progress time.Time
}

// set records whether the latest reconcile of key, finished at now, failed.
func (f *Failing) set(key types.NamespacedName, failed bool, now time.Time) {
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !failed {
		delete(f.m, key)
		if now.After(f.progress) {
			f.progress = now
		}
		return
	}
	if f.m == nil {
		f.m = map[types.NamespacedName]struct{}{}
	}
	f.m[key] = struct{}{}
}

// progressing says whether the component controller finished a reconcile
// that did not fail within queuedProgress of now: it is draining a backlog.
// Without a record (nil) it is not.
func (f *Failing) progressing(now time.Time) bool {
	if f == nil {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return !f.progress.IsZero() && now.Sub(f.progress) < queuedProgress
}

// failing says whether the latest reconcile of key failed. Without a record
// (nil) every component counts as failing: a graph then waits for its
// components at most firstReportLimit.
func (f *Failing) failing(key types.NamespacedName) bool {
	if f == nil {
		return true
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.m[key]
	return ok
}
