package scope

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// shutdownTimeout bounds how long a clean shutdown waits for writes in
// flight and for the Lease deletion.
const shutdownTimeout = 10 * time.Second

// Holder keeps the marker Lease of a namespace-scoped operator. The
// operator owns its namespace from the moment the Lease exists: renewTime
// is set at creation, so a cluster-wide operator excludes the namespace at
// once. It stops writing a margin before the Lease would expire if it could
// not renew, and deletes the Lease on a clean shutdown, after its last
// write, so the cluster-wide operator resumes at once.
type Holder struct {
	// Client writes the Lease; Reader reads it uncached.
	Client client.Client
	Reader client.Reader
	Gate   *Gate
	// Namespace holds the Lease; Identity (the operator version) is its
	// holderIdentity.
	Namespace string
	Identity  string
	// Duration is the Lease's duration (whole seconds); the Lease is
	// renewed every RenewInterval.
	Duration      time.Duration
	RenewInterval time.Duration
	// Settle is how long a new holder waits after acquiring the Lease
	// before it writes: a cluster-wide operator learns of the Lease
	// through a watch and may finish writes it had already sent meanwhile
	// (about 0.2 s when busy, see the hand-over benchmark), and two
	// operators must not write in one namespace at once.
	Settle time.Duration
	Clock  clock.WithTicker
	// Acquired re-enqueues everything in the namespace when the operator
	// (re)gains it, since another operator may have acted meanwhile.
	Acquired func(ctx context.Context, namespace string)
	Log      logr.Logger
	// Owner, when set, names the owner the Lease is created with (the
	// chart's Role in the namespace), so the garbage collector removes a
	// Lease that a terminating operator could no longer delete itself
	// after helm uninstall took its rights away.
	Owner func(ctx context.Context) (*metav1.OwnerReference, error)

	lease  *coordinationv1.Lease
	waited string // holder last reported as blocking us, to log once
}

// NeedLeaderElection is true: one replica of an install holds the Lease.
func (h *Holder) NeedLeaderElection() bool { return true }

// margin is how long before the Lease's expiry the holder stops writing
// when renewals fail, so that its last write lands before anyone else may
// act on the expiry.
func (h *Holder) margin() time.Duration { return h.Duration / 10 }

// retryPeriod is how often a failed or blocked acquisition is retried.
func (h *Holder) retryPeriod() time.Duration { return max(h.RenewInterval/4, 100*time.Millisecond) }

// Start holds the Lease until ctx ends, then releases it.
func (h *Holder) Start(ctx context.Context) error {
	defer h.shutdown()
	for {
		wait := h.retryPeriod()
		if h.renew(ctx) {
			wait = h.RenewInterval
		}
		select {
		case <-ctx.Done():
			return nil
		case <-h.Clock.After(wait):
		}
	}
}

// renew creates, takes over or renews the Lease and reports whether the
// operator holds it now.
func (h *Holder) renew(ctx context.Context) bool {
	now := metav1.NewMicroTime(h.Clock.Now())
	err := h.write(ctx, now)
	if err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) || apierrors.IsAlreadyExists(err) {
			// Someone else changed or removed the Lease: read it afresh next time.
			h.lease = nil
		}
		if ctx.Err() == nil && !isBlocked(err) {
			h.Log.Error(err, "renewing the namespace lease", "namespace", h.Namespace)
		}
		return false
	}
	first := !h.Gate.Allowed(h.Namespace)
	if first && h.Settle > 0 {
		select {
		case <-ctx.Done():
			return false
		case <-h.Clock.After(h.Settle):
		}
	}
	h.Gate.hold(now.Add(h.Duration - h.margin()))
	if first {
		h.Log.Info("namespace lease held: this operator owns the namespace",
			"namespace", h.Namespace, "holder", h.Identity, "duration", h.Duration)
		if h.Acquired != nil {
			h.Acquired(ctx, h.Namespace)
		}
	}
	return true
}

type blockedError struct{ holder string }

func (e blockedError) Error() string {
	return fmt.Sprintf("the namespace lease is held by %q", e.holder)
}

func isBlocked(err error) bool {
	_, ok := err.(blockedError)
	return ok
}

