// Package controllers holds the operator's reconcilers: graphs
// (DynamoGraphDeployment) into components, components
// (DynamoComponentDeployment) into workloads, Services and Ingresses.
package controllers

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/dynamoctl/dynamo-operator/operator/apply"
	"github.com/dynamoctl/dynamo-operator/operator/render"
)

// Options configure the controllers.
type Options struct {
	// Workers is the number of concurrent reconciles per controller.
	Workers int
	// Render carries the operator-wide settings workloads are rendered with.
	Render render.Options
	// Clock stamps condition transitions; the real clock when nil.
	Clock clock.PassiveClock
}

// Setup registers every controller with the manager.
func Setup(mgr manager.Manager, o Options) error {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Workers < 1 {
		o.Workers = 1
	}
	applier := &apply.Applier{Client: mgr.GetClient(), FieldOwner: FieldOwner}
	graphs := &GraphReconciler{
		Client:   mgr.GetClient(),
		Applier:  applier,
		Recorder: mgr.GetEventRecorder("dynamo-graph-controller"),
		Clock:    o.Clock,
	}
	if err := graphs.SetupWithManager(mgr, o.Workers); err != nil {
		return err
	}
	components := &ComponentReconciler{
		Client:   mgr.GetClient(),
		Applier:  applier,
		Recorder: mgr.GetEventRecorder("dynamo-component-controller"),
		Clock:    o.Clock,
		Render:   o.Render,
	}
	return components.SetupWithManager(mgr, o.Workers)
}

// CacheOptions keeps only the operator's own children of the built-in kinds
// in memory: a cluster's other Deployments and Services are none of its
// business, and caching them all would cost memory proportional to the
// cluster rather than to the graphs.
func CacheOptions() cache.Options {
	managed := cache.ByObject{Label: labels.SelectorFromSet(labels.Set{render.LabelManagedBy: render.ManagedByValue})}
	return cache.Options{ByObject: map[client.Object]cache.ByObject{
		&appsv1.Deployment{}:            managed,
		&corev1.Service{}:               managed,
		&networkingv1.Ingress{}:         managed,
		&corev1.PersistentVolumeClaim{}: managed,
	}}
}
