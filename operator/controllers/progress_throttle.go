package controllers

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

// progressInterval is the least time between two status writes of a graph
// that only report progress (replica counts, which components are still
// awaited) while its state, Ready condition, observed generation and
// blockers stay the same. Each component's rollout moves several counters
// several times, and at scale hundreds of graphs converge at once: writing
// progress every second cost a graph of four services seven status writes
// to become Ready; every ten seconds it costs two or three (pending, ready),
// while what a user must act on (a blocker) is written at once.
const progressInterval = 10 * time.Second

// progressThrottle remembers when each graph's status was last written, and
// the blockers it then reported.
type progressThrottle struct {
	mu   sync.Mutex
	last map[types.NamespacedName]lastWrite
}

type lastWrite struct {
	at       time.Time
	blockers string
}

// wait returns how long the write of next over current should wait; zero
// means write now. A change of state, of the Ready condition's status or of
// the observed generation is never held back, nor a change of blockers
// (componentBlockers): why a rollout is stuck is news, not progress.
func (p *progressThrottle) wait(key types.NamespacedName, current, next *v1alpha1.DynamoGraphDeploymentStatus,
	blockers string, now time.Time) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if significant(current, next) {
		return 0
	}
	if last, ok := p.last[key]; ok && last.blockers == blockers {
		if w := progressInterval - now.Sub(last.at); w > 0 {
			return w
		}
	}
	return 0
}

// wrote records a status write at now reporting blockers.
func (p *progressThrottle) wrote(key types.NamespacedName, blockers string, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.last == nil {
		p.last = map[types.NamespacedName]lastWrite{}
	}
	p.last[key] = lastWrite{at: now, blockers: blockers}
}

// componentBlockers names what holds the components back beyond an ordinary
// rollout: each component whose Available condition gives another reason
// (unschedulable, crash-looping, a missing claim...) or that is Stalled,
// with that reason. Empty while every component is available or rolling
// out.
func componentBlockers(components []*v1alpha1.DynamoComponentDeployment) string {
	var out []string
	for _, dcd := range components {
		cond := meta.FindStatusCondition(dcd.Status.Conditions, v1alpha1.ConditionAvailable)
		stalled := meta.IsStatusConditionTrue(dcd.Status.Conditions, v1alpha1.ConditionStalled)
		if cond == nil || (!stalled && (cond.Reason == ReasonAvailable || cond.Reason == ReasonRolloutInProgress)) {
			continue
		}
		out = append(out, fmt.Sprintf("%s:%s:%t", dcd.Name, cond.Reason, stalled))
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

// forget drops a deleted graph.
func (p *progressThrottle) forget(key types.NamespacedName) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.last, key)
}

func significant(current, next *v1alpha1.DynamoGraphDeploymentStatus) bool {
	if current.State != next.State || current.ObservedGeneration != next.ObservedGeneration {
		return true
	}
	// A restart's or rolling update's move to another service or phase
	// is what users and the next step of a sequential restart wait for.
	if !equality.Semantic.DeepEqual(current.Restart, next.Restart) ||
		!equality.Semantic.DeepEqual(current.RollingUpdate, next.RollingUpdate) {
		return true
	}
	a := meta.FindStatusCondition(current.Conditions, v1alpha1.ConditionReady)
	b := meta.FindStatusCondition(next.Conditions, v1alpha1.ConditionReady)
	if a == nil || b == nil {
		return a != b
	}
	return a.Status != b.Status || a.Reason != b.Reason
}
