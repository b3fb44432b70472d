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
// that only report progress (replica counts, a component's own message)
// while what it waits for stays the same: its state, Ready condition,
// observed generation, blockers and awaited components. Each component's
// rollout moves several counters several times, and at scale hundreds of
// graphs converge at once: writing progress every second cost a graph of
// four services seven status writes to become Ready, while what a user
// must act on (a blocker) or watches for (a component done) is written at
// once.
const progressInterval = 10 * time.Second

// progressThrottle remembers when each graph's status was last written, and
// the news it then reported.
type progressThrottle struct {
	mu   sync.Mutex
	last map[types.NamespacedName]lastWrite
}

// progressNews is what a graph's status says beyond its state and Ready
// condition that a user waits to see change: the components holding it
// back and why (componentBlockers), and the components it still waits for
// (awaitedComponents).
type progressNews struct {
	blockers string
	awaited  string
}

type lastWrite struct {
	at   time.Time
	news progressNews
}

// wait returns how long the write of next over current should wait; zero
// means write now. A change of state, of the Ready condition's status or of
// the observed generation is never held back, nor a change of news: why a
// rollout is stuck, or which components it still waits for.
func (p *progressThrottle) wait(key types.NamespacedName, current, next *v1alpha1.DynamoGraphDeploymentStatus,
	news progressNews, now time.Time) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if significant(current, next) {
		return 0
	}
	if last, ok := p.last[key]; ok && last.news == news {
		if w := progressInterval - now.Sub(last.at); w > 0 {
			return w
		}
	}
	return 0
}

// wrote records a status write at now reporting news.
func (p *progressThrottle) wrote(key types.NamespacedName, news progressNews, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.last == nil {
		p.last = map[types.NamespacedName]lastWrite{}
	}
	p.last[key] = lastWrite{at: now, news: news}
}

// awaitedComponents names the components that are not available for their
// current spec, sorted.
func awaitedComponents(components []*v1alpha1.DynamoComponentDeployment) string {
	var out []string
	for _, dcd := range components {
		if available, _ := componentCurrent(dcd); !available {
			out = append(out, dcd.Name)
		}
	}
	sort.Strings(out)
	return strings.Join(out, ",")
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
	// The Ready condition's verdict, and whether the InferencePool exists:
	// the pool appears once its API is installed, without a spec change,
	// and users wait for it.
	for _, t := range []string{v1alpha1.ConditionReady, ConditionInferencePool} {
		a := meta.FindStatusCondition(current.Conditions, t)
		b := meta.FindStatusCondition(next.Conditions, t)
		if (a == nil) != (b == nil) || (a != nil && (a.Status != b.Status || a.Reason != b.Reason)) {
			return true
		}
	}
	return false
}
