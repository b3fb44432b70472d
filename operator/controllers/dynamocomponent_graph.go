package controllers

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/render"
)

// How a graph's dynamoComponent reaches its pods:
//
//   - the graph creates the DynamoComponent render.DynamoComponentName
//     names, owned (not controlled) by the graph, or reuses the one that
//     exists: a user's, with its spec.image, or another graph's;
//   - each component whose main container has no image of its own waits for
//     that DynamoComponent's image: until it is ready nothing of the
//     component is written, so a component that already runs keeps its pods
//     (a new tag rolls the graph only once the new image is built), and its
//     Available condition says what it waits for, which the graph's Ready
//     message repeats;
//   - then the component runs the image as if the service had named it.

// Reasons of a component's Available condition while it waits for an image.
const (
	ReasonWaitingForImage = "WaitingForImage"
	// ReasonImageBuildFailedForComponent: the image it waits for failed to
	// build; the graph reports it as a failure the user must fix.
	ReasonImageBuildFailedForComponent = "ImageBuildFailed"
)

// ensureDynamoComponent creates the DynamoComponent the graph names, unless
// it exists. One a graph created is owned by every graph using it, so it
// goes only with the last of them; one a user created is left alone.
func (r *GraphReconciler) ensureDynamoComponent(ctx context.Context, dgd *v1alpha1.DynamoGraphDeployment, changes *changeSet) error {
	want := render.GraphDynamoComponent(dgd)
	if want == nil {
		return nil
	}
	live, err := getOptional(ctx, r.Client, client.ObjectKeyFromObject(want), &v1alpha1.DynamoComponent{})
	if err != nil {
		return err
	}
	if live == nil {
		if err := controllerutil.SetOwnerReference(dgd, want, r.Client.Scheme()); err != nil {
			return err
		}
		if err := r.Client.Create(ctx, want, client.FieldOwner(r.Applier.FieldOwner)); err != nil {
			if client.IgnoreAlreadyExists(err) == nil {
				return nil // made meanwhile: the next reconcile reuses it
			}
			return fmt.Errorf("creating DynamoComponent %s: %w", want.Name, err)
		}
		ctrl.LoggerFrom(ctx).V(1).Info("DynamoComponent created: the graph's components wait for its image",
			"graph", klog.KObj(dgd), "dynamoComponent", klog.KObj(want))
		changes.created = append(changes.created, "DynamoComponent/"+want.Name)
		return nil
	}
	if live.Spec.DynamoComponent != dgd.Spec.DynamoComponent {
		return fmt.Errorf("%w: spec.dynamoComponent: DynamoComponent %s exists for %q, not %q; rename or delete it",
			errUserSpec, live.Name, live.Spec.DynamoComponent, dgd.Spec.DynamoComponent)
	}
	if live.Labels[render.LabelManagedBy] != render.ManagedByValue || hasOwner(live, dgd) {
		return nil
	}
	before := live.DeepCopy()
	if err := controllerutil.SetOwnerReference(dgd, live, r.Client.Scheme()); err != nil {
		return err
	}
	if err := r.Client.Patch(ctx, live, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}),
		client.FieldOwner(r.Applier.FieldOwner)); err != nil {
		return fmt.Errorf("sharing DynamoComponent %s with the graph: %w", live.Name, err)
	}
	changes.updated = append(changes.updated, "DynamoComponent/"+live.Name)
	return nil
}

// errUserSpec marks an error only a change of the user's objects can fix.
var errUserSpec = errors.New("invalid spec")

func hasOwner(obj metav1.Object, owner metav1.Object) bool {
	for _, ref := range obj.GetOwnerReferences() {
		if ref.UID == owner.GetUID() {
			return true
		}
	}
	return false
}

// imageWait says why a component cannot be rendered yet.
type imageWait struct {
	reason, message string
}

