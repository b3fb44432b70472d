package controllers

import (
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

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
	out := map[schema.GroupKind]*lazyWatch{}
	for _, k := range children.Kinds() {
		if k.WatchedOnceServed(owner) {
			out[k.GVK.GroupKind()] = &lazyWatch{ctrl: c, cache: fromCache, object: k.New}
		}
	}
	return out
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
