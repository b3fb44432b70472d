package nodes

import (
	"context"
	"testing"

	"k8s.io/client-go/kubernetes"

	"github.com/dynamoctl/dynamo-operator/sim/cluster"
)

// StartTestCluster is the simulator's cluster for a test or benchmark that
// runs in a network namespace of its own (cluster.TestMainInNamespace): the
// control plane in t's temporary directory, stopped when t ends, with KWOK
// (o, its Kubeconfig the administrator's) running until ctx ends and pools'
// nodes created. It returns an administrator's client.
func StartTestCluster(ctx context.Context, t testing.TB, o KWOKOptions, pools ...Pool) (*cluster.Cluster, kubernetes.Interface) {
	t.Helper()
	bin, err := cluster.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	c, err := cluster.Start(ctx, cluster.Config{Dir: t.TempDir(), BinDir: bin})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	o.Kubeconfig = c.AdminKubeconfig()
	if err := StartKWOK(ctx, o); err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(c.AdminConfig())
	if err := CreatePools(ctx, cs, pools); err != nil {
		t.Fatal(err)
	}
	return c, cs
}
