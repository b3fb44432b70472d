// Package probes runs the startup, liveness and readiness probes of every
// pod in the simulator, as a kubelet's prober does (KWOK probes nothing):
// HTTP GET, TCP socket and gRPC probes against the pod IP, with the kubelet's
// timing rules (initialDelaySeconds from the container's start, period,
// timeout, success and failure thresholds; the startup probe holds the
// others back). Readiness decides the pod's Ready and ContainersReady
// conditions and containerStatuses[].ready; a failed liveness or startup
// probe restarts the container through a hook. Exec probes run their
// command as the container would (sim/command: its shell, curl, wget, jq
// and grep, localhost being the pod's fake worker); a command the simulator
// cannot evaluate fails the probe, logged and recorded as an Unhealthy
// event. gRPC probes call the gRPC health service, as the kubelet's.
package probes

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Kind is a probe's role.
type Kind string

// The three probes of a container.
const (
	Startup   Kind = "startup"
	Liveness  Kind = "liveness"
	Readiness Kind = "readiness"
)

// Kinds in the order they are evaluated.
var Kinds = []Kind{Startup, Liveness, Readiness}

// Kubelet defaults for fields a probe leaves at zero.
const (
	defaultPeriod           = 10 * time.Second
	defaultTimeout          = 1 * time.Second
	defaultFailureThreshold = 3
	defaultSuccessThreshold = 1
)

// Timing is a probe's schedule and thresholds with the defaults applied.
type Timing struct {
	InitialDelay, Period, Timeout      time.Duration
	SuccessThreshold, FailureThreshold int
}

// TimingOf applies the kubelet's defaults to p.
func TimingOf(p *corev1.Probe) Timing {
	t := Timing{
		InitialDelay:     time.Duration(p.InitialDelaySeconds) * time.Second,
		Period:           time.Duration(p.PeriodSeconds) * time.Second,
		Timeout:          time.Duration(p.TimeoutSeconds) * time.Second,
		SuccessThreshold: int(p.SuccessThreshold),
		FailureThreshold: int(p.FailureThreshold),
	}
	if t.Period <= 0 {
		t.Period = defaultPeriod
	}
	if t.Timeout <= 0 {
		t.Timeout = defaultTimeout
	}
	if t.SuccessThreshold <= 0 {
		t.SuccessThreshold = defaultSuccessThreshold
	}
	if t.FailureThreshold <= 0 {
		t.FailureThreshold = defaultFailureThreshold
	}
	return t
}

// probeState is one probe's counters.
type probeState struct {
	timing    Timing
	next      time.Time
	successes int
	failures  int
}

// Container is the probe state of one run of one container: it is made
// afresh when the container (re)starts, as the kubelet forgets a
// container's probe results when it restarts it.
type Container struct {
	probes map[Kind]*probeState
	// Started is false until the startup probe succeeds (true at once
	// without one); Ready is false until the readiness probe succeeds
	// (true once started without one).
	Started, Ready bool
}

// NewContainer is the probe state of container c that started at start.
func NewContainer(c *corev1.Container, start time.Time) *Container {
	s := &Container{probes: map[Kind]*probeState{}}
	for _, k := range Kinds {
		if p := ProbeOf(c, k); p != nil {
			t := TimingOf(p)
			s.probes[k] = &probeState{timing: t, next: start.Add(t.InitialDelay)}
		}
	}
	s.Started = s.probes[Startup] == nil
	s.Ready = s.Started && s.probes[Readiness] == nil
	return s
}

// ProbeOf returns c's probe of kind k, or nil.
func ProbeOf(c *corev1.Container, k Kind) *corev1.Probe {
	switch k {
	case Startup:
		return c.StartupProbe
	case Liveness:
		return c.LivenessProbe
	default:
		return c.ReadinessProbe
	}
}

// Probed reports whether the container has any probe.
func (s *Container) Probed() bool { return len(s.probes) > 0 }

// Timing returns the timing of probe k; ok is false without that probe.
func (s *Container) Timing(k Kind) (Timing, bool) {
	p := s.probes[k]
	if p == nil {
		return Timing{}, false
	}
	return p.timing, true
}

// Due lists the probes to run at now: the startup probe until it
// succeeds, then liveness and readiness, each once its next time came.
func (s *Container) Due(now time.Time) []Kind {
	var out []Kind
	for _, k := range Kinds {
		p := s.probes[k]
		if p == nil || now.Before(p.next) {
			continue
		}
		if k == Startup && s.Started {
			continue
		}
		if k != Startup && !s.Started {
			continue
		}
		out = append(out, k)
	}
	return out
}

// NextDue is the earliest time a probe can be due, or zero when none will
// ever be (no probes, or only a startup probe that succeeded).
func (s *Container) NextDue() time.Time {
	var next time.Time
	for _, k := range Kinds {
		p := s.probes[k]
		if p == nil || (k == Startup && s.Started) {
			continue
		}
		if next.IsZero() || p.next.Before(next) {
			next = p.next
		}
	}
	return next
}

// Outcome is what a probe result changed.
type Outcome struct {
	// Changed is true when Started or Ready changed.
	Changed bool
	// Restart is true when a liveness or startup probe reached its failure
	// threshold: the container must be restarted.
	Restart bool
}

// Record applies the result of probe k run at now.
func (s *Container) Record(k Kind, ok bool, now time.Time) Outcome {
	p := s.probes[k]
	if p == nil {
		return Outcome{}
	}
	p.next = now.Add(p.timing.Period)
	if ok {
		p.successes++
		p.failures = 0
	} else {
		p.failures++
		p.successes = 0
	}
	var out Outcome
	switch k {
	case Startup:
		// The startup probe's success threshold is always 1.
		if ok && !s.Started {
			s.Started = true
			out.Changed = true
			if s.probes[Readiness] == nil {
				s.Ready = true
			}
			// The other probes start their schedule now.
			for _, o := range []Kind{Liveness, Readiness} {
				if q := s.probes[o]; q != nil && q.next.Before(now) {
					q.next = now
				}
			}
		}
		out.Restart = !ok && p.failures >= p.timing.FailureThreshold
	case Liveness:
		out.Restart = !ok && p.failures >= p.timing.FailureThreshold
	case Readiness:
		switch {
		case ok && !s.Ready && p.successes >= p.timing.SuccessThreshold:
			s.Ready, out.Changed = true, true
		case !ok && s.Ready && p.failures >= p.timing.FailureThreshold:
			s.Ready, out.Changed = false, true
		}
	}
	return out
}
