package steps

// Steps of components.feature: DynamoComponents' image builds. A build is a
// Job. On a cluster that runs Jobs (the simulator: kube-controller-manager's
// Job controller, and KWOK stages that finish builder pods as their
// dynamo-sim/job-outcome annotation says) the steps steer the builder pod
// and wait for the Job controller's verdict; on envtest, which runs no Job
// controller, they write that verdict into the Job's status themselves.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cucumber/godog"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/render"
)

// AnnotationSimJobOutcome on a Job's pod tells the simulator's KWOK stages
// how the pod ends: absent or "succeed" completes it, "fail" fails it,
// "hang" keeps it running (until its Job's deadline, or another value).
const AnnotationSimJobOutcome = "dynamo-sim/job-outcome"

func registerComponentSteps(sc *godog.ScenarioContext, w *world) {
	sc.Step(`^the image build of DynamoComponent `+quoted+` (succeeds|fails|times out)$`, w.buildEnds)
	sc.Step(`^the build Job of DynamoComponent `+quoted+` has `+anything+` equal to `+anything+`$`, unquote3(w.buildJobFieldEquals))
	sc.Step(`^the Deployment `+quoted+` keeps its pod template until the image build of DynamoComponent `+quoted+` succeeds$`,
		w.keepsTemplateUntilBuilt)
	sc.Step(`^the (\S+) `+quoted+` has no owner$`, w.hasNoOwner)
}

func (w *world) hasNoOwner(ctx context.Context, kind, name string) error {
	obj, err := w.object(kind, name)
	if err != nil {
		return err
	}
	if err := w.cluster.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		return err
	}
	if refs := obj.GetOwnerReferences(); len(refs) > 0 {
		return fmt.Errorf("%s %q is owned by %v", kind, name, refs)
	}
	return nil
}

// buildJob waits for the operator's build Job of the DynamoComponent and
// returns it.
func (w *world) buildJob(ctx context.Context, dcName string) (*batchv1.Job, error) {
	var job *batchv1.Job
	err := w.eventually(ctx, "the build Job of DynamoComponent "+dcName, func() error {
		var jobs batchv1.JobList
		if err := w.cluster.Client.List(ctx, &jobs, client.MatchingLabels{
			render.LabelBuildComponent: dcName, render.LabelBuildComponentNamespace: w.namespace}); err != nil {
			return err
		}
		for i := range jobs.Items {
			if jobs.Items[i].DeletionTimestamp.IsZero() {
				job = &jobs.Items[i]
				return nil
			}
		}
		return fmt.Errorf("no build Job of DynamoComponent %q yet", dcName)
	})
	return job, err
}

