package app

import (
	"context"
	"fmt"
	"net/http"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/dynamoctl/dynamo-operator/operator/config"
	"github.com/dynamoctl/dynamo-operator/operator/controllers"
	"github.com/dynamoctl/dynamo-operator/operator/scope"
)

// newGate returns who owns what for the operator's mode: a namespace-scoped
// operator owns its namespace while it holds the marker Lease; a
// cluster-wide one owns every namespace without an unexpired marker Lease.
func newGate(o *config.Options, c scope.Clock) *scope.Gate {
	if o.RestrictNamespace != "" {
		return scope.NewNamespaceGate(c, o.RestrictNamespace)
	}
	return scope.NewClusterGate(c)
}

// addScope adds the runnable that keeps the gate current: the Lease holder
// of a namespace-scoped operator, or the marker Lease tracker of a
// cluster-wide one.
func addScope(mgr manager.Manager, o *config.Options, c scope.Clock, gate *scope.Gate, resync *controllers.Resync) error {
	var r manager.Runnable
	if o.RestrictNamespace != "" {
		r = namespaceHolder(mgr, o, c, gate, resync)
	} else {
		r = startsWithCaches{Runnable: namespaceTracker(mgr, c, gate, resync), cache: mgr.GetCache()}
		// Until the marker Leases are known, this replica's webhooks would
		// judge namespaces another operator owns: not ready yet.
		if err := mgr.AddReadyzCheck("namespace-leases", func(*http.Request) error {
			if !gate.Ready() {
				return fmt.Errorf("namespace marker leases not listed yet")
			}
			return nil
		}); err != nil {
			return fmt.Errorf("adding namespace scope readiness: %w", err)
		}
	}
	if err := mgr.Add(r); err != nil {
		return fmt.Errorf("adding namespace scope: %w", err)
	}
	return nil
}

// namespaceHolder holds a namespace-scoped operator's marker Lease.
func namespaceHolder(mgr manager.Manager, o *config.Options, c scope.Clock, gate *scope.Gate, resync *controllers.Resync) *scope.Holder {
	holder := &scope.Holder{
		Client:        mgr.GetClient(),
		Reader:        mgr.GetAPIReader(),
		Gate:          gate,
		Namespace:     o.RestrictNamespace,
		Identity:      o.OperatorVersion,
		Duration:      o.NamespaceLease.Duration,
		RenewInterval: o.NamespaceLease.RenewInterval,
		// A cluster-wide operator that found no Lease here a moment
		// before it was created may write for scope.ConfirmTTL more:
		// the settle outlasts that whatever the renew interval.
		Settle:   max(min(time.Second, o.NamespaceLease.RenewInterval/2), scope.MinSettle),
		Clock:    c,
		Acquired: resync.Namespace,
		Log:      mgr.GetLogger().WithName("scope"),
	}
	if role := o.NamespaceLease.OwnerRole; role != "" {
		reader, ns := mgr.GetAPIReader(), o.RestrictNamespace
		holder.Owner = func(ctx context.Context) (*metav1.OwnerReference, error) {
			owner := &rbacv1.Role{}
			if err := reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: role}, owner); err != nil {
				return nil, fmt.Errorf("reading Role %s/%s, the marker Lease's owner: %w", ns, role, err)
			}
			return &metav1.OwnerReference{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "Role",
				Name: owner.Name, UID: owner.UID}, nil
		}
	}
	return holder
}

// namespaceTracker follows, for a cluster-wide operator, the namespaces
// namespace-scoped operators hold.
func namespaceTracker(mgr manager.Manager, c scope.Clock, gate *scope.Gate, resync *controllers.Resync) *scope.Tracker {
	return &scope.Tracker{
		Gate:   gate,
		Cache:  mgr.GetCache(),
		Clock:  c,
		Reader: mgr.GetAPIReader(),
		// The tracker runs on standby replicas too (their webhooks need
		// it), but only a leader's controllers consume re-enqueued
		// work; a replica elected later lists everything anyway.
		Resume: func(ctx context.Context, ns string) {
			select {
			case <-mgr.Elected():
				resync.Namespace(ctx, ns)
			default:
			}
		},
		Log: mgr.GetLogger().WithName("scope"),
	}
}

// startsWithCaches makes the manager start the marker Lease tracker with
// its caches, not once they have synced (where a runnable that needs no
// leader goes): the tracker's informer syncs on its own, and its gate is
// a readiness check. The caches may sync only once the pod is Ready: they
// list graphs and components in v1alpha1, and those stored in another
// version (Dynamo's v1beta1, before the storage migration) are converted by
// this operator's webhook, behind the Service the pod joins once Ready.
type startsWithCaches struct {
	manager.Runnable
	cache cache.Cache
}

// GetCache puts the runnable in the caches group, whose start waits for
// this cache as for the manager's own.
func (s startsWithCaches) GetCache() cache.Cache { return s.cache }

// markerLeasesOnly makes a cluster-wide operator watch the marker Leases
// and no other Lease of the cluster.
func markerLeasesOnly(opts *cache.Options) {
	if opts.ByObject == nil {
		opts.ByObject = map[client.Object]cache.ByObject{}
	}
	opts.ByObject[&coordinationv1.Lease{}] = cache.ByObject{
		Field: fields.OneTermEqualSelector("metadata.name", scope.LeaseName),
	}
}
