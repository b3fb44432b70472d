package scope

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
)

// GatedRecorder drops events about objects in namespaces the gate does not
// allow: an Event is a write in that namespace too.
func GatedRecorder(r events.EventRecorder, g *Gate) events.EventRecorder {
	return &gatedRecorder{next: r, gate: g}
}

type gatedRecorder struct {
	next events.EventRecorder
	gate *Gate
}

func (r *gatedRecorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...interface{}) {
	if obj, err := meta.Accessor(regarding); err == nil && !r.gate.Allowed(obj.GetNamespace()) {
		return
	}
	r.next.Eventf(regarding, related, eventtype, reason, action, note, args...)
}
