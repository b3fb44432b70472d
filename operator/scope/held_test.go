package scope

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestHeldSpans(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	const d, settle = 2 * time.Second, 750 * time.Millisecond
	for name, tc := range map[string]struct {
		renewals     []int
		landed       map[int]int // a renewal answered late: sent -> landed
		until        int
		held, lapses []Span
	}{"renewed on time: held once settled, throughout": {
		renewals: []int{500, 1000, 1500, 2000, 2500},
		until:    3000,
		held:     []Span{{at(750), at(3000)}},
	}, "a renewal 2.5 s late: a lapse until it has settled": {
		renewals: []int{500, 3000, 3500},
		until:    4000,
		held:     []Span{{at(750), at(2500)}, {at(3750), at(4000)}},
		lapses:   []Span{{at(2500), at(3750)}},
	}, "a renewal sent on time but answered 2 s late: a lapse until it has landed and settled": {
		renewals: []int{500, 2000, 3500},
		landed:   map[int]int{2000: 3000},
		until:    5000,
		held:     []Span{{at(750), at(2500)}, {at(3750), at(5000)}},
		lapses:   []Span{{at(2500), at(3750)}},
	}, "no renewal after the last one: lapsed until the end": {
		renewals: []int{500},
		until:    4000,
		held:     []Span{{at(750), at(2500)}},
		lapses:   []Span{{at(2500), at(4000)}},
	}, "renewals outside the span are ignored": {
		renewals: []int{-100, 1000, 5000},
		until:    2500,
		held:     []Span{{at(750), at(2500)}},
	}} {
		t.Run(name, func(t *testing.T) {
			var renewals []Renewal
			for _, r := range tc.renewals {
				landed, late := tc.landed[r]
				if !late {
					landed = r
				}
				renewals = append(renewals, Renewal{Sent: at(r), Landed: at(landed)})
			}
			held, lapses := HeldSpans(at(0), at(tc.until), renewals, d, settle)
			if diff := cmp.Diff(tc.held, held); diff != "" {
				t.Errorf("held (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.lapses, lapses); diff != "" {
				t.Errorf("lapses (-want +got):\n%s", diff)
			}
		})
	}
}
