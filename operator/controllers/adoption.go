package controllers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

// The take-over and upgrade policy: one mechanism for children written by
// another renderer, whether another version of this operator or Dynamo's
// own operator.
//
// Every child this operator renders records who rendered its content
// (AnnotationRenderer, this operator's version) and for which input
// (AnnotationRenderedFor, a hash of the parent's spec without replicas). A
// child whose content another renderer wrote is kept as it is: only its
// ownership, labels, annotations and replicas are applied, never its pod
// template, until its input changes (the user edits the service), when it
// is rendered anew as a normal rollout. A child found without a record
// (Dynamo's, or an older version's) is adopted: its current input is
// recorded and its content kept. So a new operator version whose rendering
// differs restarts no workload when it starts; the difference reaches each
// workload at its next spec change, one component at a time, as the user
// paces them. Nothing is ever created beside an existing workload: names are
// taken from what exists (see componentNames).
const (
	// AnnotationRenderer names the renderer that produced a child's content.
	AnnotationRenderer = "nvidia.com/dynamo-operator-renderer"
	// AnnotationRenderedFor is the hash of the input the child's content
	// was rendered (or adopted) for.
	AnnotationRenderedFor = "nvidia.com/dynamo-operator-rendered-for"
)

// RendererID is the renderer identity of an operator version. Any version
// string counts: two builds that call themselves the same version are
// taken to render alike.
func RendererID(version string) string { return "dynamo-operator/" + version }

// keepContent reports whether live's content must be kept rather than
// replaced by this renderer's: it exists, another renderer (or an unknown
// one) wrote it, and the input it was written for is still the input.
func keepContent(live client.Object, renderer, input string) bool {
	if asObject(live) == nil {
		return false
	}
	a := live.GetAnnotations()
	if a[AnnotationRenderer] == renderer {
		return false
	}
	done := a[AnnotationRenderedFor]
	return done == "" || done == input
}

// stamp records on desired who rendered its content and for which input.
// When the content is kept, the renderer stays what it was (none for an
// adopted child) and the input is the one recorded, or now for an adopted
// child.
func stamp(desired, live client.Object, renderer, input string, kept bool) {
	a := maps.Clone(desired.GetAnnotations())
	if a == nil {
		a = map[string]string{}
	}
	delete(a, AnnotationRenderer)
	a[AnnotationRenderedFor] = input
	if !kept {
		a[AnnotationRenderer] = renderer
	} else if r := live.GetAnnotations()[AnnotationRenderer]; r != "" {
		a[AnnotationRenderer] = r
	}
	desired.SetAnnotations(a)
}

// inputHash is a stable digest of a child's input.
func inputHash(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		// Only unmarshalable types fail, and inputs are API types.
		panic(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:10])
}

// serviceInput is what a graph's component for service is rendered from:
// the graph's spec with only that service, less its replicas, which are
// applied to kept content too (scaling must never wait for a spec change),
// less its scalingAdapter, which only says who owns those replicas (a
// service that opts in after an upgrade keeps the pods an earlier version
// rendered), and less spec.restart: a restart reaches a component as its
// restart annotation (restart.go), one service at a time, never as a change
// of every service's input at once.
func serviceInput(dgd *v1alpha1.DynamoGraphDeployment, service string) string {
	spec := dgd.Spec.DeepCopy()
	spec.Restart = nil
	svc := spec.Services[service]
	if svc != nil {
		svc.Replicas = nil
		svc.ScalingAdapter = nil
	}
	spec.Services = map[string]*v1alpha1.DynamoComponentDeploymentSharedSpec{service: svc}
	return inputHash(spec)
}

// workloadInput is what a component's workload is rendered from: its spec
// less replicas and scalingAdapter (serviceInput), and the graph's claims
// its volumeMounts name.
func workloadInput(dcd *v1alpha1.DynamoComponentDeployment, graphPVCs []v1alpha1.GraphPVC) string {
	spec := dcd.Spec.DeepCopy()
	spec.Replicas = nil
	spec.ScalingAdapter = nil
	return inputHash(struct {
		Spec *v1alpha1.DynamoComponentDeploymentSpec `json:"spec"`
		PVCs []v1alpha1.GraphPVC                     `json:"pvcs,omitempty"`
	}{spec, graphPVCs})
}

// WorkloadInput is what AnnotationRenderedFor records on a component's
// workload (workloadInput), for tests that stand in for the workload an
// earlier version rendered.
func WorkloadInput(dcd *v1alpha1.DynamoComponentDeployment, graphPVCs []v1alpha1.GraphPVC) string {
	return workloadInput(dcd, graphPVCs)
}

