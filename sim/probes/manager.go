package probes

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/clock"
)

// DefaultConcurrency bounds the probes in flight: thousands of pods probed
// every few seconds must not take the simulator's CPUs.
const DefaultConcurrency = 32

// Manager probes every Running pod that has probes and writes what the
// results change into the pod's status.
type Manager struct {
	Client kubernetes.Interface
	Clock  clock.Clock
	// Concurrency bounds the probes in flight (DefaultConcurrency if 0).
	Concurrency int
	// Restart is called when a liveness or startup probe of a container
	// reached its failure threshold. It returns true when the caller
	// restarts the container and records the restart in the pod's status
	// itself (a process it runs); otherwise the prober records the restart
	// (restartCount+1, the last state) and probes the container afresh.
	Restart func(pod *corev1.Pod, container string) bool
	// Log receives failures to write status.
	Log func(format string, args ...any)

	sem  chan struct{}
	mu   sync.Mutex
	pods map[types.UID]*podProbes
	// lostNodes have no kubelet left to probe their pods (SetNodeLost).
	lostNodes map[string]bool
	// probes counts the probes run, for the benchmark.
	probes int64
}

// podProbes is the prober of one pod: a goroutine that sleeps until the
// next probe of any of its containers is due.
type podProbes struct {
	m      *Manager
	cancel context.CancelFunc
	wake   chan struct{}

	mu         sync.Mutex
	pod        *corev1.Pod
	containers map[string]*run
	// dirty is set when a container run began: its first state may differ
	// from what the pod's status says.
	dirty bool
	// reported lists the probes (container/kind) whose command the
	// simulator could not evaluate and has said so.
	reported map[string]bool
}

// run is one run of one container.
type run struct {
	restartCount int32
	state        *Container
}

// Run watches pods until ctx ends.
func (m *Manager) Run(ctx context.Context) error {
	if m.Clock == nil {
		m.Clock = clock.RealClock{}
	}
	if m.Concurrency <= 0 {
		m.Concurrency = DefaultConcurrency
	}
	if m.Log == nil {
		m.Log = func(string, ...any) {}
	}
	m.sem = make(chan struct{}, m.Concurrency)
	m.pods = map[types.UID]*podProbes{}
	factory := informers.NewSharedInformerFactory(m.Client, 0)
	inf := factory.Core().V1().Pods().Informer()
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { m.sync(ctx, obj) },
		UpdateFunc: func(_, obj any) { m.sync(ctx, obj) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if p, ok := obj.(*corev1.Pod); ok {
				m.forget(p.UID)
			}
		},
	})
	if err != nil {
		return err
	}
	factory.Start(ctx.Done())
	go func() { <-ctx.Done(); factory.Shutdown() }()
	return nil
}

// ProbesRun is how many probes have run so far.
func (m *Manager) ProbesRun() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.probes
}

// Probed is how many pods are being probed now.
func (m *Manager) Probed() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.pods)
}

func hasProbes(p *corev1.Pod) bool {
	for i := range p.Spec.Containers {
		c := &p.Spec.Containers[i]
		if c.StartupProbe != nil || c.LivenessProbe != nil || c.ReadinessProbe != nil {
			return true
		}
	}
	return false
}

func (m *Manager) sync(ctx context.Context, obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	probe := p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" && p.DeletionTimestamp == nil && hasProbes(p)
	m.mu.Lock()
	lost := m.lostNodes[p.Spec.NodeName]
	m.mu.Unlock()
	if !probe || lost {
		m.forget(p.UID)
		return
	}
	m.mu.Lock()
	pp := m.pods[p.UID]
	if pp == nil {
		pctx, cancel := context.WithCancel(ctx)
		pp = &podProbes{m: m, cancel: cancel, wake: make(chan struct{}, 1), containers: map[string]*run{}}
		m.pods[p.UID] = pp
		m.mu.Unlock()
		pp.update(p)
		go pp.loop(pctx)
		return
	}
	m.mu.Unlock()
	pp.update(p)
}

