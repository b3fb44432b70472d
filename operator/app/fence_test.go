package app

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"k8s.io/client-go/tools/leaderelection/resourcelock"
	clocktesting "k8s.io/utils/clock/testing"
)

// fakeLock is an election lock whose writes take latency on the clock and
// answer err.
type fakeLock struct {
	resourcelock.Interface
	clock   *clocktesting.FakeClock
	latency time.Duration
	err     error
}

func (l *fakeLock) Create(_ context.Context, _ resourcelock.LeaderElectionRecord) error {
	l.clock.Step(l.latency)
	return l.err
}

func (l *fakeLock) Update(_ context.Context, _ resourcelock.LeaderElectionRecord) error {
	l.clock.Step(l.latency)
	return l.err
}

// write is one write of the election Lease: an acquisition (create) or an
// update naming holder, taking latency, answered with err.
type write struct {
	create  bool
	holder  string
	latency time.Duration
	err     error
}

func TestLeaseFence(t *testing.T) {
	const (
		id       = "pod-a_1"
		deadline = 6 * time.Second
	)
	failed := errors.New("the API server did not answer")
	cases := map[string]struct {
		writes []write
		// after is how long after the last write answered the write is tried.
		after    time.Duration
		wantOpen bool
	}{
		"never led: the certificate bootstrap may write": {
			wantOpen: true,
		},
		"never led, a failed acquisition": {
			writes:   []write{{create: true, holder: id, err: failed}},
			after:    time.Hour,
			wantOpen: true,
		},
		"acquired, within the renew deadline": {
			writes:   []write{{create: true, holder: id}},
			after:    deadline - time.Millisecond,
			wantOpen: true,
		},
		"acquired, the renew deadline reached": {
			writes: []write{{create: true, holder: id}},
			after:  deadline,
		},
		"renewed since": {
			writes:   []write{{create: true, holder: id}, {holder: id, latency: 0}},
			after:    5 * time.Second,
			wantOpen: true,
		},
		"a renewal answered late counts from when it was sent": {
			writes: []write{{holder: id, latency: 4 * time.Second}},
			after:  2 * time.Second,
		},
		"a renewal answered late, still fresh": {
			writes:   []write{{holder: id, latency: 4 * time.Second}},
			after:    2*time.Second - time.Millisecond,
			wantOpen: true,
		},
		"a failed renewal refreshes nothing": {
			writes: []write{{holder: id}, {holder: id, latency: 3 * time.Second, err: failed}},
			after:  3 * time.Second,
		},
		"released on shutdown": {
			writes: []write{{holder: id}, {holder: ""}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			f := newLeaseFence(clk, deadline, id)
			inner := &fakeLock{clock: clk}
			lock := f.lock(inner)
			for _, w := range tc.writes {
				inner.latency, inner.err = w.latency, w.err
				rec := resourcelock.LeaderElectionRecord{HolderIdentity: w.holder}
				if w.create {
					_ = lock.Create(context.Background(), rec)
				} else {
					_ = lock.Update(context.Background(), rec)
				}
			}
			clk.Step(tc.after)
			if err := f.check(); (err == nil) != tc.wantOpen {
				t.Errorf("fence check = %v, want open: %t", err, tc.wantOpen)
			}
		})
	}
}

func TestFenceTransport(t *testing.T) {
	const id = "pod-a_1"
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	f := newLeaseFence(clk, 6*time.Second, id)
	_ = f.lock(&fakeLock{clock: clk}).Update(context.Background(), resourcelock.LeaderElectionRecord{HolderIdentity: id})
	sent := map[string]int{}
	rt := f.transport(roundTripper(func(r *http.Request) (*http.Response, error) {
		sent[r.Method+" "+r.URL.Path]++
		return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody}, nil
	}))
	requests := map[string]struct {
		method, path string
		// whileFresh, whenStale: whether it is sent.
		whileFresh, whenStale bool
	}{
		"a list":           {http.MethodGet, "/apis/apps/v1/deployments", true, true},
		"a watch":          {http.MethodGet, "/api/v1/pods?watch=true", true, true},
		"a TokenReview":    {http.MethodPost, "/apis/authentication.k8s.io/v1/tokenreviews", true, true},
		"an access review": {http.MethodPost, "/apis/authorization.k8s.io/v1/subjectaccessreviews", true, true},
		"an apply":         {http.MethodPatch, "/apis/apps/v1/namespaces/ns/deployments/d", true, false},
		"a create":         {http.MethodPost, "/api/v1/namespaces/ns/events", true, false},
		"an update":        {http.MethodPut, "/apis/nvidia.com/v1alpha1/namespaces/ns/dynamographdeployments/g/status", true, false},
		"a delete":         {http.MethodDelete, "/api/v1/namespaces/ns/pods/p", true, false},
	}
	for _, stale := range []bool{false, true} {
		if stale {
			clk.Step(6 * time.Second)
		}
		for name, r := range requests {
			req := httptest.NewRequest(r.method, r.path, nil)
			before := sent[r.method+" "+req.URL.Path]
			_, err := rt.RoundTrip(req)
			want := r.whileFresh
			if stale {
				want = r.whenStale
			}
			got := sent[r.method+" "+req.URL.Path] > before
			if got != want || (err == nil) != want {
				t.Errorf("stale=%t, %s: sent %t (err %v), want sent %t", stale, name, got, err, want)
			}
		}
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