func (w *world) buildJobFieldEquals(ctx context.Context, dcName, path, want string) error {
	job, err := w.buildJob(ctx, dcName)
	if err != nil {
		return err
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(job)
	if err != nil {
		return err
	}
	got, err := JSONPathValue(u, path)
	if err != nil {
		return err
	}
	if got != want {
		return fmt.Errorf("build Job %s %s: expected %q, got %q", job.Name, path, want, got)
	}
	return nil
}

// buildEnds ends the DynamoComponent's build as the step says and waits
// until the Job says so.
func (w *world) buildEnds(ctx context.Context, dcName, outcome string) error {
	job, err := w.buildJob(ctx, dcName)
	if err != nil {
		return err
	}
	if w.cluster.RunsJobs {
		return w.steerBuildPod(ctx, job, outcome)
	}
	return w.finishJob(ctx, job, outcome)
}

// steerBuildPod tells the simulator how the builder pod ends (a timeout is
// the Job controller's to call, at activeDeadlineSeconds) and waits for the
// Job controller's verdict.
func (w *world) steerBuildPod(ctx context.Context, job *batchv1.Job, outcome string) error {
	wantType, wantReason := batchv1.JobComplete, ""
	switch outcome {
	case "fails":
		wantType = batchv1.JobFailed
	case "times out":
		wantType, wantReason = batchv1.JobFailed, batchv1.JobReasonDeadlineExceeded
	}
	if outcome != "times out" {
		value := map[string]string{"succeeds": "succeed", "fails": "fail"}[outcome]
		if err := w.eventually(ctx, "the build Job's pods annotated to "+value, func() error { return w.annotateJobPods(ctx, job, value) }); err != nil {
			return err
		}
	}
	return w.eventually(ctx, "the build Job "+job.Name+" "+outcome, func() error {
		if err := w.cluster.Client.Get(ctx, client.ObjectKeyFromObject(job), job); err != nil {
			return err
		}
		for _, c := range job.Status.Conditions {
			if c.Type == wantType && c.Status == corev1.ConditionTrue && (wantReason == "" || c.Reason == wantReason) {
				return nil
			}
		}
		return fmt.Errorf("build Job %s: no %s%s condition yet: %v", job.Name, wantType, wantReason, job.Status.Conditions)
	})
}

// annotateJobPods sets the outcome annotation on the Job's pods; there is
// at least one (backoffLimit 0: exactly one).
func (w *world) annotateJobPods(ctx context.Context, job *batchv1.Job, value string) error {
	var pods corev1.PodList
	if err := w.cluster.Client.List(ctx, &pods, client.InNamespace(job.Namespace),
		client.MatchingLabels{batchv1.JobNameLabel: job.Name}); err != nil {
		return err
	}
	if len(pods.Items) == 0 {
		return fmt.Errorf("build Job %s has no pod yet", job.Name)
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Annotations[AnnotationSimJobOutcome] == value {
			continue
		}
		patch := client.MergeFrom(p.DeepCopy())
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[AnnotationSimJobOutcome] = value
		if err := w.cluster.Client.Patch(ctx, p, patch); err != nil {
			return err
		}
	}
	return nil
}

// finishJob writes what the Job controller would: the terminal condition
// after its interim one (SuccessCriteriaMet, FailureTarget), which the API
// server's Job status validation asks for.
func (w *world) finishJob(ctx context.Context, job *batchv1.Job, outcome string) error {
	now := metav1.NewTime(time.Now())
	cond := func(t batchv1.JobConditionType, reason, msg string) batchv1.JobCondition {
		return batchv1.JobCondition{Type: t, Status: corev1.ConditionTrue, Reason: reason, Message: msg,
			LastProbeTime: now, LastTransitionTime: now}
	}
	job.Status.StartTime = &now
	switch outcome {
	case "succeeds":
		job.Status.Succeeded = 1
		job.Status.CompletionTime = &now
		job.Status.Conditions = append(job.Status.Conditions,
			cond(batchv1.JobSuccessCriteriaMet, batchv1.JobReasonCompletionsReached, "Reached expected number of succeeded pods"),
			cond(batchv1.JobComplete, batchv1.JobReasonCompletionsReached, "Reached expected number of succeeded pods"))
	case "fails":
		job.Status.Failed = 1
		job.Status.Conditions = append(job.Status.Conditions,
			cond(batchv1.JobFailureTarget, batchv1.JobReasonBackoffLimitExceeded, "Job has reached the specified backoff limit"),
			cond(batchv1.JobFailed, batchv1.JobReasonBackoffLimitExceeded, "Job has reached the specified backoff limit"))
	case "times out":
		job.Status.Failed = 1
		job.Status.Conditions = append(job.Status.Conditions,
			cond(batchv1.JobFailureTarget, batchv1.JobReasonDeadlineExceeded, "Job was active longer than specified deadline"),
			cond(batchv1.JobFailed, batchv1.JobReasonDeadlineExceeded, "Job was active longer than specified deadline"))
	}
	if err := w.cluster.Client.Status().Update(ctx, job); err != nil {
		return fmt.Errorf("finishing build Job %s: %w", job.Name, err)
	}
	return nil
}

// keepsTemplateUntilBuilt proves that a graph waiting for a new image
// leaves its running workloads alone: the Deployment's generation (it moves
// with every spec write) stays where it was from the moment the operator
// demonstrably acted on the change (the graph reports WaitingForImage for
// its current generation) until the DynamoComponent's image is ready; only
// then may the workload change.
func (w *world) keepsTemplateUntilBuilt(ctx context.Context, deployName, dcName string) error {
	d := &appsv1.Deployment{}
	if err := w.cluster.Client.Get(ctx, client.ObjectKey{Namespace: w.namespace, Name: deployName}, d); err != nil {
		return err
	}
	graph := d.Labels[render.LabelGraphName]
	dgd := &v1alpha1.DynamoGraphDeployment{}
	err := w.eventually(ctx, "the DynamoComponent "+dcName+" building, the Deployment "+deployName+" kept", func() error {
		if err := w.cluster.Client.Get(ctx, client.ObjectKey{Namespace: w.namespace, Name: graph}, dgd); err != nil {
			return err
		}
		c := meta.FindStatusCondition(dgd.Status.Conditions, v1alpha1.ConditionReady)
		if c == nil || c.ObservedGeneration != dgd.Generation || c.Reason != "WaitingForImage" {
			return fmt.Errorf("graph %q does not report WaitingForImage for generation %d yet: %v", graph, dgd.Generation, c)
		}
		return nil
	})
	if err != nil {
		return err
	}
	before, err := w.deploymentGeneration(ctx, deployName)
	if err != nil {
		return err
	}
	if err := w.buildEnds(ctx, dcName, "succeeds"); err != nil {
		return err
	}
	dc := &v1alpha1.DynamoComponent{}
	var violation error
	err = w.eventually(ctx, "the Deployment "+deployName+" rolled out once the image of "+dcName+" is ready", func() error {
		// The Deployment is read before the DynamoComponent. A write
		// seen while the image is not ready is a violation; one seen
		// once it is ready must carry the image its status names, which
		// only a write made after the image was ready can (both can
		// happen between two looks, so their order alone proves nothing).
		d := &appsv1.Deployment{}
		if err := w.cluster.Client.Get(ctx, client.ObjectKey{Namespace: w.namespace, Name: deployName}, d); err != nil {
			return err
		}
		if err := w.cluster.Client.Get(ctx, client.ObjectKey{Namespace: w.namespace, Name: dcName}, dc); err != nil {
			return err
		}
		ready := meta.IsStatusConditionTrue(dc.Status.Conditions, v1alpha1.ConditionImageReady)
		if d.Generation != before {
			image := ""
			if c := containerNamed(d.Spec.Template.Spec.Containers, render.MainContainerName); c != nil {
				image = c.Image
			}
			if !ready || image != dc.Status.Image {
				violation = fmt.Errorf("Deployment %s was written (generation %d -> %d, image %q) before the image of DynamoComponent %s was ready",
					deployName, before, d.Generation, image, dcName)
				return nil
			}
		}
		if !ready {
			return errors.New("DynamoComponent " + dcName + " is not ImageReady yet")
		}
		return nil
	})
	if violation != nil {
		return violation
	}
	return err
}

// deploymentGeneration reads a Deployment's generation.
func (w *world) deploymentGeneration(ctx context.Context, name string) (int64, error) {
	d := &appsv1.Deployment{}
	if err := w.cluster.Client.Get(ctx, client.ObjectKey{Namespace: w.namespace, Name: name}, d); err != nil {
		return 0, err
	}
	return d.Generation, nil
}
