package scope_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/internal/await"
	"github.com/dynamoctl/dynamo-operator/internal/testenv"
	"github.com/dynamoctl/dynamo-operator/operator/scope"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, func(e *testenv.Env) { env = e }))
}

// waitForTimer waits until the code under test sleeps on the fake clock, so
// that stepping the clock wakes it rather than racing it.
func waitForTimer(t *testing.T, clk *clocktesting.FakeClock) {
	t.Helper()
	await.New(t).Eventually(clk.HasWaiters).WithPolling(20*time.Millisecond).Should(gomega.BeTrue(), "the holder waits on the clock")
}

func getLease(t *testing.T, ns string) (*coordinationv1.Lease, bool) {
	t.Helper()
	l := &coordinationv1.Lease{}
	err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: scope.LeaseName}, l)
	if apierrors.IsNotFound(err) {
		return nil, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return l, true
}

// flakyClient fails the holder's writes on demand, as an API server it
// cannot reach would.
type flakyClient struct {
	client.Client
	fail atomic.Bool
}

func (c *flakyClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	if c.fail.Load() {
		return errors.New("connection refused")
	}
	return c.Client.Update(ctx, obj, opts...)
}

type holderRun struct {
	h        *scope.Holder
	gate     *scope.Gate
	clk      *clocktesting.FakeClock
	c        *flakyClient
	acquired chan string
	cancel   context.CancelFunc
	done     chan struct{}
}