// SetNodeLost stops probing the pods of node while it is lost, as its
// kubelet is gone with it: their status stays what it was until the node
// lifecycle controller marks them. Pods are probed again from their next
// update once it is back.
func (m *Manager) SetNodeLost(node string, lost bool) {
	m.mu.Lock()
	if m.lostNodes == nil {
		m.lostNodes = map[string]bool{}
	}
	if !lost {
		delete(m.lostNodes, node)
		m.mu.Unlock()
		return
	}
	m.lostNodes[node] = true
	var stop []types.UID
	for uid, pp := range m.pods {
		pp.mu.Lock()
		on := pp.pod != nil && pp.pod.Spec.NodeName == node
		pp.mu.Unlock()
		if on {
			stop = append(stop, uid)
		}
	}
	m.mu.Unlock()
	for _, uid := range stop {
		m.forget(uid)
	}
}

func (m *Manager) forget(uid types.UID) {
	m.mu.Lock()
	pp := m.pods[uid]
	delete(m.pods, uid)
	m.mu.Unlock()
	if pp != nil {
		pp.cancel()
	}
}

// update takes a new version of the pod: a container that restarted
// (restartCount changed) or stopped running gets fresh probe state.
func (pp *podProbes) update(p *corev1.Pod) {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	pp.pod = p
	now := pp.m.Clock.Now()
	for i := range p.Spec.Containers {
		c := &p.Spec.Containers[i]
		st := containerStatus(p, c.Name)
		if st == nil || st.State.Running == nil {
			delete(pp.containers, c.Name)
			continue
		}
		// A run the prober restarted itself is ahead of the stored status
		// until its write lands.
		if r := pp.containers[c.Name]; r != nil && r.restartCount >= st.RestartCount {
			continue
		}
		start := now
		if t := st.State.Running.StartedAt; !t.IsZero() && t.Time.Before(now) {
			start = t.Time
		}
		s := NewContainer(c, start)
		if !s.Probed() {
			continue
		}
		pp.containers[c.Name] = &run{restartCount: st.RestartCount, state: s}
		pp.dirty = true
	}
	select {
	case pp.wake <- struct{}{}:
	default:
	}
}

func (pp *podProbes) loop(ctx context.Context) {
	for {
		pp.mu.Lock()
		var next time.Time
		for _, r := range pp.containers {
			if n := r.state.NextDue(); !n.IsZero() && (next.IsZero() || n.Before(next)) {
				next = n
			}
		}
		pp.mu.Unlock()
		var timer <-chan time.Time
		var t clock.Timer
		if !next.IsZero() {
			t = pp.m.Clock.NewTimer(next.Sub(pp.m.Clock.Now()))
			timer = t.C()
		}
		select {
		case <-ctx.Done():
			if t != nil {
				t.Stop()
			}
			return
		case <-pp.wake:
		case <-timer:
		}
		if t != nil {
			t.Stop()
		}
		pp.probeDue(ctx)
	}
}

// due is a probe to run now.
type due struct {
	container    *corev1.Container
	run          *run
	kind         Kind
	probe        *corev1.Probe
	timing       Timing
	restartCount int32
}

