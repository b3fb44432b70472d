package scope

import (
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
)

// LeaseName is the marker Lease a namespace-scoped operator holds in its
// namespace. `kubectl get lease -A --field-selector
// metadata.name=dynamo-operator-namespace-scope` lists the namespaces with
// local operators; the holderIdentity is the operator's version.
const LeaseName = "dynamo-operator-namespace-scope"

// LeaseExpiry is when a marker Lease stops excluding its namespace: its last
// renewal plus its duration. Operators that never set renewTime (older
// versions) are timed from acquireTime, else from the Lease's creation, so
// their namespace is excluded from the moment the Lease exists. A Lease
// without a duration never expires by time; it only ends when deleted.
func LeaseExpiry(l *coordinationv1.Lease) (expiry time.Time, expires bool) {
	if l.Spec.LeaseDurationSeconds == nil {
		return time.Time{}, false
	}
	start := l.CreationTimestamp.Time
	switch {
	case l.Spec.RenewTime != nil:
		start = l.Spec.RenewTime.Time
	case l.Spec.AcquireTime != nil:
		start = l.Spec.AcquireTime.Time
	}
	return start.Add(time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second), true
}
