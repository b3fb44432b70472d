package scope

import "time"

// Span is a span of time [From, To).
type Span struct{ From, To time.Time }

// MinSettle is the least time a namespace-scoped operator waits after
// (re)gaining its marker Lease before it writes: a cluster-wide operator
// that confirmed the namespace free just before the Lease was created may
// write for ConfirmTTL more (operator/app sets the settle from the renew
// interval, never below this).
const MinSettle = ConfirmTTL * 3 / 2

// Renewal is one renewal of a marker Lease: Sent is the renewTime it
// wrote (a holder sets it just before it sends), Landed when the API
// server answered it (zero: at once). Until a renewal lands the stored
// Lease still says the previous renewTime, and a cluster-wide operator
// reading it then rightly finds it expired.
type Renewal struct{ Sent, Landed time.Time }

// HeldSpans splits [acquired, until) into the spans in which a marker Lease
// acquired at acquired held its namespace, given its renewals: a renewal
// holds it for duration from when it was sent; a renewal that lands after
// the Lease expired (sent late, or answered late by a loaded API server)
// ends a lapse, in which the cluster-wide operator rightly takes the
// namespace back. Each span starts once the holder has settled, after the
// acquisition as after a lapse: until then a cluster-wide operator that
// confirmed the namespace free a moment before the Lease was written may
// still write (ConfirmTTL), and the holder does not, so the two never
// interleave; CI once saw such a write 498 ms after the acquisition. The
// lapses are returned too. On a starved machine a holder does renew late:
// tests that prove a cluster-wide operator wrote nothing while a Lease was
// held count its writes in the held spans only.
func HeldSpans(acquired, until time.Time, renewals []Renewal, duration, settle time.Duration) (held, lapses []Span) {
	start, last := acquired.Add(settle), acquired
	for _, r := range renewals {
		if !r.Sent.After(last) || !r.Sent.Before(until) {
			continue
		}
		landed := r.Landed
		if landed.Before(r.Sent) {
			landed = r.Sent
		}
		if end := last.Add(duration); !landed.Before(end) {
			held = append(held, Span{start, end})
			lapses = append(lapses, Span{end, landed.Add(settle)})
			start = landed.Add(settle)
		}
		last = r.Sent
	}
	if end := last.Add(duration); end.Before(until) {
		held = append(held, Span{start, end})
		lapses = append(lapses, Span{end, until})
	} else {
		held = append(held, Span{start, until})
	}
	return held, lapses
}