func (pp *podProbes) probeDue(ctx context.Context) {
	pp.mu.Lock()
	pod := pp.pod
	now := pp.m.Clock.Now()
	changed := pp.dirty
	pp.dirty = false
	var todo []due
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		r := pp.containers[c.Name]
		if r == nil {
			continue
		}
		for _, k := range r.state.Due(now) {
			t, _ := r.state.Timing(k)
			todo = append(todo, due{container: c, run: r, kind: k, probe: ProbeOf(c, k), timing: t, restartCount: r.restartCount})
		}
	}
	pp.mu.Unlock()
	for _, d := range todo {
		select {
		case pp.m.sem <- struct{}{}:
		case <-ctx.Done():
			return
		}
		ok, msg, err := Run(ctx, pod.Status.PodIP, d.container, d.probe, d.timing.Timeout)
		<-pp.m.sem
		if err != nil && ctx.Err() == nil {
			pp.unevaluated(ctx, pod, d, msg)
		}
		if ctx.Err() != nil {
			return
		}
		pp.m.mu.Lock()
		pp.m.probes++
		pp.m.mu.Unlock()
		pp.mu.Lock()
		if pp.containers[d.container.Name] != d.run {
			pp.mu.Unlock()
			continue // the container restarted meanwhile
		}
		out := d.run.state.Record(d.kind, ok, pp.m.Clock.Now())
		pp.mu.Unlock()
		changed = changed || out.Changed
		if out.Restart {
			pp.restart(ctx, pod, d.container)
			changed = true
		}
	}
	if changed {
		if err := pp.writeStatus(ctx, pod); err != nil && ctx.Err() == nil {
			pp.m.Log("prober: status of %s/%s: %v; retrying", pod.Namespace, pod.Name, err)
			pp.retryWrite(ctx)
		}
	}
}

// unevaluated says, once per probe of the pod, that an exec probe's command
// could not be evaluated and so failed: in the simulator's log and as the
// kubelet's Unhealthy event on the pod, where `kubectl describe` shows it.
func (pp *podProbes) unevaluated(ctx context.Context, pod *corev1.Pod, d due, msg string) {
	key := d.container.Name + "/" + string(d.kind)
	pp.mu.Lock()
	done := pp.reported[key]
	if pp.reported == nil {
		pp.reported = map[string]bool{}
	}
	pp.reported[key] = true
	pp.mu.Unlock()
	if done {
		return
	}
	text := fmt.Sprintf("%s%s probe failed: %s", strings.ToUpper(string(d.kind[:1])), d.kind[1:], msg)
	pp.m.Log("prober: %s/%s container %s: %s", pod.Namespace, pod.Name, d.container.Name, text)
	now := metav1.NewTime(pp.m.Clock.Now())
	ev := &corev1.Event{
		// Named as the kubelet names its events (pod.<time>), the probe's
		// kind keeping two of the same instant apart.
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x.%s", pod.Name, now.UnixNano(), d.kind), Namespace: pod.Namespace},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name,
			UID: pod.UID, ResourceVersion: pod.ResourceVersion, FieldPath: "spec.containers{" + d.container.Name + "}"},
		Reason: "Unhealthy", Message: text, Type: corev1.EventTypeWarning, Count: 1,
		FirstTimestamp: now, LastTimestamp: now,
		Source: corev1.EventSource{Component: "kubelet", Host: pod.Spec.NodeName},
	}
	if _, err := pp.m.Client.CoreV1().Events(pod.Namespace).Create(ctx, ev, metav1.CreateOptions{}); err != nil && ctx.Err() == nil {
		pp.m.Log("prober: Unhealthy event of %s/%s: %v", pod.Namespace, pod.Name, err)
	}
}

// retryWrite keeps a status the prober decided but could not store (the
// API server restarting, say): the probe results that changed it are
// recorded and will not change again, so without this the pod would keep
// its old readiness for good. The next round writes it, a second from now.
func (pp *podProbes) retryWrite(ctx context.Context) {
	pp.mu.Lock()
	pp.dirty = true
	pp.mu.Unlock()
	go func() {
		select {
		case <-ctx.Done():
			return
		case <-pp.m.Clock.After(time.Second):
		}
		select {
		case pp.wake <- struct{}{}:
		default:
		}
	}()
}

// restart has the container restarted after a failed liveness or startup
// probe. Unless the hook records the restart itself, the prober does: it
// bumps restartCount in its own state, so the status write below carries
// it, and probes the new run from its start.
func (pp *podProbes) restart(ctx context.Context, pod *corev1.Pod, c *corev1.Container) {
	if pp.m.Restart != nil && pp.m.Restart(pod, c.Name) {
		pp.mu.Lock()
		delete(pp.containers, c.Name) // probed again once the new run shows
		pp.mu.Unlock()
		return
	}
	pp.mu.Lock()
	defer pp.mu.Unlock()
	r := pp.containers[c.Name]
	if r == nil {
		return
	}
	pp.containers[c.Name] = &run{restartCount: r.restartCount + 1, state: NewContainer(c, pp.m.Clock.Now())}
}

