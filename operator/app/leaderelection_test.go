package app_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/internal/await"
	"github.com/dynamoctl/dynamo-operator/operator/app"
)

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestInstallerOwnedElectionLease: with --leader-election-create-lease=false
// (the chart owns the Lease) a replica that finds no Lease keeps asking for
// it but never creates it and never leads; once the installer creates it,
// the replica takes it and reconciles.
func TestInstallerOwnedElectionLease(t *testing.T) {
	ns := env.Namespace(t, "owned-lease")
	const id = "dynamo-operator-owned"
	var notFound atomic.Int64
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(r)
			if err == nil && r.Method == http.MethodGet && resp.StatusCode == http.StatusNotFound &&
				r.URL.Path == "/apis/coordination.k8s.io/v1/namespaces/"+ns+"/leases/"+id {
				notFound.Add(1)
			}
			return resp, err
		})
	})
	op, err := env.NewOperatorWithConfig(cfg, []string{
		"--leader-elect", "--leader-election-id=" + id, "--leader-election-namespace=" + ns,
		"--leader-election-create-lease=false",
		"--leader-election-lease-duration=2s", "--leader-election-renew-deadline=1500ms",
		"--leader-election-retry-period=200ms",
	}, nil, app.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	if err := op.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(op.Stop)
	work := env.Namespace(t, "owned-lease-work")
	createGraph(t, work)

	// Five attempts found no Lease: the replica tried, and created nothing.
	await.New(t).Eventually(notFound.Load).Should(gomega.BeNumerically(">=", 5), "the replica looks for its Lease")
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: id}}
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(lease), lease); !apierrors.IsNotFound(err) {
		t.Fatalf("the Lease exists (err %v): the replica must not create the installer's Lease", err)
	}
	if _, _, ok := frontend(t, work); ok {
		t.Fatal("a replica without its Lease reconciled")
	}

	// The installer creates it, empty, as the chart does.
	if err := env.Client.Create(context.Background(), lease); err != nil {
		t.Fatal(err)
	}
	await.New(t).Eventually(func() bool { _, _, ok := frontend(t, work); return ok }).Should(gomega.BeTrue(), "the replica leads and reconciles")
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(lease), lease); err != nil {
		t.Fatal(err)
	}
	if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
		t.Error("the replica leads without holding the Lease")
	}
}
