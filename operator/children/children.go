// Package children is the one table of the kinds of object the operator
// makes for a graph and its components (and the kinds it reads beside them):
// for each kind, what renders it, which controller owns it, how the
// manager's cache holds it, the RBAC verbs the operator needs on it and how
// an inventory finds a graph's objects of it.
//
// The controllers derive their watches (Owns) and the cache's per-kind
// options from it, the chart's tests check the chart grants its verbs, and
// scenarios list a graph's objects with List. Adding a child kind is a row
// here plus its render function (CONTRIBUTING.md, "Adding a child kind").
//
// It is a package of its own, below operator/controllers and beside
// operator/render, because code outside the operator reads it (the chart's
// tests, the scenario steps) and must not pull in the controllers; it
// depends on render only for the labels the rendered objects carry.
package children

import (
	"context"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/render"
)

// Owner is a controller that sets its object as a child's controlling
// owner.
type Owner uint8

// Owners; a kind may have several (the discovery objects belong to the
// graph, or to a component that stands alone).
const (
	OwnedByGraph Owner = 1 << iota
	OwnedByComponent
)

// Cache says how the manager's cache holds a kind.
type Cache int

const (
	// CacheAll: every object of the kind (the operator's own resources).
	CacheAll Cache = iota
	// CacheManaged: only the objects labelled managed-by the operator; a
	// cluster's other Deployments and Services are none of its business.
	CacheManaged
	// CacheWithComponent: only the objects carrying a component's name
	// (pods: a stuck rollout is explained from them).
	CacheWithComponent
	// CacheOnceServed: not in the cache's per-kind options, whose REST
	// mapping a cluster without the API would fail the operator's start
	// with; an informer holding every object of the kind starts once the
	// API is found (a cluster has few).
	CacheOnceServed
	// CacheNone: never cached, read from the API server (Secrets: the
	// operator has no business holding a cluster's Secrets in memory).
	CacheNone
)

// Kind is one row of the table.
type Kind struct {
	// GVK is the kind's group, version and kind.
	GVK schema.GroupVersionKind
	// Resource is its plural resource name, as RBAC rules name it.
	Resource string
	// New returns an empty object of the kind: typed, or unstructured
	// with its kind set for a kind the operator's scheme lacks.
	New func() client.Object
	// RenderedBy names what makes its objects.
	RenderedBy string
	// OwnedBy are the controllers that own its objects. An owned kind the
	// cache holds is watched by its owner (Owns), so an edited or deleted
	// child is put back.
	OwnedBy Owner
	// Cache is how the manager's cache holds it. Every cached object also
	// goes through the cache's transform (controllers/cache_transform.go).
	Cache Cache
	// Verbs are the RBAC verbs the operator needs on it.
	Verbs []string
	// GraphLabel is the label that ties an object of the kind to its graph
	// in an inventory: render.LabelGraphName (its value is the graph's
	// name) or render.LabelComponent (its value is one of the graph's
	// components' names); empty for a kind not tied to one graph.
	GraphLabel string
}

// Owned says whether owner owns the kind's objects.
func (k Kind) Owned(owner Owner) bool { return k.OwnedBy&owner != 0 }

// Watched says whether owner watches the kind through Owns: it owns it and
// the cache holds it from the start.
func (k Kind) Watched(owner Owner) bool {
	return k.Owned(owner) && k.Cache != CacheNone && k.Cache != CacheOnceServed
}

// WatchedOnceServed says whether owner watches the kind once its API is
// found (controllers/multinode.go, lazyWatch).
func (k Kind) WatchedOnceServed(owner Owner) bool {
	return k.Owned(owner) && k.Cache == CacheOnceServed
}

var (
	readOnly    = []string{"get", "list", "watch"}
	applied     = []string{"get", "list", "watch", "create", "update", "patch"}
	appliedGone = []string{"get", "list", "watch", "create", "update", "patch", "delete"}
)