// writeStatus writes the containers' started and ready flags, restarts the
// prober recorded, and the pod's ContainersReady and Ready conditions, if
// any of them differs from the stored pod.
func (pp *podProbes) writeStatus(ctx context.Context, pod *corev1.Pod) error {
	pods := pp.m.Client.CoreV1().Pods(pod.Namespace)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := pods.Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if cur.UID != pod.UID {
			return nil
		}
		pp.mu.Lock()
		changed := pp.apply(cur, pp.m.Clock.Now())
		pp.mu.Unlock()
		if !changed {
			return nil
		}
		_, err = pods.UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	})
}

// apply sets what the probe state says on pod; it reports whether anything
// changed. Callers hold pp.mu.
func (pp *podProbes) apply(pod *corev1.Pod, now time.Time) bool {
	changed := false
	for i := range pod.Status.ContainerStatuses {
		st := &pod.Status.ContainerStatuses[i]
		if r := pp.containers[st.Name]; r != nil && st.State.Running != nil {
			if r.restartCount > st.RestartCount {
				// A restart the prober recorded.
				st.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
					ExitCode: 137, Reason: "Error", Message: "liveness probe failed: container restarted by the simulator's prober",
					StartedAt: st.State.Running.StartedAt, FinishedAt: metav1.NewTime(now),
				}}
				st.State.Running.StartedAt = metav1.NewTime(now)
				st.RestartCount = r.restartCount
				changed = true
			}
			started := r.state.Started
			if st.Started == nil || *st.Started != started {
				st.Started = &started
				changed = true
			}
			if st.Ready != r.state.Ready {
				st.Ready = r.state.Ready
				changed = true
			}
		}
	}
	return SetReadyConditions(pod, now) || changed
}

// SetReadyConditions sets the pod's ContainersReady and Ready conditions
// from its containers' ready flags, as the kubelet's status manager does;
// it reports whether they changed.
func SetReadyConditions(pod *corev1.Pod, now time.Time) bool {
	allReady := len(pod.Status.ContainerStatuses) > 0
	for _, st := range pod.Status.ContainerStatuses {
		allReady = allReady && st.Ready
	}
	status := corev1.ConditionFalse
	if allReady {
		status = corev1.ConditionTrue
	}
	changed := false
	for _, t := range []corev1.PodConditionType{corev1.ContainersReady, corev1.PodReady} {
		if setCondition(pod, t, status, now) {
			changed = true
		}
	}
	return changed
}

// setCondition sets condition t; its transition time moves only with its
// status.
func setCondition(pod *corev1.Pod, t corev1.PodConditionType, status corev1.ConditionStatus, now time.Time) bool {
	reason, message := "", ""
	if status == corev1.ConditionFalse {
		reason = "ContainersNotReady"
		message = fmt.Sprintf("containers with unready status: %s", unready(pod))
	}
	for i := range pod.Status.Conditions {
		c := &pod.Status.Conditions[i]
		if c.Type != t {
			continue
		}
		if c.Status == status {
			return false
		}
		c.Status, c.Reason, c.Message, c.LastTransitionTime = status, reason, message, metav1.NewTime(now)
		return true
	}
	pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: t, Status: status, Reason: reason, Message: message, LastTransitionTime: metav1.NewTime(now)})
	return true
}

func unready(pod *corev1.Pod) []string {
	var out []string
	for _, st := range pod.Status.ContainerStatuses {
		if !st.Ready {
			out = append(out, st.Name)
		}
	}
	return out
}

func containerStatus(p *corev1.Pod, name string) *corev1.ContainerStatus {
	for i := range p.Status.ContainerStatuses {
		if p.Status.ContainerStatuses[i].Name == name {
			return &p.Status.ContainerStatuses[i]
		}
	}
	return nil
}
