package controllers

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

// progressInterval is the least time between two status writes of a graph
// that only report progress (replica counts, what is still awaited) while
// its state, Ready condition and observed generation stay the same. Each
// component's rollout moves several counters several times; writing every
// step would cost a graph of four services a dozen writes for one rollout.
const progressInterval = time.Second

// progressThrottle remembers when each graph's status was last written.
type progressThrottle struct {
	mu   sync.Mutex
	last map[types.NamespacedName]time.Time
}

// wait returns how long the write of next over current should wait; zero
// means write now. A change of state, of the Ready condition's status or of
// the observed generation is never held back.
func (p *progressThrottle) wait(key types.NamespacedName, current, next *v1alpha1.DynamoGraphDeploymentStatus, now time.Time) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if significant(current, next) {
		return 0
	}
	if last, ok := p.last[key]; ok {
		if w := progressInterval - now.Sub(last); w > 0 {
			return w
		}
	}
	return 0
}

// wrote records a status write at now.
func (p *progressThrottle) wrote(key types.NamespacedName, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.last == nil {
		p.last = map[types.NamespacedName]time.Time{}
	}
	p.last[key] = now
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
	a := meta.FindStatusCondition(current.Conditions, v1alpha1.ConditionReady)
	b := meta.FindStatusCondition(next.Conditions, v1alpha1.ConditionReady)
	if a == nil || b == nil {
		return a != b
	}
	return a.Status != b.Status || a.Reason != b.Reason
}
