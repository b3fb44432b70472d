package steps

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/cucumber/godog"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/internal/await"
	"github.com/dynamoctl/dynamo-operator/operator/scope"
)

// Steps about deployment modes: namespace-scoped operators beside the
// suite's cluster-wide one, and the marker Lease between them.

// LocalOperator is a namespace-scoped operator a scenario started.
type LocalOperator interface {
	// Stop shuts it down cleanly: it releases its Lease.
	Stop()
	// Kill ends it as if its process died: its Lease stays until it expires.
	Kill()
}

// LocalOperators starts namespace-scoped operators, with short lease
// timings so that expiry takes seconds.
type LocalOperators interface {
	StartLocal(ctx context.Context, namespace, version string) (LocalOperator, error)
}

// TimedWrites is implemented by an OperatorControl that can tell when each
// write happened.
type TimedWrites interface {
	// WritesIn lists the writes in namespace sent in [from, to) (received,
	// where only the API server's audit log tells): a write decided in a
	// lapse of the holder's Lease but answered after it is the lapse's.
	WritesIn(namespace string, from, to time.Time) []string
}

// LeaseReleases is implemented by a LocalOperator that can tell when it
// deleted a Lease.
type LeaseReleases interface {
	// LeaseReleased is when the first successful DELETE of the Lease name
	// in namespace was sent, and whether there was one.
	LeaseReleased(namespace, name string) (time.Time, bool)
}

// LeaseRenewals is implemented by a LocalOperator that can tell when it
// renewed its marker Lease.
type LeaseRenewals interface {
	// LeaseRenewals lists when each successful renewal of the Lease name in
	// namespace was sent (its renewTime).
	LeaseRenewals(namespace, name string) []scope.Renewal
}

// modes is the scenario state of the mode steps.
type modes struct {
	local LocalOperator
	// owner is the local operator that owned the namespace, kept once it
	// stopped or died: its records tell when it renewed and released.
	owner LocalOperator
	// owned and released bound the time the local operator owned the
	// scenario's namespace: from its Lease's acquisition to its deletion or
	// expiry (released is zero while it may still own it).
	owned, released time.Time
	// duration is the marker Lease's duration.
	duration time.Duration
}

func registerModeSteps(sc *godog.ScenarioContext, w *world) {
	sc.After(func(ctx context.Context, _ *godog.Scenario, err error) (context.Context, error) {
		if w.modes.local != nil {
			w.modes.local.Stop()
		}
		w.modes = modes{}
		return ctx, nil
	})
	sc.Step(`^a namespace-scoped operator of version `+quoted+` (?:starts|runs) in this namespace$`, unquote1(w.localOperatorStarts))
	sc.Step(`^listing the leases named `+quoted+` in all namespaces shows this namespace held by `+quoted+`$`, unquote2(w.leasesListShow))
	sc.Step(`^the version of the operator that owns this namespace is `+quoted+`$`, unquote1(w.ownerVersionIs))
	sc.Step(`^the namespace lease is renewed$`, w.leaseRenewed)
	sc.Step(`^the namespace-scoped operator stops cleanly$`, w.localOperatorStops)
	sc.Step(`^the namespace-scoped operator dies$`, w.localOperatorDies)
	sc.Step(`^the namespace lease still exists$`, w.leaseStillExists)
	sc.Step(`^the (\S+) `+quoted+` does not exist$`, w.doesNotExist)
	sc.Step(`^the namespace lease is gone$`, w.leaseGone)
	sc.Step(`^the namespace lease eventually expires$`, w.leaseExpires)
	sc.Step(`^the cluster-wide operator wrote nothing in this namespace while the namespace-scoped operator owned it$`, w.clusterWroteNothingWhileOwned)
}

func (w *world) localOperatorStarts(ctx context.Context, version string) error {
	starter, ok := w.cluster.Operator.(LocalOperators)
	if !ok {
		return fmt.Errorf("this suite cannot start namespace-scoped operators")
	}
	if w.modes.local != nil {
		return fmt.Errorf("a namespace-scoped operator already runs in this scenario")
	}
	op, err := starter.StartLocal(ctx, w.namespace, version)
	if err != nil {
		return err
	}
	w.modes.local, w.modes.owner = op, op
	return w.eventually(ctx, "the namespace-scoped operator "+version+" owning this namespace", func() error {
		l, err := w.lease(ctx)
		if err != nil {
			return err
		}
		if l.Spec.AcquireTime == nil {
			return fmt.Errorf("the lease has no acquireTime")
		}
		w.modes.owned = l.Spec.AcquireTime.Time
		if l.Spec.LeaseDurationSeconds != nil {
			w.modes.duration = time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
		}
		return nil
	})
}

func (w *world) lease(ctx context.Context) (*coordinationv1.Lease, error) {
	l := &coordinationv1.Lease{}
	err := w.cluster.Client.Get(ctx, client.ObjectKey{Namespace: w.namespace, Name: scope.LeaseName}, l)
	return l, err
}

// leasesListShow is `kubectl get lease -A --field-selector
// metadata.name=<name>`, the way to list local operators that docs give.
func (w *world) leasesListShow(ctx context.Context, name, holder string) error {
	leases := &coordinationv1.LeaseList{}
	if err := w.cluster.Client.List(ctx, leases, client.MatchingFieldsSelector{
		Selector: fields.OneTermEqualSelector("metadata.name", name),
	}); err != nil {
		return err
	}
	var seen []string
	for _, l := range leases.Items {
		got := ptr.Deref(l.Spec.HolderIdentity, "")
		if l.Namespace == w.namespace && got == holder {
			return nil
		}
		seen = append(seen, l.Namespace+"="+got)
	}
	return fmt.Errorf("no lease %q in %s held by %q; the list shows %v", name, w.namespace, holder, seen)
}

