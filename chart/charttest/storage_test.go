package charttest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"k8s.io/client-go/dynamic"

	"github.com/dynamoctl/dynamo-operator/operator/crdinstall"
	"github.com/dynamoctl/dynamo-operator/operator/storagemigration"
)

// The storage migration, as the cluster-wide release that installs the
// CRDs runs it (--migrate-storage), works with exactly the chart's rights:
// it reads every CRD, lists and rewrites the graphs, and trims the graphs'
// storedVersions, with no request refused. (TestInstallUpgradeUninstall
// runs it inside the operator too.)
func TestStorageMigrationWithChartRBAC(t *testing.T) {
	ctx := context.Background()
	h := newHelm(t)
	ns := env.Namespace(t, "dynamo-system")
	release := "storage"
	// No operator answers the admission webhooks here.
	sets := []string{"--set", "dynamo-operator.webhook.failurePolicy=Ignore"}
	h.mustRun(append([]string{"install", release, chartDir(t), "--namespace", ns}, sets...)...)
	t.Cleanup(func() { h.mustRun("uninstall", release, "--namespace", ns, "--wait") })
	objs := h.template(release, ns, sets...)
	if !slices.Contains(containerArgs(t, objs), "--migrate-storage") {
		t.Fatal("the cluster-wide release that installs the CRDs does not pass --migrate-storage")
	}
	graph := storedInV1beta1Too(t)

	log := &requestLog{}
	sa := find(objs, "ServiceAccount", "").GetName()
	c, err := dynamic.NewForConfig(log.wrap(asServiceAccount(ns, sa)))
	if err != nil {
		t.Fatal(err)
	}
	names, err := crdinstall.Names()
	if err != nil {
		t.Fatal(err)
	}
	m := &storagemigration.Migrator{Client: c, CRDs: names, Log: testr.New(t)}
	runCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := m.Start(runCtx); err != nil || runCtx.Err() != nil {
		t.Fatalf("the migration did not finish: %v %v", err, runCtx.Err())
	}
	storageMigratedAsChart(t, log, graph)
	if f := log.Forbidden(); len(f) > 0 {
		t.Errorf("the storage migration was refused with the chart's RBAC: %v", f)
	}
}