// keepComponent lays live's spec over desired, keeping desired's replicas
// and scalingAdapter, which are not part of its input (serviceInput).
func keepComponent(desired, live *v1alpha1.DynamoComponentDeployment) {
	replicas, adapter := desired.Spec.Replicas, desired.Spec.ScalingAdapter
	desired.Spec = *live.Spec.DeepCopy()
	desired.Spec.Replicas, desired.Spec.ScalingAdapter = replicas, adapter
}

// keepWorkload lays live's spec over desired, keeping desired's replicas:
// the pod template and selector, and also the rollout settings (strategy,
// deadlines), which another renderer chose for the pods it runs and which a
// new rendering changes only together with the template.
func keepWorkload(desired, live *appsv1.Deployment) {
	replicas := desired.Spec.Replicas
	desired.Spec = *live.Spec.DeepCopy()
	desired.Spec.Replicas = replicas
}

// keepSelector keeps the selector of a Deployment another renderer made,
// which the API server never lets change, when its template is rendered
// anew: the new pods carry its labels too, so the Deployment still owns
// them.
func keepSelector(desired, live *appsv1.Deployment) {
	if live.Spec.Selector == nil || equalSelector(desired.Spec.Selector, live.Spec.Selector) {
		return
	}
	desired.Spec.Selector = live.Spec.Selector.DeepCopy()
	labels := maps.Clone(desired.Spec.Template.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, live.Spec.Selector.MatchLabels)
	desired.Spec.Template.Labels = labels
}

func equalSelector(a, b *metav1.LabelSelector) bool {
	if a == nil || b == nil {
		return a == b
	}
	return maps.Equal(a.MatchLabels, b.MatchLabels) && len(a.MatchExpressions) == 0 && len(b.MatchExpressions) == 0
}

// foreignWorkloadKind returns the kind of the workload another operator
// reports running the component, when it is one this operator cannot adopt
// in place (Dynamo's LeaderWorkerSet or Grove PodClique for multinode
// services); "" when there is none or it is a Deployment. A component whose
// content this operator rendered is never foreign. It reads the status
// only: foreignWorkload checks what the status names.
func foreignWorkloadKind(dcd *v1alpha1.DynamoComponentDeployment) v1alpha1.ComponentKind {
	s := dcd.Status.Service
	if s == nil || s.ComponentKind == "" || s.ComponentKind == v1alpha1.ComponentKindDeployment ||
		dcd.Annotations[AnnotationRenderer] != "" {
		return ""
	}
	return s.ComponentKind
}

// foreignWorkload is foreignWorkloadKind checked against the cluster: a
// LeaderWorkerSet named in the status is another operator's only if one
// exists that this operator did not render. A component made without a
// graph carries no renderer annotation of its own, and its status names
// the LeaderWorkerSet this operator rendered for it: read from the status
// alone, it failed as another operator's on its second reconcile.
func (r *ComponentReconciler) foreignWorkload(ctx context.Context, dcd *v1alpha1.DynamoComponentDeployment) (v1alpha1.ComponentKind, error) {
	kind := foreignWorkloadKind(dcd)
	if kind != v1alpha1.ComponentKindLeaderWorkerSet {
		return kind, nil
	}
	names := append([]string{dcd.Status.Service.ComponentName}, dcd.Status.Service.ComponentNames...)
	for _, name := range slices.Compact(slices.Sorted(slices.Values(names))) {
		if name == "" {
			continue
		}
		live, err := lookup(ctx, r.Client, r.Reader, client.ObjectKey{Namespace: dcd.Namespace, Name: name}, &lwsv1.LeaderWorkerSet{})
		switch {
		case meta.IsNoMatchError(err):
			return "", nil // no LeaderWorkerSet API: nobody's runs
		case err != nil:
			return "", err
		case live != nil && live.Annotations[AnnotationRenderer] == "":
			return kind, nil
		}
	}
	return "", nil
}

// DynamoFinalizer is the finalizer Dynamo's operator puts on graphs and
// components. Its cleanup is owner references' work here, and with Dynamo's
// operator gone nobody would remove it: a graph could never be deleted.
const DynamoFinalizer = "nvidia.com/finalizer"

// dropDynamoFinalizer removes DynamoFinalizer from obj, once, when it is
// there; it reports whether it wrote.
func dropDynamoFinalizer(ctx context.Context, c client.Client, obj client.Object) (bool, error) {
	if !controllerutil.ContainsFinalizer(obj, DynamoFinalizer) {
		return false, nil
	}
	before := obj.DeepCopyObject().(client.Object)
	controllerutil.RemoveFinalizer(obj, DynamoFinalizer)
	return true, c.Patch(ctx, obj, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}),
		client.FieldOwner(FieldOwner))
}
