package app

import (
	"fmt"
	"net/http"

	"k8s.io/client-go/dynamic"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/dynamoctl/dynamo-operator/operator/crdinstall"
	"github.com/dynamoctl/dynamo-operator/operator/storagemigration"
)

// addStorageMigration adds the leader's storage migration of the CRDs this
// binary embeds (--migrate-storage). It starts once ready passes: reading
// an object stored in another version calls the conversion webhook, which
// this operator's webhook server serves.
func addStorageMigration(mgr manager.Manager, clk clock.Clock, ready healthz.Checker) error {
	names, err := crdinstall.Names()
	if err != nil {
		return err
	}
	c, err := dynamic.NewForConfig(mgr.GetConfig())
	if err != nil {
		return fmt.Errorf("storage migration client: %w", err)
	}
	return mgr.Add(&storagemigration.Migrator{
		Client:   c,
		CRDs:     names,
		Ready:    func() error { return ready(&http.Request{}) },
		Clock:    clk,
		Recorder: mgr.GetEventRecorder("dynamo-storage-migration"),
		Log:      mgr.GetLogger().WithName("storage-migration"),
	})
}
