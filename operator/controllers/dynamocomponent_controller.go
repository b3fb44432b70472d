package controllers

import (
	"context"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/metrics"
	"github.com/dynamoctl/dynamo-operator/operator/render"
	"github.com/dynamoctl/dynamo-operator/operator/scope"
)

// Reasons of a DynamoComponent's ImageReady (and Ready) condition.
const (
	// ReasonImageGiven: spec.image is set; nothing is built.
	ReasonImageGiven = "ImageGiven"
	// ReasonImageBuilt: the build Job completed and pushed status.image.
	ReasonImageBuilt = "ImageBuilt"
	// ReasonImageBuilding: the build Job runs.
	ReasonImageBuilding = "ImageBuilding"
	// ReasonImageBuildFailed: the build Job failed; the user must fix the
	// spec or the build context (or delete the Job to retry).
	ReasonImageBuildFailed = "ImageBuildFailed"
	// ReasonImageBuildTimedOut: the build did not finish within
	// imageBuildTimeout.
	ReasonImageBuildTimedOut = "ImageBuildTimedOut"
)

// DynamoComponentReconciler names or builds the image of a DynamoComponent:
// spec.image is taken as it is; otherwise a Job builds and pushes the image
// (render.BuildJob) and its outcome becomes the status.
type DynamoComponentReconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
	Clock    clock.PassiveClock
	Build    render.ImageBuildOptions
}

// SetupWithManager registers the controller. Build Jobs may live in the
// image-builder namespace, beyond the reach of owner references, so they
// are mapped back to their DynamoComponent by their labels.
func (r *DynamoComponentReconciler) SetupWithManager(mgr manager.Manager, workers int, gate *scope.Gate) error {
	return builder.ControllerManagedBy(mgr).
		For(&v1alpha1.DynamoComponent{}, builder.WithPredicates(specOrMetadataChanged())).
		Watches(&batchv1.Job{}, handler.EnqueueRequestsFromMapFunc(jobToDynamoComponent)).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		Complete(owned{gate: gate, next: metrics.Instrument("DynamoComponent", r)})
}

func jobToDynamoComponent(_ context.Context, obj client.Object) []reconcile.Request {
	l := obj.GetLabels()
	if l[render.LabelBuildComponent] == "" || l[render.LabelBuildComponentNamespace] == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{
		Namespace: l[render.LabelBuildComponentNamespace], Name: l[render.LabelBuildComponent]}}}
}

// Reconcile brings one DynamoComponent's build in line with its spec.
func (r *DynamoComponentReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	return quietWhenTerminating(r.reconcile(ctx, req))
}

// buildState is what one reconcile of a DynamoComponent learns, step by
// step.
type buildState struct {
	req reconcile.Request
	dc  *v1alpha1.DynamoComponent
	// job is the build Job of the current spec, image what it pushes;
	// live is the stored Job (job itself once created).
	job, live *batchv1.Job
	image     string
}

func (r *DynamoComponentReconciler) reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	return runSteps(ctx, &buildState{req: req},
		r.loadDynamoComponent,
		r.renderBuildJob,
		r.ensureBuildJob,
		r.reportBuild,
	)
}

// loadDynamoComponent reads the DynamoComponent, and ends the reconcile of
// one gone, being deleted, or naming its image (nothing to build).
func (r *DynamoComponentReconciler) loadDynamoComponent(ctx context.Context, s *buildState) (reconcile.Result, bool, error) {
	dc := &v1alpha1.DynamoComponent{}
	if err := r.Client.Get(ctx, s.req.NamespacedName, dc); err != nil {
		return stop(reconcile.Result{}, client.IgnoreNotFound(err))
	}
	if !dc.DeletionTimestamp.IsZero() {
		// A Job in the component's namespace goes with it (owner
		// reference); one in the builder namespace ends by its deadline.
		return stop(reconcile.Result{}, nil)
	}
	if dc.Spec.Image != "" {
		return stop(reconcile.Result{}, r.setStatus(ctx, dc, dc.Spec.Image, metav1.ConditionTrue, ReasonImageGiven,
			"spec.image is set; nothing is built"))
	}
	s.dc = dc
	return proceed()
}

