// Package probes lays a user's container probe over a default one, the one
// rule the renderer and the v1beta1 conversion share: a v1alpha1 service's
// probes and its mainContainer's meet in v1beta1's one main container as
// they meet in the rendered pod.
package probes

import (
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
)

// Overlay lays user over base. A user's probe with a handler of its own
// replaces base whole (its handler and base's cannot be mixed); one without
// a handler changes only the fields it sets (thresholds, periods) of base.
// Either may be nil. The result shares no memory with the arguments.
func Overlay(base, user *corev1.Probe) *corev1.Probe {
	switch {
	case user == nil:
		return base.DeepCopy()
	case base == nil || HasHandler(user):
		return user.DeepCopy()
	}
	out := base.DeepCopy()
	// A probe's JSON omits its zero fields, so unmarshalling the user's
	// probe over the default sets exactly the fields the user set.
	raw, err := json.Marshal(user)
	if err == nil {
		err = json.Unmarshal(raw, out)
	}
	if err != nil {
		return user.DeepCopy()
	}
	return out
}

// HasHandler reports whether p says how to probe (exec, HTTP, TCP or gRPC).
func HasHandler(p *corev1.Probe) bool {
	h := p.ProbeHandler
	return h.Exec != nil || h.HTTPGet != nil || h.TCPSocket != nil || h.GRPC != nil
}
