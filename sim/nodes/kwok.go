package nodes

import (
	"context"
	"fmt"
	"io"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"sigs.k8s.io/kwok/pkg/client/clientset/versioned"
	"sigs.k8s.io/kwok/pkg/kwok/controllers"
	kwoklog "sigs.k8s.io/kwok/pkg/log"
	kwokclient "sigs.k8s.io/kwok/pkg/utils/client"
)

// ControllerID is the KWOK controller's fixed identity. Node leases are
// held under it, so a restarted simulator takes its nodes back at once
// instead of waiting ~40 s for leases held by a previous random ID.
const ControllerID = "dynamo-sim-kwok"

// KWOKOptions tune the embedded KWOK controller.
type KWOKOptions struct {
	// Kubeconfig reaches the API server as an administrator.
	Kubeconfig string
	// PodReadyDelay is how long a scheduled pod takes to become Running and
	// Ready, as an image pull and model load would.
	PodReadyDelay time.Duration
	// LeaseDuration is the nodes' lease duration; KWOK renews at a quarter.
	LeaseDuration time.Duration
	// Clock drives KWOK's timers; nil is the real clock.
	Clock clock.Clock
	// Log receives KWOK's warnings and errors; nil discards them.
	Log io.Writer
}

// StartKWOK runs the KWOK controller in this process until ctx ends. It
// manages the nodes labelled type=kwok. Its pod IP pool lives in memory;
// on start KWOK marks the addresses of pods that already run as used, so a
// restarted simulator does not hand them out twice.
func StartKWOK(ctx context.Context, o KWOKOptions) error {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	ctx = kwoklog.NewContext(ctx, kwoklog.NewLogger(o.Log, kwoklog.LevelWarn))
	if o.LeaseDuration == 0 {
		o.LeaseDuration = 40 * time.Second
	}
	stages, err := Stages(o.PodReadyDelay)
	if err != nil {
		return err
	}
	cfg, err := kwokClients(o.Kubeconfig)
	if err != nil {
		return err
	}
	cfg.Clock = o.Clock
	cfg.ManageNodesWithLabelSelector = LabelManaged + "=" + ManagedValue
	cfg.CIDR = podCIDR
	cfg.NodeIP = nodeIP
	cfg.LocalStages = stages
	cfg.NodeLeaseDurationSeconds = uint(o.LeaseDuration / time.Second)
	cfg.ID = ControllerID
	cfg.PodPlayStageParallelism = 16
	cfg.NodePlayStageParallelism = 16
	cfg.NodeLeaseParallelism = 16
	cfg.PodsOnNodeSyncParallelism = 16
	ctr, err := controllers.NewController(cfg)
	if err != nil {
		return fmt.Errorf("creating the KWOK controller: %w", err)
	}
	if err := ctr.Start(ctx); err != nil {
		return fmt.Errorf("starting the KWOK controller: %w", err)
	}
	return nil
}

// kwokClients is a KWOK controller configuration with the clients it
// needs, all reaching the API server through kubeconfig.
func kwokClients(kubeconfig string) (controllers.Config, error) {
	cs, err := kwokclient.NewClientset("", kubeconfig)
	if err != nil {
		return controllers.Config{}, err
	}
	restConfig, err := cs.ToRESTConfig()
	if err != nil {
		return controllers.Config{}, fmt.Errorf("KWOK client: %w", err)
	}
	dyn, err := cs.ToDynamicClient()
	if err != nil {
		return controllers.Config{}, err
	}
	mapper, err := cs.ToRESTMapper()
	if err != nil {
		return controllers.Config{}, err
	}
	restClient, err := rest.RESTClientFor(restConfig)
	if err != nil {
		return controllers.Config{}, err
	}
	typed, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return controllers.Config{}, err
	}
	typedKwok, err := versioned.NewForConfig(restConfig)
	if err != nil {
		return controllers.Config{}, err
	}
	return controllers.Config{
		DynamicClient:              dyn,
		RESTClient:                 restClient,
		RESTMapper:                 mapper,
		ImpersonatingDynamicClient: cs.ToImpersonatingDynamicClient(),
		ImpersonatingTypedClient:   cs.ToImpersonatingTypedClient(),
		TypedClient:                typed,
		TypedKwokClient:            typedKwok,
	}, nil
}