func startHolder(t *testing.T, ns, identity string, clk *clocktesting.FakeClock, adjust ...func(*scope.Holder)) *holderRun {
	t.Helper()
	r := &holderRun{clk: clk, c: &flakyClient{Client: env.Client}, acquired: make(chan string, 10), done: make(chan struct{})}
	r.gate = scope.NewNamespaceGate(clk, ns)
	r.h = &scope.Holder{
		Client: r.c, Reader: env.Client, Gate: r.gate,
		Namespace: ns, Identity: identity,
		Duration: 30 * time.Second, RenewInterval: 10 * time.Second,
		Clock:    clk,
		Acquired: func(_ context.Context, ns string) { r.acquired <- ns },
		Log:      logr.Discard(),
	}
	for _, f := range adjust {
		f(r.h)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() {
		defer close(r.done)
		_ = r.h.Start(ctx)
	}()
	t.Cleanup(r.stop)
	return r
}

func (r *holderRun) stop() {
	r.cancel()
	<-r.done
}

func TestHolderOwnsFromCreationRenewsAndReleases(t *testing.T) {
	ns := env.Namespace(t, "holder")
	clk := clocktesting.NewFakeClock(time.Now().Truncate(time.Second))
	start := clk.Now()
	r := startHolder(t, ns, "v2.0.0-beta", clk)

	if got := <-r.acquired; got != ns {
		t.Fatalf("acquired %q, want %q", got, ns)
	}
	l, ok := getLease(t, ns)
	if !ok {
		t.Fatal("no lease after acquisition")
	}
	if ptr.Deref(l.Spec.HolderIdentity, "") != "v2.0.0-beta" || ptr.Deref(l.Spec.LeaseDurationSeconds, 0) != 30 {
		t.Errorf("lease spec = %+v, want holder v2.0.0-beta for 30s", l.Spec)
	}
	// renewTime at creation: a cluster-wide operator excludes the namespace
	// from the moment the Lease exists.
	if l.Spec.RenewTime == nil || !l.Spec.RenewTime.Time.Equal(start) || l.Spec.AcquireTime == nil {
		t.Errorf("renewTime = %v, acquireTime = %v; want both at creation (%v)", l.Spec.RenewTime, l.Spec.AcquireTime, start)
	}
	if !r.gate.Allowed(ns) {
		t.Error("the holder must own its namespace once the lease exists")
	}

	waitForTimer(t, clk)
	clk.Step(10 * time.Second)
	await.New(t).Eventually(func() bool {
		l, ok := getLease(t, ns)
		return ok && l.Spec.RenewTime.Time.Equal(start.Add(10*time.Second))
	}).Should(gomega.BeTrue(), "the lease is renewed")

	r.stop()
	if _, ok := getLease(t, ns); ok {
		t.Error("a clean shutdown must delete the lease")
	}
	if r.gate.Allowed(ns) {
		t.Error("a stopped holder must not own the namespace")
	}
}

// A renewal the API server applied but whose answer was lost leaves the
// holder's copy of its Lease older than the Lease: a clean shutdown still
// releases it, and leaves alone a Lease another operator took meanwhile.
func TestHolderReleasesALeaseNewerThanItsCopy(t *testing.T) {
	for name, tc := range map[string]struct {
		holder  string // the Lease's holder after the change behind the holder's back
		deleted bool
	}{
		"still ours":       {holder: "v2.0.0", deleted: true},
		"taken by another": {holder: "v3.0.0", deleted: false},
	} {
		t.Run(name, func(t *testing.T) {
			ns := env.Namespace(t, "holder-stale")
			clk := clocktesting.NewFakeClock(time.Now().Truncate(time.Second))
			r := startHolder(t, ns, "v2.0.0", clk)
			<-r.acquired
			l, ok := getLease(t, ns)
			if !ok {
				t.Fatal("no lease after acquisition")
			}
			l.Spec.HolderIdentity = ptr.To(tc.holder)
			renewed := metav1.NewMicroTime(clk.Now().Add(time.Second)) // a change: a new resourceVersion
			l.Spec.RenewTime = &renewed
			if err := env.Client.Update(context.Background(), l); err != nil {
				t.Fatal(err)
			}
			r.stop()
			if _, ok := getLease(t, ns); ok == tc.deleted {
				t.Errorf("after a clean shutdown the lease held by %q exists: %t, want %t", tc.holder, ok, !tc.deleted)
			}
		})
	}
}

func TestHolderSettlesBeforeItWrites(t *testing.T) {
	ns := env.Namespace(t, "holder-settle")
	clk := clocktesting.NewFakeClock(time.Now().Truncate(time.Second))
	r := startHolder(t, ns, "v2", clk, func(h *scope.Holder) { h.Settle = time.Second })
	await.New(t).Eventually(func() bool { _, ok := getLease(t, ns); return ok }).Should(gomega.BeTrue(), "the lease exists")
	waitForTimer(t, clk)
	if r.gate.Allowed(ns) {
		t.Fatal("the holder must not write while a cluster-wide operator may still finish its writes")
	}
	clk.Step(time.Second)
	<-r.acquired
	if !r.gate.Allowed(ns) {
		t.Error("after settling the holder owns its namespace")
	}
}

func TestHolderStopsBeforeExpiryWhenItCannotRenew(t *testing.T) {
	ns := env.Namespace(t, "holder-lost")
	clk := clocktesting.NewFakeClock(time.Now().Truncate(time.Second))
	start := clk.Now()
	r := startHolder(t, ns, "v2", clk)
	<-r.acquired

	r.c.fail.Store(true)
	// Renewals fail from now on; the holder retries on its clock.
	for clk.Now().Add(2500 * time.Millisecond).Before(start.Add(27 * time.Second)) {
		waitForTimer(t, clk)
		clk.Step(2500 * time.Millisecond)
	}
	if !r.gate.Allowed(ns) {
		t.Fatalf("at +%v the holder still has time before its margin", clk.Since(start))
	}
	clk.SetTime(start.Add(27 * time.Second))
	if r.gate.Allowed(ns) {
		t.Fatal("the holder must stop writing before its lease expires (at +27s of 30s)")
	}
	if l, _ := getLease(t, ns); !l.Spec.RenewTime.Time.Equal(start) {
		t.Fatalf("renewTime moved to %v though every renewal failed", l.Spec.RenewTime)
	}

	// The API comes back: the holder renews and, having lost the namespace
	// meanwhile, re-enqueues everything in it.
	r.c.fail.Store(false)
	waitForTimer(t, clk)
	clk.Step(2500 * time.Millisecond)
	select {
	case <-r.acquired:
	case <-time.After(15 * time.Second):
		t.Fatal("the holder did not re-acquire after the API came back")
	}
	if !r.gate.Allowed(ns) {
		t.Error("a renewed holder owns its namespace again")
	}
}

func TestHolderWaitsForAnotherVersionsUnexpiredLease(t *testing.T) {
	ns := env.Namespace(t, "holder-blocked")
	clk := clocktesting.NewFakeClock(time.Now().Truncate(time.Second))
	now := metav1.NewMicroTime(clk.Now())
	other := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: scope.LeaseName},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity: ptr.To("v1.0.0"), LeaseDurationSeconds: ptr.To[int32](30),
			AcquireTime: &now, RenewTime: &now,
		},
	}
	if err := env.Client.Create(context.Background(), other); err != nil {
		t.Fatal(err)
	}
	r := startHolder(t, ns, "v2.0.0", clk)
	for range 4 {
		waitForTimer(t, clk)
		clk.Step(2500 * time.Millisecond)
	}
	if r.gate.Allowed(ns) {
		t.Fatal("two operators must never own one namespace")
	}
	if l, _ := getLease(t, ns); ptr.Deref(l.Spec.HolderIdentity, "") != "v1.0.0" {
		t.Fatalf("holder = %q, want the other version's lease untouched", ptr.Deref(l.Spec.HolderIdentity, ""))
	}
	clk.SetTime(now.Add(30 * time.Second))
	waitForTimer(t, clk)
	clk.Step(2500 * time.Millisecond)
	<-r.acquired
	l, _ := getLease(t, ns)
	if ptr.Deref(l.Spec.HolderIdentity, "") != "v2.0.0" || ptr.Deref(l.Spec.LeaseTransitions, 0) != 1 {
		t.Errorf("after expiry: holder %q, transitions %d; want v2.0.0 and 1",
			ptr.Deref(l.Spec.HolderIdentity, ""), ptr.Deref(l.Spec.LeaseTransitions, 0))
	}
}