// renderBuildJob renders the build Job of the current spec and deletes
// those of earlier ones.
func (r *DynamoComponentReconciler) renderBuildJob(ctx context.Context, s *buildState) (reconcile.Result, bool, error) {
	job, err := render.BuildJob(s.dc, r.Build)
	if err != nil {
		return stop(reconcile.Result{}, r.setStatus(ctx, s.dc, "", metav1.ConditionFalse, ReasonInvalidSpec, err.Error()))
	}
	if err := r.deleteStaleJobs(ctx, s.dc, job.Name); err != nil {
		return stop(reconcile.Result{}, err)
	}
	s.job, s.image = job, job.Annotations[render.AnnotationBuiltImage]
	return proceed()
}

// ensureBuildJob creates the build Job, unless it exists or its image was
// built already.
func (r *DynamoComponentReconciler) ensureBuildJob(ctx context.Context, s *buildState) (reconcile.Result, bool, error) {
	dc, job := s.dc, s.job
	live, err := getOptional(ctx, r.Client, client.ObjectKeyFromObject(job), &batchv1.Job{})
	if err != nil {
		return stop(reconcile.Result{}, err)
	}
	if live != nil {
		s.live = live
		return proceed()
	}
	if built(dc, s.image) {
		// The Job that built it is gone (deleted, or cleaned up):
		// the image stays built.
		logNothingToDo(ctx, dc)
		return stop(reconcile.Result{}, nil)
	}
	if job.Namespace == dc.Namespace {
		if err := controllerutil.SetControllerReference(dc, job, r.Client.Scheme()); err != nil {
			return stop(reconcile.Result{}, err)
		}
	}
	if err := r.Client.Create(ctx, job, client.FieldOwner(FieldOwner)); client.IgnoreAlreadyExists(err) != nil {
		if isUserError(err) {
			return stop(reconcile.Result{}, r.setStatus(ctx, dc, "", metav1.ConditionFalse, ReasonInvalidSpec,
				fmt.Sprintf("the build Job was refused: %v", err)))
		}
		return stop(reconcile.Result{}, fmt.Errorf("creating build Job %s: %w", job.Name, err))
	}
	ctrl.LoggerFrom(ctx).V(1).Info("build Job created: the component has no image yet",
		"dynamoComponent", klog.KObj(dc), "job", klog.KObj(job), "image", s.image)
	r.Recorder.Eventf(dc, nil, corev1.EventTypeNormal, "Created", "Create", "Created Job/%s to build %s", job.Name, s.image)
	s.live = job
	return proceed()
}

// reportBuild writes the build's outcome, and the image once it is built.
func (r *DynamoComponentReconciler) reportBuild(ctx context.Context, s *buildState) (reconcile.Result, bool, error) {
	status, reason, message := buildOutcome(s.dc, s.live, s.image)
	img := ""
	if status == metav1.ConditionTrue {
		img = s.image
	}
	return stop(reconcile.Result{}, r.setStatus(ctx, s.dc, img, status, reason, message))
}

// built reports whether dc's status says image is built for its current
// spec.
func built(dc *v1alpha1.DynamoComponent, image string) bool {
	c := meta.FindStatusCondition(dc.Status.Conditions, v1alpha1.ConditionImageReady)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == dc.Generation &&
		dc.Status.Image == image
}

// buildOutcome reads the build Job's conditions, which the Job controller
// sets: Complete, or Failed with DeadlineExceeded when activeDeadlineSeconds
// (imageBuildTimeout) passed.
func buildOutcome(dc *v1alpha1.DynamoComponent, job *batchv1.Job, image string) (metav1.ConditionStatus, string, string) {
	name := job.Namespace + "/" + job.Name
	for _, c := range job.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			return metav1.ConditionTrue, ReasonImageBuilt, fmt.Sprintf("built and pushed %s (Job %s)", image, name)
		case batchv1.JobFailed:
			if c.Reason == batchv1.JobReasonDeadlineExceeded {
				return metav1.ConditionFalse, ReasonImageBuildTimedOut, fmt.Sprintf(
					"the image build did not finish within imageBuildTimeout %s (Job %s); raise spec.imageBuildTimeout or delete the Job to retry",
					render.ImageBuildTimeout(dc), name)
			}
			return metav1.ConditionFalse, ReasonImageBuildFailed, fmt.Sprintf(
				"the image build failed (Job %s: %s: %s); see its pod's logs, fix the spec or delete the Job to retry",
				name, c.Reason, c.Message)
		}
	}
	return metav1.ConditionFalse, ReasonImageBuilding, fmt.Sprintf("building %s in Job %s", image, name)
}

