package controllers

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/dynamoctl/dynamo-operator/operator/apply"
	"github.com/dynamoctl/dynamo-operator/operator/render"
)

// applyDiscovery applies the discovery objects, controlled by owner (the
// graph, or a component that stands alone). The ServiceAccount goes first:
// pods that name a missing one are refused. Nothing to do for nil (etcd
// discovery); objects of a graph that switched to etcd stay until the graph
// goes, as they grant only reads in its namespace.
func applyDiscovery(ctx context.Context, c client.Client, a *apply.Applier, owner client.Object,
	d *render.DiscoveryRBAC, changes *changeSet) error {
	if d == nil {
		return nil
	}
	for _, child := range []struct{ desired, live client.Object }{
		{d.ServiceAccount, &corev1.ServiceAccount{}},
		{d.Role, &rbacv1.Role{}},
		{d.RoleBinding, &rbacv1.RoleBinding{}},
	} {
		current, err := getOptional(ctx, c, client.ObjectKeyFromObject(child.desired), child.live)
		if err != nil {
			return err
		}
		if err := applyOwned(ctx, c, owner, child.desired, asObject(current), a.Apply, changes); err != nil {
			return err
		}
	}
	return nil
}

// applyOwned applies desired, controlled by owner, over current (the live
// object, nil when there is none) with applyFn, and records what changed.
func applyOwned(ctx context.Context, c client.Client, owner, desired, current client.Object,
	applyFn func(context.Context, client.Object, client.Object) (apply.Outcome, error), changes *changeSet) error {
	if err := controllerutil.SetControllerReference(owner, desired, c.Scheme()); err != nil {
		return err
	}
	kind := desired.GetObjectKind().GroupVersionKind().Kind
	outcome, err := applyFn(ctx, desired, current)
	if err != nil {
		return fmt.Errorf("applying %s %s: %w", kind, desired.GetName(), err)
	}
	switch {
	case outcome == apply.Assumed:
		changes.assumed = true
	case outcome == apply.Unchanged:
	case current == nil:
		changes.created = append(changes.created, kind+"/"+desired.GetName())
	default:
		changes.updated = append(changes.updated, kind+"/"+desired.GetName())
	}
	return nil
}
