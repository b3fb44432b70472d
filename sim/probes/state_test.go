package probes

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clocktesting "k8s.io/utils/clock/testing"
)

func httpProbe(path string, port int32) *corev1.Probe {
	return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromInt32(port)}}}
}

func TestTimingDefaults(t *testing.T) {
	got := TimingOf(&corev1.Probe{InitialDelaySeconds: 3})
	want := Timing{InitialDelay: 3 * time.Second, Period: 10 * time.Second, Timeout: time.Second, SuccessThreshold: 1, FailureThreshold: 3}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("timing (-want +got):\n%s", d)
	}
}

func TestNoProbesIsReadyAtOnce(t *testing.T) {
	s := NewContainer(&corev1.Container{Name: "main"}, time.Now())
	if s.Probed() || !s.Started || !s.Ready || !s.NextDue().IsZero() {
		t.Errorf("a container without probes: probed=%v started=%v ready=%v next=%v", s.Probed(), s.Started, s.Ready, s.NextDue())
	}
}

// The startup probe holds liveness and readiness back; readiness needs its
// success threshold, loses readiness only after its failure threshold; the
// liveness failure threshold asks for a restart. Time is a fake clock.
func TestStartupThenReadinessAndLiveness(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	startup := httpProbe("/live", 9090)
	startup.PeriodSeconds, startup.FailureThreshold = 1, 5
	ready := httpProbe("/health", 9090)
	ready.InitialDelaySeconds, ready.PeriodSeconds, ready.SuccessThreshold, ready.FailureThreshold = 2, 2, 2, 2
	live := httpProbe("/live", 9090)
	live.PeriodSeconds, live.FailureThreshold = 5, 3
	c := &corev1.Container{Name: "main", StartupProbe: startup, ReadinessProbe: ready, LivenessProbe: live}
	s := NewContainer(c, clk.Now())

	if s.Started || s.Ready {
		t.Fatalf("before the startup probe: started=%v ready=%v", s.Started, s.Ready)
	}
	if got := s.Due(clk.Now()); !cmp.Equal(got, []Kind{Startup}) {
		t.Fatalf("due at start: %v, want only startup", got)
	}
	// Two startup failures: below the threshold, no restart, nothing else runs.
	for i := 0; i < 2; i++ {
		if out := s.Record(Startup, false, clk.Now()); out.Restart || out.Changed {
			t.Fatalf("startup failure %d: %+v", i+1, out)
		}
		clk.Step(time.Second)
		if got := s.Due(clk.Now()); !cmp.Equal(got, []Kind{Startup}) {
			t.Fatalf("due after startup failure: %v", got)
		}
	}
	if out := s.Record(Startup, true, clk.Now()); !out.Changed || !s.Started || s.Ready {
		t.Fatalf("startup success: %+v started=%v ready=%v", out, s.Started, s.Ready)
	}
	// Readiness's initial delay (2 s from the container's start) has passed: both run now.
	if got := s.Due(clk.Now()); !cmp.Equal(got, []Kind{Liveness, Readiness}) {
		t.Fatalf("due after startup: %v", got)
	}
	if out := s.Record(Readiness, true, clk.Now()); out.Changed || s.Ready {
		t.Fatalf("one success of two: %+v ready=%v", out, s.Ready)
	}
	s.Record(Liveness, true, clk.Now())
	if got := s.Due(clk.Now()); len(got) != 0 {
		t.Fatalf("due right after probing: %v", got)
	}
	clk.Step(2 * time.Second)
	if got := s.Due(clk.Now()); !cmp.Equal(got, []Kind{Readiness}) {
		t.Fatalf("due after one readiness period: %v", got)
	}
	if out := s.Record(Readiness, true, clk.Now()); !out.Changed || !s.Ready {
		t.Fatalf("second success: %+v ready=%v", out, s.Ready)
	}
	// One readiness failure keeps it ready, the second (threshold 2) does not.
	if out := s.Record(Readiness, false, clk.Now()); out.Changed || !s.Ready {
		t.Fatalf("first failure: %+v ready=%v", out, s.Ready)
	}
	if out := s.Record(Readiness, false, clk.Now()); !out.Changed || s.Ready {
		t.Fatalf("second failure: %+v ready=%v", out, s.Ready)
	}
	// Liveness: the third consecutive failure restarts; a success between resets the count.
	s.Record(Liveness, false, clk.Now())
	s.Record(Liveness, true, clk.Now())
	s.Record(Liveness, false, clk.Now())
	if out := s.Record(Liveness, false, clk.Now()); out.Restart {
		t.Fatalf("restart after 2 consecutive failures")
	}
	if out := s.Record(Liveness, false, clk.Now()); !out.Restart {
		t.Fatalf("no restart after 3 consecutive failures")
	}
}

func TestStartupFailureThresholdRestarts(t *testing.T) {
	p := httpProbe("/live", 9090)
	p.FailureThreshold = 2
	s := NewContainer(&corev1.Container{Name: "main", StartupProbe: p}, time.Now())
	if out := s.Record(Startup, false, time.Now()); out.Restart {
		t.Fatal("restart after one failure of two")
	}
	if out := s.Record(Startup, false, time.Now()); !out.Restart {
		t.Fatal("no restart at the startup failure threshold")
	}
}

func TestInitialDelayAndNextDue(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := httpProbe("/health", 8000)
	p.InitialDelaySeconds = 5
	s := NewContainer(&corev1.Container{Name: "main", ReadinessProbe: p}, start)
	if got := s.Due(start.Add(4 * time.Second)); len(got) != 0 {
		t.Errorf("due before the initial delay: %v", got)
	}
	if got := s.NextDue(); !got.Equal(start.Add(5 * time.Second)) {
		t.Errorf("next due %v, want start+5s", got)
	}
	// A startup probe that succeeded is never due again.
	sp := httpProbe("/live", 8000)
	s2 := NewContainer(&corev1.Container{Name: "main", StartupProbe: sp}, start)
	s2.Record(Startup, true, start)
	if got := s2.NextDue(); !got.IsZero() {
		t.Errorf("next due after startup success with no other probe: %v", got)
	}
	if !s2.Ready {
		t.Error("started without a readiness probe is ready")
	}
}

// Ready and ContainersReady follow the containers' ready flags; their
// transition time moves only when their status does.
func TestSetReadyConditions(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	pod := &corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "a", Ready: true}, {Name: "b", Ready: false}}}}
	if !SetReadyConditions(pod, t0) {
		t.Fatal("first call changed nothing")
	}
	for _, c := range pod.Status.Conditions {
		if c.Status != corev1.ConditionFalse || c.Reason != "ContainersNotReady" || !c.LastTransitionTime.Time.Equal(t0) || c.Message != "containers with unready status: [b]" {
			t.Errorf("condition %+v", c)
		}
	}
	if SetReadyConditions(pod, t0.Add(time.Minute)) {
		t.Error("no change reported as a change")
	}
	pod.Status.ContainerStatuses[1].Ready = true
	if !SetReadyConditions(pod, t0.Add(2*time.Minute)) {
		t.Fatal("all ready reported no change")
	}
	for _, c := range pod.Status.Conditions {
		if c.Status != corev1.ConditionTrue || c.Reason != "" || !c.LastTransitionTime.Time.Equal(t0.Add(2*time.Minute)) {
			t.Errorf("condition after ready %+v", c)
		}
	}
}
