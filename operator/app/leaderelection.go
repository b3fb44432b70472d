package app

import (
	"context"
	"fmt"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/util/uuid"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/dynamoctl/dynamo-operator/operator/config"
)

// installerOwnedLeaseLock is the election lock when the chart owns the
// Lease (--leader-election-create-lease=false). client-go creates the Lease
// whenever it finds none; a replica still running while `helm uninstall`
// deletes everything would then leave a Lease behind. This lock refuses to
// create it: a replica without the installer's Lease simply never leads.
type installerOwnedLeaseLock struct {
	resourcelock.Interface
}

func (l installerOwnedLeaseLock) Create(context.Context, resourcelock.LeaderElectionRecord) error {
	return fmt.Errorf("leader election Lease %s not found: the installer owns it (--leader-election-create-lease=false)", l.Describe())
}

// newInstallerOwnedLeaseLock builds the Lease lock as controller-runtime
// would (identity hostname_uuid, client timeout under the renew deadline),
// wrapped so that it never creates the Lease.
func newInstallerOwnedLeaseLock(cfg *rest.Config, le config.LeaderElectionOptions) (resourcelock.Interface, error) {
	id, err := os.Hostname()
	if err != nil {
		return nil, err
	}
	id = id + "_" + string(uuid.NewUUID())
	cfg = rest.AddUserAgent(rest.CopyConfig(cfg), "leader-election")
	cfg.Timeout = max(le.RenewDeadline/2, time.Second)
	core, err := corev1client.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	coord, err := coordinationv1client.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, le.Namespace, le.ID, core, coord,
		resourcelock.ResourceLockConfig{Identity: id})
	if err != nil {
		return nil, err
	}
	return installerOwnedLeaseLock{lock}, nil
}