// withImage returns dcd with its DynamoComponent's image as its main
// container's image, dcd itself when it needs none (no dynamoComponent, or
// an image of its own), or why it must wait.
func (r *ComponentReconciler) withImage(ctx context.Context, dcd *v1alpha1.DynamoComponentDeployment) (*v1alpha1.DynamoComponentDeployment, *imageWait, error) {
	ref := dcd.Spec.DynamoComponent
	if ref == "" || ownImage(dcd) != "" {
		return dcd, nil, nil
	}
	name := render.DynamoComponentName(ref)
	dc, err := getOptional(ctx, r.Client, types.NamespacedName{Namespace: dcd.Namespace, Name: name}, &v1alpha1.DynamoComponent{})
	if err != nil {
		return nil, nil, err
	}
	if dc == nil {
		return nil, &imageWait{ReasonWaitingForImage, fmt.Sprintf("waiting for DynamoComponent %s (%s) to be created", name, ref)}, nil
	}
	c := meta.FindStatusCondition(dc.Status.Conditions, v1alpha1.ConditionImageReady)
	current := c != nil && c.ObservedGeneration == dc.Generation && dc.Status.ObservedGeneration == dc.Generation
	switch {
	case current && c.Status == metav1.ConditionTrue && dc.Status.Image != "":
		out := dcd.DeepCopy()
		extra := out.Spec.ExtraPodSpec
		if extra == nil {
			extra = &v1alpha1.ExtraPodSpec{}
			out.Spec.ExtraPodSpec = extra
		}
		if extra.MainContainer == nil {
			extra.MainContainer = &corev1.Container{}
		}
		extra.MainContainer.Image = dc.Status.Image
		return out, nil, nil
	case current && stalledReason(c.Reason):
		return nil, &imageWait{ReasonImageBuildFailedForComponent,
			fmt.Sprintf("the image of DynamoComponent %s cannot be built: %s", name, c.Message)}, nil
	case current:
		return nil, &imageWait{ReasonWaitingForImage, fmt.Sprintf("waiting for the image of DynamoComponent %s: %s", name, c.Message)}, nil
	default:
		return nil, &imageWait{ReasonWaitingForImage, fmt.Sprintf("waiting for the image of DynamoComponent %s", name)}, nil
	}
}

// ownImage is the image the component's spec names for its main container.
func ownImage(dcd *v1alpha1.DynamoComponentDeployment) string {
	if e := dcd.Spec.ExtraPodSpec; e != nil && e.MainContainer != nil {
		return e.MainContainer.Image
	}
	return ""
}

// waitForImage records that the component waits for its image; nothing
// else is written, so pods already running keep serving.
func (r *ComponentReconciler) waitForImage(ctx context.Context, dcd *v1alpha1.DynamoComponentDeployment, w *imageWait) error {
	failed := w.reason == ReasonImageBuildFailedForComponent
	var changed bool
	wrote, err := patchStatus(ctx, r.Client, dcd, func(c *v1alpha1.DynamoComponentDeployment) {
		before := c.Status.DeepCopy()
		c.Status.ObservedGeneration = c.Generation
		setComponentConditions(&c.Status, metav1.Condition{
			Status:             metav1.ConditionFalse,
			Reason:             w.reason,
			Message:            w.message,
			ObservedGeneration: c.Generation,
			LastTransitionTime: metav1.NewTime(r.Clock.Now()),
		}, failed)
		changed = !conditionsEqual(before.Conditions, c.Status.Conditions)
	})
	if err != nil {
		return err
	}
	switch {
	case !wrote:
		logNothingToDo(ctx, dcd)
	case changed:
		ctrl.LoggerFrom(ctx).V(1).Info("component waits for its image", "component", klog.KObj(dcd), "why", w.message)
	}
	return nil
}

// componentsOfDynamoComponent maps a DynamoComponent to the components of
// its namespace that take their image from it.
func (r *ComponentReconciler) componentsOfDynamoComponent(ctx context.Context, obj client.Object) []reconcile.Request {
	var list v1alpha1.DynamoComponentDeploymentList
	if err := r.Client.List(ctx, &list, client.InNamespace(obj.GetNamespace())); err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for i := range list.Items {
		ref := list.Items[i].Spec.DynamoComponent
		if ref != "" && render.DynamoComponentName(ref) == obj.GetName() {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return reqs
}
