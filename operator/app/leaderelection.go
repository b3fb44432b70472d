package app

import (
	"context"
	"fmt"
	"os"
	"strings"
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

// newLeaseLock builds the Lease lock as controller-runtime would (client
// timeout under the renew deadline) with identity id, wrapped so that it
// never creates the Lease when the installer owns it.
func newLeaseLock(cfg *rest.Config, le config.LeaderElectionOptions, id string) (resourcelock.Interface, error) {
	// rest.AddUserAgent would replace the identity withIdentity put there.
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent += "/leader-election"
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
	if le.CreateLease {
		return lock, nil
	}
	return installerOwnedLeaseLock{lock}, nil
}

// replicaToken precedes a replica's identity in its user agent.
const replicaToken = " replica/"

// newIdentity is this process's identity, as controller-runtime makes it:
// the host name (a pod's name) and a UUID, new with every start, so a
// restarted container is a new candidate.
func newIdentity() (string, error) {
	host, err := os.Hostname()
	if err != nil {
		return "", err
	}
	return host + "_" + string(uuid.NewUUID()), nil
}

// withIdentity makes every request of cfg's clients carry the process's
// identity in its user agent ("<client-go's> replica/<identity>"). The
// replicas share one ServiceAccount, so the API server's audit log tells
// their requests apart only this way, and a write is matched with the
// election Lease's holder at the time: a standby's writes can be counted.
func withIdentity(cfg *rest.Config, id string) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	if cfg.UserAgent == "" {
		cfg.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	cfg.UserAgent += replicaToken + id
	return cfg
}

// ReplicaIdentity is the identity a request's user agent carries (the
// election Lease's holderIdentity while that process leads), or "" for a
// request of no replica.
func ReplicaIdentity(userAgent string) string {
	_, after, ok := strings.Cut(userAgent, replicaToken)
	if !ok {
		return ""
	}
	id, _, _ := strings.Cut(after, "/") // the lock's client adds /leader-election
	id, _, _ = strings.Cut(id, " ")
	return id
}
