package controllers

import (
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// firstReportDelay is how long a component whose status does not yet
// describe its current spec may stay without a report of that spec while
// it is merely rolling out. A new Deployment is "not yet observed", then
// "0 of 1 available", then available; at scale each of those states lasted
// milliseconds to seconds and cost every component three status writes,
// where one says all a user needs. Its graph meanwhile reports which
// components it waits for (GraphReconciler.reportGraphStatus). The
// hold applies only while the stored status says nothing false: it is
// absent, or not Ready/Available, for an older spec, which every reader,
// kstatus included, takes as "in progress" (for an absent status, only
// because the CRDs default it to observedGeneration 0: kstatus reads a new
// object with no status as Current; package v1alpha1). Ready or Available claimed for
// an older spec, a blocker (unschedulable, crash-looping, stalled) or an
// invalid spec is never held back, and a rollout still going after the
// delay is reported then: later only while its pods cannot be Ready yet
// (rolloutStarted), at most firstReportLimit after they started, and, for a
// component never reported on, while its pods have not started
// (unstartedReportLimit) and while the cluster works through a backlog of
// ours (backlogReportCap).
const firstReportDelay = 5 * time.Second

// firstReports remembers when this process first computed a status for
// each object's current generation that it did not write yet, so the hold
// (firstReportDelay) is bounded from that moment. Entries go once the
// generation is reported or the object is gone.
type firstReports struct {
	mu sync.Mutex
	m  map[types.NamespacedName]firstSeen
	// over is when a rollout last ended (rolloutOver).
	over time.Time
}

type firstSeen struct {
	generation int64
	at         time.Time
}

// firstReportLimit bounds how long a component's first report of a
// rollout waits past its pods' start (firstReports.holdPast).
const firstReportLimit = 30 * time.Second

// queuedProgress: a rollout of this controller's that ended this recently
// shows the cluster working through a backlog of ours (backlogReportCap).
const queuedProgress = 30 * time.Second

// unstartedReportLimit bounds how long the first report of a rollout waits
// while none of its pods has started a container: the rollout waits for
// the cluster (the Deployment and ReplicaSet controllers, the scheduler, an
// image pull), and a report could only say "0 of 1 available", which the
// absent status says already. On the simulator's loaded control plane the
// last graphs of a 500-graph burst waited a minute or two for their pods:
// held 5 s, 350 of 2,000 components wrote "0 of 1 available" and then
// Available, and their graphs "pending" two or three times before Ready
// (21.1 writes per graph where 20 is the least). A pod blocked on its way
// (unschedulable, an image that cannot be pulled, a missing claim) is a
// blocker and never held back; one that is merely slow is reported then,
// or later while the cluster works through a backlog of ours
// (backlogReportCap).
const unstartedReportLimit = 2 * time.Minute

// backlogReportCap: while a rollout of this controller's ended within
// queuedProgress, the cluster is working through our rollouts, and one
// still under way with nothing blocking it is queued behind them (its pods
// wait for the scheduler, the kubelets, the probers), not stuck: past its
// own hold, its first report waits on, up to backlogReportCap from the
// first look, looked at again every queuedProgress. Without it, 118 to 157
// of the 2,000 components of a 500-graph burst on the simulator, whose pods
// took minutes to be scheduled, started and probed, still wrote "0 of 1
// available" first (20.3 to 20.4 writes per graph). When none of our
// rollouts ends for queuedProgress, the cluster is idle or stuck, and the
// rollout is reported.
const backlogReportCap = 10 * time.Minute

// holdPast is the hold of a component's first report of generation while
// its rollout is under way, nothing blocking it. For a component never
// reported on (fresh): while no pod has started a container (started
// zero), up to unstartedReportLimit from the first look; once one has, time
// waiting for the cluster no longer counts: firstReportDelay from the later
// of the first look and the latest start, extended to firstReportDelay past
// notOverBefore (the soonest the rollout can be over, rolloutStarted; zero
// when unknown), never beyond firstReportLimit from that moment; past
// either, while the cluster works through a backlog of ours, up to
// backlogReportCap from the first look. For a spec change on a component
// whose status says it is not available (the old spec's blocker, say), the
// user waits to see the change take effect: firstReportDelay from the first
// look, extended past notOverBefore up to firstReportLimit, and no longer.
func (f *firstReports) holdPast(key types.NamespacedName, generation int64, now, started, notOverBefore time.Time, fresh bool) time.Duration {
	first := f.firstLook(key, generation, now)
	until := first.Add(unstartedReportLimit)
	if !fresh || !started.IsZero() {
		from := first
		if fresh && started.After(from) {
			from = started
		}
		until = from.Add(firstReportDelay)
		if !notOverBefore.IsZero() && notOverBefore.Add(firstReportDelay).After(until) {
			until = notOverBefore.Add(firstReportDelay)
		}
		if limit := from.Add(firstReportLimit); limit.Before(until) {
			until = limit
		}
	}
	if w := until.Sub(now); w > 0 {
		return w
	}
	if fresh && f.draining(now) {
		if w := first.Add(backlogReportCap).Sub(now); w > 0 {
			return min(w, queuedProgress)
		}
	}
	return 0
}

// rolloutOver records that a rollout of this controller's ended at now: a
// component was reported Available for its current spec.
func (f *firstReports) rolloutOver(now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if now.After(f.over) {
		f.over = now
	}
}

// draining: a rollout of this controller's ended within queuedProgress of
// now (backlogReportCap).
func (f *firstReports) draining(now time.Time) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return !f.over.IsZero() && now.Sub(f.over) < queuedProgress
}

// rolloutStarted is when the latest of deploy's pods that are not Ready yet
// started its containers (zero when none has: the rollout waits for the
// cluster), and the soonest the rollout can be over, as far as those pods
// tell: a container does not pass its readiness probe before
// initialDelaySeconds have passed since it started, so a pod not yet Ready
// whose container started at t is not Ready before t plus the longest
// readiness delay of the pod template (a frontend's is 10 s). A report
// before then could only say "not ready yet", which an absent status says
// already; at 500 graphs the first graphs' frontends each wrote it at the
// end of the 5 s hold, then Available. notOverBefore is zero when no pod
// started or the template has no readiness delay.
func rolloutStarted(deploy *appsv1.Deployment, pods []corev1.Pod) (started, notOverBefore time.Time) {
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
	var delay int32
	for _, c := range deploy.Spec.Template.Spec.Containers {
		if p := c.ReadinessProbe; p != nil {
			delay = max(delay, p.InitialDelaySeconds)
		}
	}
	if started.IsZero() || delay <= 0 {
		return started, time.Time{}
	}
	return started, started.Add(time.Duration(delay) * time.Second)
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
