package controllers

import (
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dynamoctl/dynamo-operator/internal/builders"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

func TestBuildOutcome(t *testing.T) {
	dc := builders.MakeDynamoComponent("slow--v1", "team", "slow:v1").Timeout(5 * time.Second).Obj()
	job := func(conds ...batchv1.JobCondition) *batchv1.Job {
		j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "slow--v1-build-0"}}
		j.Status.Conditions = conds
		return j
	}
	cond := func(t batchv1.JobConditionType, s corev1.ConditionStatus, reason string) batchv1.JobCondition {
		return batchv1.JobCondition{Type: t, Status: s, Reason: reason, Message: "m"}
	}
	for name, tc := range map[string]struct {
		job        *batchv1.Job
		status     metav1.ConditionStatus
		reason     string
		messageHas string
	}{
		"running": {job(), metav1.ConditionFalse, ReasonImageBuilding, "building img in Job team/slow--v1-build-0"},
		"interim conditions only": {job(cond(batchv1.JobFailureTarget, corev1.ConditionTrue, "DeadlineExceeded")),
			metav1.ConditionFalse, ReasonImageBuilding, "building"},
		"complete": {job(cond(batchv1.JobSuccessCriteriaMet, corev1.ConditionTrue, ""), cond(batchv1.JobComplete, corev1.ConditionTrue, "")),
			metav1.ConditionTrue, ReasonImageBuilt, "built and pushed img"},
		"timed out": {job(cond(batchv1.JobFailed, corev1.ConditionTrue, batchv1.JobReasonDeadlineExceeded)),
			metav1.ConditionFalse, ReasonImageBuildTimedOut, "did not finish within imageBuildTimeout 5s"},
		"failed": {job(cond(batchv1.JobFailed, corev1.ConditionTrue, batchv1.JobReasonBackoffLimitExceeded)),
			metav1.ConditionFalse, ReasonImageBuildFailed, "BackoffLimitExceeded: m"},
		"a false Complete is no verdict": {job(cond(batchv1.JobComplete, corev1.ConditionFalse, "")),
			metav1.ConditionFalse, ReasonImageBuilding, "building"},
	} {
		t.Run(name, func(t *testing.T) {
			status, reason, msg := buildOutcome(dc, tc.job, "img")
			if status != tc.status || reason != tc.reason || !strings.Contains(msg, tc.messageHas) {
				t.Errorf("got %s %s %q, want %s %s containing %q", status, reason, msg, tc.status, tc.reason, tc.messageHas)
			}
		})
	}
}

func TestSetImageWait(t *testing.T) {
	now := metav1.NewTime(time.Unix(10, 0))
	dgd := builders.MakeGraph("llm", "team").DynamoComponent("frontend:v2").Generation(3).Obj()
	for _, tc := range []struct {
		wait   *imageWait
		state  v1alpha1.GraphState
		reason string
	}{
		{&imageWait{ReasonWaitingForImage, "waiting for the image of DynamoComponent frontend--v2"}, v1alpha1.GraphStatePending, ReasonWaitingForImage},
		{&imageWait{ReasonImageBuildFailedForComponent, "cannot be built"}, v1alpha1.GraphStateFailed, ReasonImageBuildFailedForComponent},
	} {
		st := v1alpha1.DynamoGraphDeploymentStatus{State: v1alpha1.GraphStateSuccessful}
		setImageWait(&st, dgd, tc.wait, now)
		c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady)
		if st.State != tc.state || c == nil || c.Status != metav1.ConditionFalse || c.Reason != tc.reason ||
			c.Message != tc.wait.message || c.ObservedGeneration != 3 {
			t.Errorf("%s: state %s, condition %+v", tc.reason, st.State, c)
		}
	}
	st := v1alpha1.DynamoGraphDeploymentStatus{State: v1alpha1.GraphStateSuccessful}
	setImageWait(&st, dgd, nil, now)
	if st.State != v1alpha1.GraphStateSuccessful || len(st.Conditions) != 0 {
		t.Errorf("nothing to wait for changed the status: %+v", st)
	}
}
