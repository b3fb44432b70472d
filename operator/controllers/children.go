package controllers

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/apply"
	"github.com/dynamoctl/dynamo-operator/operator/children"
	"github.com/dynamoctl/dynamo-operator/operator/render"
)

// ownChildren makes owner's controller watch the child kinds it owns and
// the cache holds (the children table), so an edited or deleted child is
// put back.
func ownChildren(b *builder.Builder, owner children.Owner) *builder.Builder {
	for _, k := range children.Kinds() {
		if k.Watched(owner) {
			b = b.Owns(k.New())
		}
	}
	return b
}

// watchesOnceServed are the watches of the child kinds owner owns whose API
// a cluster may lack, started by the controller c the first time the API
// is found (lazyWatch), by group and kind.
func watchesOnceServed(c controller.Controller, fromCache cache.Cache, owner children.Owner) map[schema.GroupKind]*lazyWatch {
	ownerObject := func() client.Object { return &v1alpha1.DynamoComponentDeployment{} }
	if owner == children.OwnedByGraph {
		ownerObject = func() client.Object { return &v1alpha1.DynamoGraphDeployment{} }
	}
	out := map[schema.GroupKind]*lazyWatch{}
	for _, k := range children.Kinds() {
		if k.WatchedOnceServed(owner) {
			out[k.GVK.GroupKind()] = &lazyWatch{ctrl: c, cache: fromCache, object: k.New, owner: ownerObject}
		}
	}
	return out
}

// onceServedWatch is the watch of gk among watches (watchesOnceServed);
// one that watches nothing when the controller was not set up.
func onceServedWatch(watches map[schema.GroupKind]*lazyWatch, gk schema.GroupKind) *lazyWatch {
	if w := watches[gk]; w != nil {
		return w
	}
	return &lazyWatch{}
}

// CacheOptions keeps only the operator's own children of the built-in kinds
// in memory (the children table's Cache), trimmed of what nothing reads
// (trimForCache): a cluster's other Deployments and Services are none of
// its business, and caching them all would cost memory proportional to the
// cluster rather than to the graphs.
func CacheOptions() cache.Options {
	managed := cache.ByObject{Label: labels.SelectorFromSet(labels.Set{render.LabelManagedBy: render.ManagedByValue})}
	// Pods carry their component's name (the workload's selector), and only
	// those are cached: a stuck rollout is explained from them.
	hasComponent, err := labels.NewRequirement(render.LabelComponent, selection.Exists, nil)
	if err != nil {
		panic(err) // a constant key: cannot fail
	}
	withComponent := cache.ByObject{Label: labels.NewSelector().Add(*hasComponent)}
	byObject := map[client.Object]cache.ByObject{}
	for _, k := range children.Kinds() {
		// Kinds cached once served are left out: ByObject needs the
		// kind's REST mapping when the cache is built, which fails the
		// operator's start on a cluster without the API.
		switch k.Cache {
		case children.CacheManaged:
			byObject[k.New()] = managed
		case children.CacheWithComponent:
			byObject[k.New()] = withComponent
		}
	}
	return cache.Options{ByObject: byObject, DefaultTransform: trimForCache}
}

// applyOrDeleteOnceServed applies desired, controlled by owner, or deletes
// owner's object of gvk at key when desired is nil, for a kind whose API a
// cluster may lack and that lazy watches; the live object is read from the
// cache of that watch (started here the first time).
func applyOrDeleteOnceServed(ctx context.Context, c client.Client, a *apply.Applier, lazy *lazyWatch, owner client.Object,
	gvk schema.GroupVersionKind, key client.ObjectKey, desired *unstructured.Unstructured, changes *changeSet) error {
	if err := lazy.ensure(c); err != nil {
		return err
	}
	var reader client.Reader = c
	if lazy.cache != nil {
		reader = lazy.cache
	}
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(gvk)
	err := reader.Get(ctx, key, live)
	if meta.IsNoMatchError(err) && desired == nil {
		return nil // the API went since it was found: nothing of it to delete
	}
	if apierrors.IsNotFound(err) {
		live = nil
	} else if err != nil {
		return err
	}
	if desired != nil {
		var current client.Object
		if live != nil {
			current = live
		}
		return applyOwned(ctx, c, owner, desired, current, a.Apply, changes)
	}
	if live == nil || !metav1.IsControlledBy(live, owner) {
		return nil
	}
	err = c.Delete(ctx, live, client.Preconditions{UID: ptr.To(live.GetUID())})
	if client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting %s %s: %w", gvk.Kind, key.Name, err)
	}
	a.Forget(live)
	changes.deleted = append(changes.deleted, gvk.Kind+"/"+key.Name)
	return nil
}