func (h *Holder) write(ctx context.Context, now metav1.MicroTime) error {
	seconds := int32(h.Duration / time.Second)
	if h.lease != nil {
		l := h.lease.DeepCopy()
		l.Spec.RenewTime = &now
		l.Spec.LeaseDurationSeconds = &seconds
		return h.update(ctx, l)
	}
	l := &coordinationv1.Lease{}
	err := h.Reader.Get(ctx, client.ObjectKey{Namespace: h.Namespace, Name: LeaseName}, l)
	if apierrors.IsNotFound(err) {
		return h.create(ctx, now, seconds)
	}
	if err != nil {
		return err
	}
	return h.take(ctx, l, now, seconds)
}

// update writes l, the Lease we hold, and remembers it.
func (h *Holder) update(ctx context.Context, l *coordinationv1.Lease) error {
	if err := h.Client.Update(ctx, l); err != nil {
		return err
	}
	h.lease = l
	return nil
}

// create creates the Lease, held by us since now.
func (h *Holder) create(ctx context.Context, now metav1.MicroTime, seconds int32) error {
	l := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: h.Namespace, Name: LeaseName},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To(h.Identity),
			LeaseDurationSeconds: &seconds,
			AcquireTime:          &now,
			RenewTime:            &now,
		},
	}
	if h.Owner != nil {
		owner, err := h.Owner(ctx)
		if err != nil {
			return err
		}
		l.OwnerReferences = []metav1.OwnerReference{*owner}
	}
	if err := h.Client.Create(ctx, l); err != nil {
		return err
	}
	h.lease = l
	return nil
}

// take acquires or renews the stored Lease l, unless another operator
// holds it live (blockedError).
func (h *Holder) take(ctx context.Context, l *coordinationv1.Lease, now metav1.MicroTime, seconds int32) error {
	expiry, expires := LeaseExpiry(l)
	live := !expires || h.Clock.Now().Before(expiry)
	cur := holder(l)
	// Another version's operator may hold the namespace; wait it out
	// rather than have two owners.
	if cur != h.Identity && live {
		if h.waited != cur {
			h.waited = cur
			h.Log.Info("waiting for the namespace lease: another operator holds it",
				"namespace", h.Namespace, "holder", cur, "until", expiry)
		}
		return blockedError{holder: cur}
	}
	// An expired Lease is a new acquisition, even by the same version:
	// the cluster-wide operator may have acted in between. A live one of
	// our own identity is a restart within the Lease, a renewal.
	if !live {
		l.Spec.AcquireTime = &now
	}
	if cur != h.Identity {
		l.Spec.LeaseTransitions = ptr.To(ptr.Deref(l.Spec.LeaseTransitions, 0) + 1)
	}
	h.waited = ""
	l.Spec.HolderIdentity = ptr.To(h.Identity)
	l.Spec.LeaseDurationSeconds = &seconds
	l.Spec.RenewTime = &now
	return h.update(ctx, l)
}

// deleteIfOurs deletes the Lease as it is now if this operator still holds
// it, and answers Conflict if another holds it or it changed meanwhile.
func (h *Holder) deleteIfOurs(ctx context.Context) error {
	l := &coordinationv1.Lease{}
	if err := h.Reader.Get(ctx, client.ObjectKey{Namespace: h.Namespace, Name: LeaseName}, l); err != nil {
		return err
	}
	if holder(l) != h.Identity || l.UID != h.lease.UID {
		return apierrors.NewConflict(coordinationv1.Resource("leases"), LeaseName, fmt.Errorf("held by %q", holder(l)))
	}
	return h.Client.Delete(ctx, l, client.Preconditions{UID: &l.UID, ResourceVersion: &l.ResourceVersion})
}

// shutdown stops the operator's writes in the namespace, waits for those in
// flight, then deletes the Lease so the namespace is handed back at once.
func (h *Holder) shutdown() {
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := h.Gate.release(ctx); err != nil {
		// The Lease stays; it expires, and the writes still in flight
		// land before that.
		h.Log.Error(err, "namespace lease kept until it expires", "namespace", h.Namespace)
		return
	}
	if h.lease == nil {
		return
	}
	err := h.Client.Delete(ctx, h.lease, client.Preconditions{UID: &h.lease.UID, ResourceVersion: &h.lease.ResourceVersion})
	if apierrors.IsConflict(err) {
		// Our copy may be older than the Lease: a renewal the API server
		// applied whose answer was lost. Still ours, it goes.
		err = h.deleteIfOurs(ctx)
	}
	switch {
	case err == nil:
		h.Log.Info("namespace lease released", "namespace", h.Namespace)
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		// Already gone, or no longer ours to delete.
	default:
		h.Log.Error(err, "deleting the namespace lease; it expires instead", "namespace", h.Namespace)
	}
	h.lease = nil
}