type trackerRun struct {
	gate    *scope.Gate
	resumed chan string
}

// startTracker reports resumed namespaces among mine only: leases of other
// tests (and earlier runs with -count) linger while their namespaces go.
func startTracker(t *testing.T, clk *clocktesting.FakeClock, mine ...string) *trackerRun {
	t.Helper()
	c, err := cache.New(env.Config, cache.Options{Scheme: env.Scheme, ByObject: map[client.Object]cache.ByObject{
		&coordinationv1.Lease{}: {Field: fields.OneTermEqualSelector("metadata.name", scope.LeaseName)},
	}})
	if err != nil {
		t.Fatal(err)
	}
	r := &trackerRun{gate: scope.NewClusterGate(clk), resumed: make(chan string, 10)}
	tr := &scope.Tracker{
		Gate: r.gate, Cache: c, Clock: clk, Log: logr.Discard(),
		Resume: func(_ context.Context, ns string) {
			if slices.Contains(mine, ns) {
				r.resumed <- ns
			}
		},
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 2)
	go func() { _ = c.Start(ctx); done <- struct{}{} }()
	go func() { _ = tr.Start(ctx); done <- struct{}{} }()
	t.Cleanup(func() { cancel(); <-done; <-done })
	if err := r.gate.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	return r
}

func createLease(t *testing.T, ns, name string, renew *time.Time) *coordinationv1.Lease {
	t.Helper()
	l := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("v2"), LeaseDurationSeconds: ptr.To[int32](30)},
	}
	if renew != nil {
		l.Spec.RenewTime = ptr.To(metav1.NewMicroTime(*renew))
	}
	if err := env.Client.Create(context.Background(), l); err != nil {
		t.Fatal(err)
	}
	return l
}

func TestTrackerExcludesUntilExpiryAndResumes(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now().Truncate(time.Second))
	start := clk.Now()
	existing := env.Namespace(t, "tracked-existing")
	createLease(t, existing, scope.LeaseName, &start)

	ns := env.Namespace(t, "tracked")
	other := env.Namespace(t, "tracked-other-lease")
	r := startTracker(t, clk, existing, ns, other)
	// Leases that existed before the start are known once the gate is
	// ready: no reconcile may slip into their namespaces.
	if !r.gate.Excluded(existing) {
		t.Fatal("a namespace whose lease existed at start must be excluded when the gate is ready")
	}

	createLease(t, other, "some-other-lease", &start)
	l := createLease(t, ns, scope.LeaseName, &start)
	await.New(t).Eventually(func() bool { return r.gate.Excluded(ns) }).Should(gomega.BeTrue(), "the new lease excludes its namespace")
	if r.gate.Excluded(other) {
		t.Error("only leases named " + scope.LeaseName + " exclude a namespace")
	}

	// A renewal at +29s moves the expiry to +59s.
	clk.SetTime(start.Add(29 * time.Second))
	renewed := start.Add(29 * time.Second)
	l.Spec.RenewTime = ptr.To(metav1.NewMicroTime(renewed))
	if err := env.Client.Update(context.Background(), l); err != nil {
		t.Fatal(err)
	}
	await.New(t).Eventually(func() bool {
		return r.gate.ExcludedNamespaces()[ns].Equal(renewed.Add(30 * time.Second))
	}).Should(gomega.BeTrue(), "the renewal is seen")
	clk.SetTime(start.Add(31 * time.Second))
	if got := <-r.resumed; got != existing {
		t.Errorf("resumed %q first, want %q whose lease expired at +30s", got, existing)
	}
	if !r.gate.Excluded(ns) {
		t.Fatal("a renewed lease keeps its namespace excluded past the old expiry")
	}
	clk.SetTime(renewed.Add(30 * time.Second))
	select {
	case got := <-r.resumed:
		if got != ns {
			t.Errorf("resumed %q, want %q", got, ns)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the namespace was not resumed at its lease's expiry")
	}
	if r.gate.Excluded(ns) {
		t.Error("an expired lease must not exclude")
	}
}