// ownerVersionIs is `kubectl get lease -n NS dynamo-operator-namespace-scope
// -o jsonpath='{.spec.holderIdentity}'`.
func (w *world) ownerVersionIs(ctx context.Context, version string) error {
	l, err := w.lease(ctx)
	if err != nil {
		return err
	}
	if got := ptr.Deref(l.Spec.HolderIdentity, ""); got != version {
		return fmt.Errorf("holderIdentity is %q, want %q", got, version)
	}
	if l.Spec.RenewTime == nil {
		return fmt.Errorf("the lease has no renewTime: a cluster-wide operator could not time it")
	}
	return nil
}

// leaseRenewed waits until the holder renews the namespace's Lease. How
// soon is not asserted: a starved machine delays renewals past the Lease's
// duration (the cluster-wide operator then rightly takes the namespace back
// for that lapse, which the hybrid scenarios allow for); that it renews at
// all is the behaviour.
func (w *world) leaseRenewed(ctx context.Context) error {
	l, err := w.lease(ctx)
	if err != nil {
		return err
	}
	before := l.Spec.RenewTime.DeepCopy()
	return await.Until(ctx, "the namespace lease renewed", func() error {
		l, err := w.lease(ctx)
		if err != nil {
			return err
		}
		if !l.Spec.RenewTime.After(before.Time) {
			return fmt.Errorf("renewTime still %v", before)
		}
		return nil
	}, await.Within(w.cluster.EventualTimeout), await.Every(50*time.Millisecond))
}

func (w *world) localOperatorStops(ctx context.Context) error {
	if w.modes.local == nil {
		return fmt.Errorf("no namespace-scoped operator runs in this scenario")
	}
	// It deletes its Lease while shutting down, before Stop returns, and
	// the cluster-wide operator may take over at once: the namespace was
	// owned until the stop began, not until it returned.
	stopping := time.Now()
	w.modes.local.Stop()
	w.modes.local = nil
	w.modes.released = stopping
	return nil
}

func (w *world) localOperatorDies(ctx context.Context) error {
	if w.modes.local == nil {
		return fmt.Errorf("no namespace-scoped operator runs in this scenario")
	}
	w.modes.local.Kill()
	w.modes.local = nil
	l, err := w.lease(ctx)
	if err != nil {
		return fmt.Errorf("a dead operator's lease must stay until it expires: %w", err)
	}
	expiry, _ := scope.LeaseExpiry(l)
	w.modes.released = expiry
	return nil
}

func (w *world) leaseStillExists(ctx context.Context) error {
	_, err := w.lease(ctx)
	return err
}

func (w *world) doesNotExist(ctx context.Context, kind, name string) error {
	err := w.exists(ctx, kind, name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	return fmt.Errorf("%s %q exists", kind, name)
}

func (w *world) leaseGone(ctx context.Context) error {
	_, err := w.lease(ctx)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	return fmt.Errorf("the lease %s/%s still exists", w.namespace, scope.LeaseName)
}

func (w *world) leaseExpires(ctx context.Context) error {
	return w.eventually(ctx, "the namespace lease expired", func() error {
		l, err := w.lease(ctx)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if expiry, expires := scope.LeaseExpiry(l); !expires || time.Now().Before(expiry) {
			return fmt.Errorf("the lease lives until %v", expiry)
		}
		return nil
	})
}

func (w *world) clusterWroteNothingWhileOwned(ctx context.Context) error {
	timed, ok := w.cluster.Operator.(TimedWrites)
	if !ok {
		return fmt.Errorf("this suite cannot time the operator's writes")
	}
	if w.modes.owned.IsZero() {
		return fmt.Errorf("no namespace-scoped operator owned this namespace in this scenario")
	}
	until := w.modes.released
	if until.IsZero() {
		until = time.Now()
	}
	// A holder that gave the namespace back earlier than the step that
	// stopped it (its election lost on a loaded machine: it stops, and
	// deletes its Lease on the way) held it only until then.
	if r, ok := w.modes.owner.(LeaseReleases); ok {
		if at, released := r.LeaseReleased(w.namespace, scope.LeaseName); released && at.Before(until) {
			until = at
		}
	}
	held := []scope.Span{{From: w.modes.owned, To: until}}
	var lapses []scope.Span
	if r, ok := w.modes.owner.(LeaseRenewals); ok && w.modes.duration > 0 {
		held, lapses = scope.HeldSpans(w.modes.owned, until, r.LeaseRenewals(w.namespace, scope.LeaseName), w.modes.duration, scope.MinSettle)
	}
	var writes []string
	for _, h := range held {
		writes = append(writes, timed.WritesIn(w.namespace, h.From, h.To)...)
	}
	var lapsed string
	for _, l := range lapses {
		// On a starved machine the namespace-scoped operator can renew too
		// late; its Lease lapses and the cluster-wide operator rightly takes
		// the namespace back until the next renewal. Said, not counted.
		lapsed += fmt.Sprintf("\n  the lease lapsed from %s for %s (renewed late): writes then are not counted",
			l.From.Format(time.RFC3339Nano), l.To.Sub(l.From).Round(time.Millisecond))
	}
	if len(writes) > 0 {
		return fmt.Errorf("the cluster-wide operator wrote %d times in %s while the namespace-scoped operator owned it:\n  %s%s",
			len(writes), w.namespace, strings.Join(writes, "\n  "), lapsed)
	}
	if lapsed != "" {
		fmt.Printf("    %s%s\n", w.namespace, lapsed)
	}
	return nil
}
