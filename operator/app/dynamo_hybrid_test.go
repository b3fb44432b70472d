package app_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/dynamoctl/dynamo-operator/internal/await"
	"github.com/dynamoctl/dynamo-operator/operator/scope"
)

// dynamoScopedLease is the marker Lease as Dynamo's namespace-scoped
// operator creates it (deploy/operator/internal/namespace_scope at
// df888f68): holderIdentity namespace-restricted-operator-<version>, a
// duration, acquireTime, and no renewTime until its first renewal.
func dynamoScopedLease(ns string) *coordinationv1.Lease {
	now := metav1.NewMicroTime(time.Now())
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: scope.LeaseName, Namespace: ns},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To("namespace-restricted-operator-0.7.1"),
			LeaseDurationSeconds: ptr.To[int32](30),
			AcquireTime:          &now,
		},
	}
}

// Our cluster-wide operator under Dynamo's namespace-scoped one: from the
// moment Dynamo's Lease exists (no renewTime yet) nothing is written in
// its namespace, while the operator demonstrably acts elsewhere; renewals
// as Dynamo makes them keep it so; when Dynamo's operator deletes its
// Lease, what changed meanwhile is converged.
func TestHybridUnderDynamoNamespaceScopedOperator(t *testing.T) {
	const clusterUser = "cluster-wide-under-dynamo"
	ctx := context.Background()
	a, b := env.Namespace(t, "dynamo-scoped"), env.Namespace(t, "dynamo-other")
	startOperator(t, clusterUser)
	createGraph(t, a)
	createGraph(t, b)
	await.New(t).Eventually(func() bool {
		_, _, okA := frontend(t, a)
		_, _, okB := frontend(t, b)
		return okA && okB
	}).Should(gomega.BeTrue(), "the cluster-wide operator runs both graphs")
	quiet(t, clusterUser, a)

	from := time.Now()
	lease := dynamoScopedLease(a)
	if err := env.Client.Create(ctx, lease); err != nil {
		t.Fatal(err)
	}
	scaleFrontend(t, a, 2)
	scaleFrontend(t, b, 2)
	await.New(t).Eventually(func() bool {
		r, _, _ := frontend(t, b)
		return r == 2
	}).Should(gomega.BeTrue(), "the cluster-wide operator scales the graph outside Dynamo's namespace")
	// Dynamo's operator renews: renewTime appears.
	lease.Spec.RenewTime = ptr.To(metav1.NewMicroTime(time.Now()))
	if err := env.Client.Update(ctx, lease); err != nil {
		t.Fatal(err)
	}
	scaleFrontend(t, b, 3)
	await.New(t).Eventually(func() bool {
		r, _, _ := frontend(t, b)
		return r == 3
	}).Should(gomega.BeTrue(), "the cluster-wide operator acts outside Dynamo's namespace again")
	if r, _, _ := frontend(t, a); r != 1 {
		t.Errorf("the frontend in Dynamo's namespace was scaled to %d by the cluster-wide operator", r)
	}
	released := time.Now()
	if w := writesBetween(writesBy(t, clusterUser, a), from, released); len(w) > 0 {
		t.Errorf("the cluster-wide operator wrote in %s while Dynamo's Lease lived:\n%s", a, strings.Join(w, "\n"))
	}

	if err := env.Client.Delete(ctx, lease); err != nil {
		t.Fatal(err)
	}
	await.New(t).Eventually(func() bool {
		r, _, _ := frontend(t, a)
		return r == 2
	}).Should(gomega.BeTrue(), "the cluster-wide operator converges Dynamo's namespace once its Lease is gone")
	first, _ := firstWriteAfter(writesBy(t, clusterUser, a), released)
	t.Logf("Dynamo's Lease deleted; first resumed write %v after the deletion was requested", first.Sub(released))
}
