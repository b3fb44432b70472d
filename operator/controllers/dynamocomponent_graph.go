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
//   - until its image is ready, the graph holds back each component whose
//     main container has no image of its own: one that does not exist yet
//     is not created, one that runs is not written, so its pods keep serving
//     (a new tag rolls the graph only once the new image is built); the
//     graph's Ready condition says what it waits for, or that the build
//     failed;
//   - then the components run the image as if the service had named it.
//
// A component's spec.dynamoComponent is immutable (webhook): the graph sets
// it when it creates the component and never changes it; the image it runs
// is in extraPodSpec.mainContainer.image. A component made by hand with
// dynamoComponent and no image waits for that DynamoComponent itself
// (withImage).

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
	image, wait, err := dynamoComponentImage(ctx, r.Client, dcd.Namespace, ref)
	if err != nil || wait != nil {
		return nil, wait, err
	}
	out := dcd.DeepCopy()
	if out.Spec.ExtraPodSpec == nil {
		out.Spec.ExtraPodSpec = &v1alpha1.ExtraPodSpec{}
	}
	if out.Spec.ExtraPodSpec.MainContainer == nil {
		out.Spec.ExtraPodSpec.MainContainer = &corev1.Container{}
	}
	out.Spec.ExtraPodSpec.MainContainer.Image = image
	return out, nil, nil
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

// graphImage is the image the graph's dynamoComponent gives its components:
// "" and nil without dynamoComponent, "" and why while it is not ready.
func (r *GraphReconciler) graphImage(ctx context.Context, dgd *v1alpha1.DynamoGraphDeployment) (string, *imageWait, error) {
	if dgd.Spec.DynamoComponent == "" {
		return "", nil, nil
	}
	return dynamoComponentImage(ctx, r.Client, dgd.Namespace, dgd.Spec.DynamoComponent)
}

// dynamoComponentImage reads the image of the DynamoComponent of ref, or
// says why there is none yet.
func dynamoComponentImage(ctx context.Context, c client.Client, namespace, ref string) (string, *imageWait, error) {
	name := render.DynamoComponentName(ref)
	dc, err := getOptional(ctx, c, types.NamespacedName{Namespace: namespace, Name: name}, &v1alpha1.DynamoComponent{})
	if err != nil {
		return "", nil, err
	}
	if dc == nil {
		return "", &imageWait{ReasonWaitingForImage, fmt.Sprintf("waiting for DynamoComponent %s (%s) to be created", name, ref)}, nil
	}
	cond := meta.FindStatusCondition(dc.Status.Conditions, v1alpha1.ConditionImageReady)
	current := cond != nil && cond.ObservedGeneration == dc.Generation && dc.Status.ObservedGeneration == dc.Generation
	switch {
	case current && cond.Status == metav1.ConditionTrue && dc.Status.Image != "":
		return dc.Status.Image, nil, nil
	case current && stalledReason(cond.Reason):
		return "", &imageWait{ReasonImageBuildFailedForComponent,
			fmt.Sprintf("the image of DynamoComponent %s cannot be built: %s", name, cond.Message)}, nil
	case current:
		return "", &imageWait{ReasonWaitingForImage, fmt.Sprintf("waiting for the image of DynamoComponent %s: %s", name, cond.Message)}, nil
	default:
		return "", &imageWait{ReasonWaitingForImage, fmt.Sprintf("waiting for the image of DynamoComponent %s", name)}, nil
	}
}

// withGraphImage gives the desired components the graph's image, and
// returns those to apply and those held back (waiting for the image) that
// already run, as they are. Every component keeps the dynamoComponent it
// was created with (immutable).
func (r *GraphReconciler) withGraphImage(ctx context.Context, image string, wait *imageWait,
	desired []*v1alpha1.DynamoComponentDeployment) (apply, held []*v1alpha1.DynamoComponentDeployment, err error) {
	for _, dcd := range desired {
		live, err := getOptional(ctx, r.Client, client.ObjectKeyFromObject(dcd), &v1alpha1.DynamoComponentDeployment{})
		if err != nil {
			return nil, nil, err
		}
		if live != nil {
			dcd.Spec.DynamoComponent = live.Spec.DynamoComponent
		}
		switch {
		case image == "" && wait == nil, ownImage(dcd) != "":
			// No dynamoComponent, or an image of its own: as rendered.
			apply = append(apply, dcd)
		case wait == nil:
			if dcd.Spec.ExtraPodSpec == nil {
				dcd.Spec.ExtraPodSpec = &v1alpha1.ExtraPodSpec{}
			}
			if dcd.Spec.ExtraPodSpec.MainContainer == nil {
				dcd.Spec.ExtraPodSpec.MainContainer = &corev1.Container{}
			}
			dcd.Spec.ExtraPodSpec.MainContainer.Image = image
			apply = append(apply, dcd)
		case live != nil:
			held = append(held, live)
		}
		// Otherwise it is created once the image is ready.
	}
	return apply, held, nil
}

// setImageWait makes the graph's Ready condition say what it waits for (or
// that its image cannot be built) while its components are held back.
func setImageWait(st *v1alpha1.DynamoGraphDeploymentStatus, dgd *v1alpha1.DynamoGraphDeployment, w *imageWait, now metav1.Time) {
	if w == nil {
		return
	}
	cond := metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse,
		ObservedGeneration: dgd.Generation, LastTransitionTime: now, Message: w.message}
	if w.reason == ReasonImageBuildFailedForComponent {
		st.State = v1alpha1.GraphStateFailed
		cond.Reason = ReasonImageBuildFailedForComponent
	} else {
		st.State = v1alpha1.GraphStatePending
		cond.Reason = ReasonWaitingForImage
	}
	meta.SetStatusCondition(&st.Conditions, cond)
}

// graphsOfDynamoComponent maps a DynamoComponent to the graphs of its
// namespace whose dynamoComponent names it.
func (r *GraphReconciler) graphsOfDynamoComponent(ctx context.Context, obj client.Object) []reconcile.Request {
	var list v1alpha1.DynamoGraphDeploymentList
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