func typed[T any, P interface {
	*T
	client.Object
}]() func() client.Object {
	return func() client.Object { return P(new(T)) }
}

// table is the one list of child kinds, in the order a graph's objects
// are listed.
var table = []Kind{
	{
		GVK: v1alpha1.GroupVersion.WithKind("DynamoComponentDeployment"), Resource: "dynamocomponentdeployments",
		New: typed[v1alpha1.DynamoComponentDeployment](), RenderedBy: "render.Components",
		OwnedBy: OwnedByGraph, Cache: CacheAll, Verbs: appliedGone, GraphLabel: render.LabelGraphName,
	},
	{
		// One per service that opts in (scalingAdapter); created with the
		// service's replicas and never written in spec after: HPA, KEDA or
		// the planner own its replicas. Deleted when the service opts out.
		GVK: v1alpha1.GroupVersion.WithKind("DynamoGraphDeploymentScalingAdapter"), Resource: "dynamographdeploymentscalingadapters",
		New: typed[v1alpha1.DynamoGraphDeploymentScalingAdapter](), RenderedBy: "render.ScalingAdapter",
		OwnedBy: OwnedByGraph, Cache: CacheAll, Verbs: appliedGone, GraphLabel: render.LabelGraphName,
	},
	{
		// Shared by the graphs that ask for the same image (owner
		// references, none controlling): watched by name, not owned.
		GVK: v1alpha1.GroupVersion.WithKind("DynamoComponent"), Resource: "dynamocomponents",
		New: typed[v1alpha1.DynamoComponent](), RenderedBy: "controllers.GraphReconciler.ensureDynamoComponent",
		Cache: CacheAll, Verbs: applied,
	},
	{
		// Deleted only where an earlier version rendered one for a
		// multinode service, which is now a LeaderWorkerSet.
		GVK: appsv1.SchemeGroupVersion.WithKind("Deployment"), Resource: "deployments",
		New: typed[appsv1.Deployment](), RenderedBy: "render.Deployment",
		OwnedBy: OwnedByComponent, Cache: CacheManaged, Verbs: appliedGone, GraphLabel: render.LabelGraphName,
	},
	{
		GVK: lwsv1.SchemeGroupVersion.WithKind("LeaderWorkerSet"), Resource: "leaderworkersets",
		New: typed[lwsv1.LeaderWorkerSet](), RenderedBy: "render.LeaderWorkerSet",
		OwnedBy: OwnedByComponent, Cache: CacheOnceServed, Verbs: applied, GraphLabel: render.LabelGraphName,
	},
	{
		// Deleted past the replicas, or when nodeCount changes (minCount
		// is immutable).
		GVK: render.PodGroupGVK, Resource: "podgroups",
		New: newUnstructured(render.PodGroupGVK), RenderedBy: "render.PodGroups",
		OwnedBy: OwnedByComponent, Cache: CacheOnceServed, Verbs: appliedGone, GraphLabel: render.LabelGraphName,
	},
	{
		// The SSH key pair of a multinode TRT-LLM component: read by name,
		// created once.
		GVK: corev1.SchemeGroupVersion.WithKind("Secret"), Resource: "secrets",
		New: typed[corev1.Secret](), RenderedBy: "controllers.ComponentReconciler.ensureSSHSecret",
		OwnedBy: OwnedByComponent, Cache: CacheNone, Verbs: []string{"get", "create"}, GraphLabel: render.LabelComponent,
	},
	{
		// Services and Ingresses are deleted when a graph stops asking
		// for them.
		GVK: corev1.SchemeGroupVersion.WithKind("Service"), Resource: "services",
		New: typed[corev1.Service](), RenderedBy: "render.Service, render.ModelService",
		OwnedBy: OwnedByComponent, Cache: CacheManaged, Verbs: appliedGone, GraphLabel: render.LabelGraphName,
	},
	{
		GVK: networkingv1.SchemeGroupVersion.WithKind("Ingress"), Resource: "ingresses",
		New: typed[networkingv1.Ingress](), RenderedBy: "render.Ingress",
		OwnedBy: OwnedByComponent, Cache: CacheManaged, Verbs: appliedGone, GraphLabel: render.LabelGraphName,
	},
	{
		// The shared GPUs of a component with the GPU memory service
		// (resource.k8s.io/v1, served since Kubernetes 1.34); deleted when
		// it stops asking for them, or recreated for a new spec (immutable).
		GVK: resourcev1.SchemeGroupVersion.WithKind("ResourceClaimTemplate"), Resource: "resourceclaimtemplates",
		New: typed[resourcev1.ResourceClaimTemplate](), RenderedBy: "render.GMSResourceClaimTemplate",
		OwnedBy: OwnedByComponent, Cache: CacheManaged, Verbs: appliedGone, GraphLabel: render.LabelGraphName,
	},
	{
		// A component's Istio VirtualService (ingress.useVirtualService
		// with a gateway), instead of its Ingress; watched once the API
		// is found, deleted when the component stops asking for it.
		GVK: render.VirtualServiceGVK, Resource: "virtualservices",
		New: newUnstructured(render.VirtualServiceGVK), RenderedBy: "render.VirtualService",
		OwnedBy: OwnedByComponent, Cache: CacheOnceServed, Verbs: appliedGone, GraphLabel: render.LabelGraphName,
	},
	{
		// The inline configuration of a graph's endpoint picker,
		// <graph>-epp-config; deleted when it moves to a configMapRef.
		GVK: corev1.SchemeGroupVersion.WithKind("ConfigMap"), Resource: "configmaps",
		New: typed[corev1.ConfigMap](), RenderedBy: "render.EPPConfigMap",
		OwnedBy: OwnedByComponent, Cache: CacheManaged, Verbs: appliedGone, GraphLabel: render.LabelGraphName,
	},
	{
		// The InferencePool <graph>-pool of a graph's endpoint picker
		// (the inference extension's API): watched once the API is
		// found, deleted when the graph no longer has a picker.
		GVK: render.InferencePoolGVK, Resource: "inferencepools",
		New: newUnstructured(render.InferencePoolGVK), RenderedBy: "render.InferencePool",
		OwnedBy: OwnedByGraph, Cache: CacheOnceServed, Verbs: appliedGone, GraphLabel: render.LabelGraphName,
	},
	{
		// Created without an owner: model caches outlive their graph.
		GVK: corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim"), Resource: "persistentvolumeclaims",
		New: typed[corev1.PersistentVolumeClaim](), RenderedBy: "render.PVCs",
		Cache: CacheManaged, Verbs: applied, GraphLabel: render.LabelGraphName,
	},
	{
		// The discovery identity of a graph's pods (render.DiscoveryRBAC).
		GVK: corev1.SchemeGroupVersion.WithKind("ServiceAccount"), Resource: "serviceaccounts",
		New: typed[corev1.ServiceAccount](), RenderedBy: "render.GraphDiscoveryRBAC, render.ComponentDiscoveryRBAC",
		OwnedBy: OwnedByGraph | OwnedByComponent, Cache: CacheManaged, Verbs: appliedGone, GraphLabel: render.LabelGraphName,
	},
	{
		GVK: rbacv1.SchemeGroupVersion.WithKind("Role"), Resource: "roles",
		New: typed[rbacv1.Role](), RenderedBy: "render.GraphDiscoveryRBAC, render.ComponentDiscoveryRBAC",
		OwnedBy: OwnedByGraph | OwnedByComponent, Cache: CacheManaged, Verbs: appliedGone, GraphLabel: render.LabelGraphName,
	},
	{
		GVK: rbacv1.SchemeGroupVersion.WithKind("RoleBinding"), Resource: "rolebindings",
		New: typed[rbacv1.RoleBinding](), RenderedBy: "render.GraphDiscoveryRBAC, render.ComponentDiscoveryRBAC",
		OwnedBy: OwnedByGraph | OwnedByComponent, Cache: CacheManaged, Verbs: appliedGone, GraphLabel: render.LabelGraphName,
	},
	{
		// Made by the workloads' controllers from the rendered pod
		// template; read to explain a stuck rollout.
		GVK: corev1.SchemeGroupVersion.WithKind("Pod"), Resource: "pods",
		New: typed[corev1.Pod](), RenderedBy: "the workload's controller, from render.Deployment's or render.LeaderWorkerSet's pod template",
		Cache: CacheWithComponent, Verbs: readOnly, GraphLabel: render.LabelGraphName,
	},
	{
		// A DynamoComponent's image build. It may live in another
		// namespace, where no owner reference can point: watched by its
		// labels (render.LabelBuildComponent); created, and deleted when
		// made for an earlier spec.
		GVK: batchv1.SchemeGroupVersion.WithKind("Job"), Resource: "jobs",
		New: typed[batchv1.Job](), RenderedBy: "render.BuildJob",
		Cache: CacheManaged, Verbs: []string{"get", "list", "watch", "create", "delete"},
	},
}