// deleteStaleJobs deletes this component's build Jobs made for an earlier
// spec: their result no longer says anything about the current one.
func (r *DynamoComponentReconciler) deleteStaleJobs(ctx context.Context, dc *v1alpha1.DynamoComponent, current string) error {
	ns := r.Build.Namespace
	if ns == "" {
		ns = dc.Namespace
	}
	var jobs batchv1.JobList
	if err := r.Client.List(ctx, &jobs, client.InNamespace(ns), client.MatchingLabels{
		render.LabelBuildComponent: dc.Name, render.LabelBuildComponentNamespace: dc.Namespace}); err != nil {
		return err
	}
	for i := range jobs.Items {
		j := &jobs.Items[i]
		if j.Name == current || !j.DeletionTimestamp.IsZero() {
			continue
		}
		if err := r.Client.Delete(ctx, j, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting the build Job %s of an earlier spec: %w", j.Name, err)
		}
		ctrl.LoggerFrom(ctx).V(1).Info("build Job of an earlier spec deleted", "dynamoComponent", klog.KObj(dc), "job", klog.KObj(j))
		r.Recorder.Eventf(dc, nil, corev1.EventTypeNormal, "Deleted", "Delete", "Deleted Job/%s of an earlier spec", j.Name)
	}
	return nil
}

// setStatus patches the status: image, ImageReady and its kstatus mirrors
// (Ready, and Stalled while only a change can help). An event marks each
// change of the outcome, never a reconcile that finds it unchanged.
func (r *DynamoComponentReconciler) setStatus(ctx context.Context, dc *v1alpha1.DynamoComponent, image string,
	status metav1.ConditionStatus, reason, message string) error {
	now := metav1.NewTime(r.Clock.Now())
	before := meta.FindStatusCondition(dc.Status.Conditions, v1alpha1.ConditionImageReady)
	changed := before == nil || before.Status != status || before.Reason != reason
	wrote, err := patchStatus(ctx, r.Client, dc, func(d *v1alpha1.DynamoComponent) {
		d.Status.ObservedGeneration = d.Generation
		d.Status.Image = image
		c := metav1.Condition{Type: v1alpha1.ConditionImageReady, Status: status, Reason: reason, Message: message,
			ObservedGeneration: d.Generation, LastTransitionTime: now}
		meta.SetStatusCondition(&d.Status.Conditions, c)
		c.Type = v1alpha1.ConditionReady
		meta.SetStatusCondition(&d.Status.Conditions, c)
		if stalledReason(reason) {
			c.Type, c.Status = v1alpha1.ConditionStalled, metav1.ConditionTrue
			meta.SetStatusCondition(&d.Status.Conditions, c)
		} else {
			meta.RemoveStatusCondition(&d.Status.Conditions, v1alpha1.ConditionStalled)
		}
	})
	if err != nil {
		return err
	}
	if !wrote {
		logNothingToDo(ctx, dc)
		return nil
	}
	if changed {
		log := ctrl.LoggerFrom(ctx)
		switch {
		case status == metav1.ConditionTrue:
			log.Info("image ready", "dynamoComponent", klog.KObj(dc), "image", image, "reason", reason)
			r.Recorder.Eventf(dc, nil, corev1.EventTypeNormal, reason, "Build", "%s", message)
		case stalledReason(reason):
			log.Info("image not ready: the user must act", "dynamoComponent", klog.KObj(dc), "reason", reason, "why", message)
			r.Recorder.Eventf(dc, nil, corev1.EventTypeWarning, reason, "Build", "%s", message)
		}
	}
	return nil
}

// stalledReason reports whether a reason means nothing progresses until
// the user changes something.
func stalledReason(reason string) bool {
	return reason == ReasonImageBuildFailed || reason == ReasonImageBuildTimedOut || reason == ReasonInvalidSpec
}