func TestTrackerResumesWhenTheLeaseIsDeleted(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now().Truncate(time.Second))
	ns := env.Namespace(t, "tracked-deleted")
	r := startTracker(t, clk, ns)
	// No renewTime: older operators leave it empty; the lease still
	// excludes from its creation on.
	l := createLease(t, ns, scope.LeaseName, nil)
	await.New(t).Eventually(func() bool { return r.gate.Excluded(ns) }).Should(gomega.BeTrue(), "the lease excludes")
	if err := env.Client.Delete(context.Background(), l); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-r.resumed:
		if got != ns {
			t.Errorf("resumed %q, want %q", got, ns)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("deleting the lease did not resume the namespace")
	}
	if r.gate.Excluded(ns) {
		t.Error("a deleted lease must not exclude")
	}
}

// A watch can lag behind a marker Lease just created (a loaded API server,
// a slow informer): writes read the Lease live, at most once per ConfirmTTL
// per namespace. The tracker's cache here never delivers a marker Lease, as
// if its watch lagged for ever.
func TestConfirmReadsTheLeaseTheWatchHasNotDelivered(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now().Truncate(time.Second))
	start := clk.Now()
	c, err := cache.New(env.Config, cache.Options{Scheme: env.Scheme, ByObject: map[client.Object]cache.ByObject{
		&coordinationv1.Lease{}: {Field: fields.OneTermEqualSelector("metadata.name", "no-lease-is-named-so")},
	}})
	if err != nil {
		t.Fatal(err)
	}
	gate := scope.NewClusterGate(clk)
	tr := &scope.Tracker{Gate: gate, Cache: c, Clock: clk, Log: logr.Discard(), Reader: env.Client}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 2)
	go func() { _ = c.Start(ctx); done <- struct{}{} }()
	go func() { _ = tr.Start(ctx); done <- struct{}{} }()
	t.Cleanup(func() { cancel(); <-done; <-done })
	if err := gate.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}

	held := env.Namespace(t, "confirm-held")
	createLease(t, held, scope.LeaseName, &start)
	if gate.Excluded(held) {
		t.Fatal("the lagging watch must not have delivered the lease")
	}
	if err := gate.Confirm(ctx, held); !errors.Is(err, scope.ErrNotOwned) {
		t.Fatalf("Confirm in a namespace with a marker lease = %v, want ErrNotOwned", err)
	}
	if !gate.Excluded(held) {
		t.Error("a lease found by Confirm must exclude its namespace at once")
	}

	free := env.Namespace(t, "confirm-free")
	if err := gate.Confirm(ctx, free); err != nil {
		t.Fatalf("Confirm in a namespace without a marker lease = %v", err)
	}
	// A Lease created within ConfirmTTL of a read is not read again before
	// the TTL ends (at most one read per namespace per TTL) ...
	createLease(t, free, scope.LeaseName, &start)
	if err := gate.Confirm(ctx, free); err != nil {
		t.Fatalf("Confirm within ConfirmTTL = %v, want the earlier read to stand", err)
	}
	// ... and is found by the first write after it.
	clk.Step(scope.ConfirmTTL)
	if err := gate.Confirm(ctx, free); !errors.Is(err, scope.ErrNotOwned) {
		t.Fatalf("Confirm after ConfirmTTL = %v, want ErrNotOwned", err)
	}
}
