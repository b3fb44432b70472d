package apitest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/internal/await"
	"github.com/dynamoctl/dynamo-operator/operator/scope"
)

// Hybrid mode: the cluster-wide operator's webhooks let objects through
// unjudged in a namespace a namespace-scoped operator owns (a live marker
// Lease), since that operator's webhook, selected by namespace, judges
// them; everywhere else they judge, and they judge again once the Lease is
// gone.
func TestClusterWideWebhooksLetScopedNamespacesThrough(t *testing.T) {
	operator(t)
	owned, other := env.Namespace(t, "hybrid-owned"), env.Namespace(t, "hybrid-other")
	now := metav1.NewMicroTime(time.Now())
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: owned, Name: scope.LeaseName},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity: ptr.To("v2.0.0-beta"), LeaseDurationSeconds: ptr.To[int32](300),
			AcquireTime: &now, RenewTime: &now,
		},
	}
	if err := env.Client.Create(context.Background(), lease); err != nil {
		t.Fatal(err)
	}

	eventuallyAdmits(t, owned, true)
	if err := env.Client.Create(context.Background(), badGraph(other), client.DryRunAll); err == nil ||
		!strings.Contains(err.Error(), "denied the request") {
		t.Errorf("in a namespace without a marker lease the webhook must judge: %v", err)
	}

	if err := env.Client.Delete(context.Background(), lease); err != nil {
		t.Fatal(err)
	}
	eventuallyAdmits(t, owned, false)
}

// eventuallyAdmits waits until a dry-run create of an invalid graph in ns
// is admitted (want true) or denied by the webhook (want false).
func eventuallyAdmits(t *testing.T, ns string, want bool) {
	t.Helper()
	dryRun := func() error { return env.Client.Create(context.Background(), badGraph(ns), client.DryRunAll) }
	if want {
		await.New(t).Eventually(dryRun).Should(gomega.Succeed(), "an invalid graph in %s is admitted", ns)
		return
	}
	await.New(t).Eventually(dryRun).Should(gomega.MatchError(gomega.ContainSubstring("denied the request")),
		"an invalid graph in %s is denied by the webhook", ns)
}