func newUnstructured(gvk schema.GroupVersionKind) func() client.Object {
	return func() client.Object {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		return u
	}
}

// Kinds returns the table, one row per kind.
func Kinds() []Kind {
	out := slices.Clone(table)
	for i := range out {
		out[i].Verbs = slices.Clone(out[i].Verbs)
	}
	return out
}

// List returns the objects of graph in namespace, of every kind of the
// table tied to a graph (GraphLabel), as unstructured objects in the
// table's order; the graph itself is not among them. Kinds whose API the
// cluster does not serve are skipped. reader is best an uncached client:
// a cached one would start an informer per kind.
func List(ctx context.Context, reader client.Reader, namespace, graph string) ([]client.Object, error) {
	components, err := componentNames(ctx, reader, namespace, graph)
	if err != nil {
		return nil, err
	}
	var out []client.Object
	for _, k := range table {
		sel := k.selector(graph, components)
		if sel == nil {
			continue
		}
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(k.GVK.GroupVersion().WithKind(k.GVK.Kind + "List"))
		err := reader.List(ctx, list, client.InNamespace(namespace), client.MatchingLabelsSelector{Selector: sel})
		if meta.IsNoMatchError(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("listing the %ss of graph %s/%s: %w", k.GVK.Kind, namespace, graph, err)
		}
		for i := range list.Items {
			out = append(out, &list.Items[i])
		}
	}
	return out, nil
}

