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

// HeldSpans splits [acquired, until) into the spans in which a marker Lease
// acquired at acquired held its namespace, given when it was renewed: a
// renewal holds it for duration; a renewal that comes after the Lease
// expired ends a lapse, in which the cluster-wide operator rightly takes the
// namespace back. Each span starts once the holder has settled, after the
// acquisition as after a lapse: until then a cluster-wide operator that
// confirmed the namespace free a moment before the Lease was written may
// still write (ConfirmTTL), and the holder does not, so the two never
// interleave; CI once saw such a write 498 ms after the acquisition. The
// lapses are returned too. On a starved machine a holder does renew late:
// tests that prove a cluster-wide operator wrote nothing while a Lease was
// held count its writes in the held spans only.
func HeldSpans(acquired, until time.Time, renewals []time.Time, duration, settle time.Duration) (held, lapses []Span) {
	start, last := acquired.Add(settle), acquired
	for _, r := range renewals {
		if !r.After(last) || !r.Before(until) {
			continue
		}
		if end := last.Add(duration); !r.Before(end) {
			held = append(held, Span{start, end})
			lapses = append(lapses, Span{end, r.Add(settle)})
			start = r.Add(settle)
		}
		last = r
	}
	if end := last.Add(duration); end.Before(until) {
		held = append(held, Span{start, end})
		lapses = append(lapses, Span{end, until})
	} else {
		held = append(held, Span{start, until})
	}
	return held, lapses
}
