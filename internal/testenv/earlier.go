package testenv

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/dynamoctl/dynamo-operator/internal/await"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/controllers"
)

// CreateEarlierRendering creates deploy as the operator's release version
// left it for the component dcd: controlled by it and stamped with that
// release's renderer and the input it rendered (controllers/adoption.go),
// as an upgrade finds it.
func (e *Env) CreateEarlierRendering(ctx context.Context, dcd *v1alpha1.DynamoComponentDeployment, deploy *appsv1.Deployment, version string) error {
	deploy.Annotations = map[string]string{
		controllers.AnnotationRenderer:    controllers.RendererID(version),
		controllers.AnnotationRenderedFor: controllers.WorkloadInput(dcd, nil),
	}
	if err := controllerutil.SetControllerReference(dcd, deploy, e.Scheme); err != nil {
		return err
	}
	return e.Client.Create(ctx, deploy)
}

// AwaitEarlierRenderingKept waits until the component dcd is Available and
// says its workload is kept (WorkloadPending, with reason), reads it into
// dcd, and checks that the condition's message names the release version
// that rendered the workload and what happens (the upgrade restarts
// nothing; the next spec change renders it anew) and each of also.
func (e *Env) AwaitEarlierRenderingKept(ctx context.Context, t testing.TB, dcd *v1alpha1.DynamoComponentDeployment, reason, version string, also ...string) {
	t.Helper()
	key := client.ObjectKeyFromObject(dcd)
	await.New(t).Eventually(func() bool {
		return e.Client.Get(ctx, key, dcd) == nil && meta.IsStatusConditionTrue(dcd.Status.Conditions, v1alpha1.ConditionWorkloadPending) &&
			meta.IsStatusConditionTrue(dcd.Status.Conditions, v1alpha1.ConditionAvailable)
	}).Should(gomega.BeTrue(), "the component is available and says its workload waits for the next spec change ("+reason+")")
	p := meta.FindStatusCondition(dcd.Status.Conditions, v1alpha1.ConditionWorkloadPending)
	if p.Reason != reason {
		t.Errorf("WorkloadPending reason %q, want %q", p.Reason, reason)
	}
	for _, want := range append([]string{controllers.RendererID(version), "restarts nothing", "next spec change"}, also...) {
		if !strings.Contains(p.Message, want) {
			t.Errorf("WorkloadPending message %q lacks %q", p.Message, want)
		}
	}
}

// WorkloadCurrent reports whether dcd's status says, for its generation,
// that its workload runs what its spec sets (WorkloadPending False): once
// the spec change after an upgrade rendered the workload anew.
func WorkloadCurrent(dcd *v1alpha1.DynamoComponentDeployment) bool {
	c := meta.FindStatusCondition(dcd.Status.Conditions, v1alpha1.ConditionWorkloadPending)
	return dcd.Status.ObservedGeneration == dcd.Generation && c != nil && c.Status == metav1.ConditionFalse &&
		c.Reason == controllers.ReasonWorkloadCurrent && c.ObservedGeneration == dcd.Generation
}

// ExpectEarlierRenderingUnwritten fails t when the Deployment old, created
// by CreateEarlierRendering, had its spec written since or its pod template
// changed.
func (e *Env) ExpectEarlierRenderingUnwritten(ctx context.Context, t testing.TB, old *appsv1.Deployment) {
	t.Helper()
	live := &appsv1.Deployment{}
	if err := e.Client.Get(ctx, client.ObjectKeyFromObject(old), live); err != nil {
		t.Fatal(err)
	}
	if live.Generation != old.Generation {
		t.Errorf("the Deployment's spec was written (generation %d, was %d)", live.Generation, old.Generation)
	}
	if diff := cmp.Diff(old.Spec.Template, live.Spec.Template); diff != "" {
		t.Errorf("the pod template changed at the upgrade (-%s +now):\n%s", old.Annotations[controllers.AnnotationRenderer], diff)
	}
}