// componentNames are the names of graph's components, which label the
// kinds tied to a graph by render.LabelComponent.
func componentNames(ctx context.Context, reader client.Reader, namespace, graph string) ([]string, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("DynamoComponentDeploymentList"))
	if err := reader.List(ctx, list, client.InNamespace(namespace), client.MatchingLabels{render.LabelGraphName: graph}); err != nil {
		return nil, fmt.Errorf("listing the components of graph %s/%s: %w", namespace, graph, err)
	}
	names := make([]string, 0, len(list.Items))
	for _, c := range list.Items {
		names = append(names, c.GetName())
	}
	return names, nil
}

// selector selects the kind's objects of graph, whose components are
// named components; nil when none can be of it.
func (k Kind) selector(graph string, components []string) labels.Selector {
	switch k.GraphLabel {
	case render.LabelGraphName:
		return labels.SelectorFromSet(labels.Set{render.LabelGraphName: graph})
	case render.LabelComponent:
		// A name too long to be a label value labels nothing.
		values := slices.DeleteFunc(slices.Clone(components), func(c string) bool {
			return len(validation.IsValidLabelValue(c)) > 0
		})
		req, err := labels.NewRequirement(render.LabelComponent, selection.In, values)
		if err != nil || len(values) == 0 {
			return nil
		}
		return labels.NewSelector().Add(*req)
	}
	return nil
}
