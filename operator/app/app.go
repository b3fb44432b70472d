// Package app assembles the operator: a controller-runtime manager with the
// controllers, caches and servers that the configuration asks for. The
// manager binary and the tests' in-process operators both build it here, so
// tests run the operator users run.
package app

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1beta1"
	"github.com/dynamoctl/dynamo-operator/operator/certs"
	"github.com/dynamoctl/dynamo-operator/operator/config"
	"github.com/dynamoctl/dynamo-operator/operator/controllers"
	"github.com/dynamoctl/dynamo-operator/operator/render"
	"github.com/dynamoctl/dynamo-operator/operator/scope"
	"github.com/dynamoctl/dynamo-operator/operator/webhooks"
)

// Deps are what the environment injects into the operator; the zero value
// is what the manager binary uses.
type Deps struct {
	// Clock drives lease expiry, renewals and condition timestamps; the real
	// clock when nil.
	Clock scope.Clock
	// Customize adjusts the manager options before the manager is created,
	// e.g. so a test can register the same controllers again on restart.
	Customize func(*manager.Options)
	// ModelHTTP reaches workers' LoRA API for the DynamoModel controller; a
	// default client when nil (tests dial in-process fake workers).
	ModelHTTP *http.Client
}

// NewScheme returns the types the operator reads and writes: the built-in
// Kubernetes kinds and the nvidia.com/v1alpha1 kinds, the
// nvidia.com/v1beta1 kinds its conversion webhook converts them to and from
// (the operator itself never reads or writes v1beta1), and
// CustomResourceDefinitions (the webhook certificate manager injects its CA
// into the conversion webhook of the CRDs it serves).
func NewScheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("registering Kubernetes types: %w", err)
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("registering %s types: %w", v1alpha1.GroupVersion, err)
	}
	if err := v1beta1.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("registering %s types: %w", v1beta1.GroupVersion, err)
	}
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("registering %s types: %w", apiextensionsv1.SchemeGroupVersion, err)
	}
	// Multinode components' workloads; the API itself may be installed
	// later (see controllers/multinode.go).
	if err := lwsv1.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("registering %s types: %w", lwsv1.GroupVersion, err)
	}
	return scheme, nil
}

// New builds the controller-runtime manager described by o. It contacts the
// API server once, only when the client limits are automatic (ClientLimits);
// everything the operator runs is added to the
// returned manager, which the caller starts.
func New(cfg *rest.Config, o *config.Options, d Deps) (manager.Manager, error) {
	if d.Clock == nil {
		d.Clock = clock.RealClock{}
	}
	// The one request New makes: whether the server runs API Priority and
	// Fairness decides the client-side rate limit (docs/design/writes-and-memory.md).
	cfg, limits := ClientLimits(context.Background(), cfg, o.KubeAPIQPS, o.KubeAPIBurst)
	ctrl.Log.WithName("setup").Info("Kubernetes API client limits", "limits", limits)
	cfg, opts, err := ManagerOptions(cfg, o, d.Clock)
	if err != nil {
		return nil, err
	}
	if d.Customize != nil {
		d.Customize(&opts)
	}
	drain := &webhooks.Drain{}
	draining := opts.WebhookServer != nil && o.Webhook.Drain > 0
	if draining {
		opts.WebhookServer = drain.Server(opts.WebhookServer, o.Webhook.Drain, d.Clock)
	}
	mgr, err := manager.New(cfg, opts)
	if err != nil {
		return nil, err
	}
	if err := addRunnables(mgr, o, d, drain); err != nil {
		return nil, err
	}
	if draining {
		return drainFirst{Manager: mgr, drain: drain, wait: o.Webhook.Drain, clock: d.Clock}, nil
	}
	return mgr, nil
}

// addRunnables adds to mgr the controllers, the namespace scope, the
// metrics, the webhooks, the health checks and the storage migration.
func addRunnables(mgr manager.Manager, o *config.Options, d Deps, drain *webhooks.Drain) error {
	gate := newGate(o, d.Clock)
	resync, err := controllers.Setup(mgr, controllerOptions(o, d, gate))
	if err != nil {
		return fmt.Errorf("setting up controllers: %w", err)
	}
	if err := addScope(mgr, o, d.Clock, gate, resync); err != nil {
		return err
	}
	if err := addMetrics(mgr, o, gate); err != nil {
		return err
	}
	if o.Webhook.Enabled {
		if err := setupWebhooks(mgr, o, d, gate, drain); err != nil {
			return fmt.Errorf("setting up webhooks: %w", err)
		}
	}
	ready, err := addHealthChecks(mgr, o, drain)
	if err != nil {
		return err
	}
	if o.MigrateStorage {
		if err := addStorageMigration(mgr, d.Clock, ready); err != nil {
			return fmt.Errorf("adding the storage migration: %w", err)
		}
	}
	return nil
}

// controllerOptions configure the controllers from the operator's options.
func controllerOptions(o *config.Options, d Deps, gate *scope.Gate) controllers.Options {
	return controllers.Options{
		Workers: o.MaxConcurrentReconciles,
		Render:  render.Options{NATSAddr: o.NATSAddr, EtcdAddr: o.EtcdAddr, TopologyLevels: topologyLevels(o.TopologyDomainLabels)},
		Build:   imageBuildOptions(o.ImageBuilder),
		Clock:   d.Clock,
		Gate:    gate,
		// A new version keeps what an older one (or Dynamo's operator)
		// rendered until a spec changes: see controllers/adoption.go.
		Renderer: controllers.RendererID(o.OperatorVersion),
		Model: controllers.ModelOptions{
			HTTP: d.ModelHTTP, CheckInterval: o.ModelCheckInterval, UnloadTimeout: o.ModelUnloadTimeout,
		},
	}
}

// addHealthChecks adds the liveness and readiness checks, and returns the
// readiness one.
func addHealthChecks(mgr manager.Manager, o *config.Options, drain *webhooks.Drain) (healthz.Checker, error) {
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return nil, fmt.Errorf("adding health check: %w", err)
	}
	// Ready means the admission webhooks answer: the pod joins the webhook
	// Service's endpoints only then, and the API server refuses writes to our
	// kinds (users' and our own) while the Service has no endpoint.
	ready := healthz.Ping
	if o.Webhook.Enabled {
		started := mgr.GetWebhookServer().StartedChecker()
		ready = func(r *http.Request) error {
			if err := drain.Check(r); err != nil {
				return err
			}
			return started(r)
		}
	}
	if err := mgr.AddReadyzCheck("readyz", ready); err != nil {
		return nil, fmt.Errorf("adding ready check: %w", err)
	}
	return ready, nil
}

// ManagerOptions derives the client configuration and manager options from
// the operator's options, without contacting the API server; clk ages the
// metrics endpoint's cache of scrapers' reviews.
func ManagerOptions(cfg *rest.Config, o *config.Options, clk clock.PassiveClock) (*rest.Config, manager.Options, error) {
	scheme, err := NewScheme()
	if err != nil {
		return nil, manager.Options{}, err
	}

	id, err := newIdentity()
	if err != nil {
		return nil, manager.Options{}, err
	}
	cfg = withIdentity(cfg, id)
	if o.KubeAPIQPS > 0 {
		// Automatic limits are resolved by New, which may ask the server.
		cfg, _ = ClientLimits(context.Background(), cfg, o.KubeAPIQPS, o.KubeAPIBurst)
	}

	// HTTP/2 stays off on the operator's servers: its stream handling is
	// exposed to the Stream Cancellation and Rapid Reset attacks
	// (CVE-2023-44487, CVE-2023-39325) and the servers gain nothing from it.
	tlsOpts := []func(*tls.Config){func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }}

	// The manager keeps pointers, so take copies rather than aliasing o.
	leaseDuration := o.LeaderElection.LeaseDuration
	renewDeadline := o.LeaderElection.RenewDeadline
	retryPeriod := o.LeaderElection.RetryPeriod
	opts := manager.Options{
		Scheme:                 scheme,
		Metrics:                metricsServerOptions(o, tlsOpts, clk),
		HealthProbeBindAddress: o.HealthProbeBindAddress,
		PprofBindAddress:       o.PprofBindAddress,
		LeaderElection:         o.LeaderElection.Enabled,
		LeaderElectionID:       o.LeaderElection.ID,
		// Resolved by config.Parse, so this works outside a cluster where
		// controller-runtime could not discover its own namespace.
		LeaderElectionNamespace: o.LeaderElection.Namespace,
		// Hand leadership over on shutdown instead of making the next
		// replica wait out the lease; run exits right after Start returns.
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 &leaseDuration,
		RenewDeadline:                 &renewDeadline,
		RetryPeriod:                   &retryPeriod,
		Controller: ctrlconfig.Controller{
			MaxConcurrentReconciles: o.MaxConcurrentReconciles,
		},
	}
	if o.LeaderElection.Enabled {
		lock, err := newLeaseLock(cfg, o.LeaderElection, id)
		if err != nil {
			return nil, manager.Options{}, fmt.Errorf("leader election lock: %w", err)
		}
		// Every client but the lock's own writes only while this replica
		// holds a fresh Lease (fence.go). On the real clock, whatever clk
		// is: client-go's elector renews on it, and a test's fake clock
		// stepped ahead must not fence a leader that renews on time.
		fence := newLeaseFence(clock.RealClock{}, renewDeadline, id)
		opts.LeaderElectionResourceLockInterface = fence.lock(lock)
		cfg = rest.CopyConfig(cfg)
		cfg.Wrap(fence.transport)
	}
	opts.Cache = cacheOptions(o)
	opts.WebhookServer = webhookServer(o, tlsOpts)
	return cfg, opts, nil
}

// cacheOptions are the manager cache's: the controllers' (the children
// table), within the namespace scope.
func cacheOptions(o *config.Options) cache.Options {
	opts := controllers.CacheOptions()
	if o.RestrictNamespace != "" {
		// Namespace-scoped RBAC cannot list cluster-wide, so the cache must
		// not try to.
		opts.DefaultNamespaces = map[string]cache.Config{o.RestrictNamespace: {}}
	} else {
		markerLeasesOnly(&opts)
	}
	return opts
}

// webhookServer serves the webhooks when they are enabled; nil otherwise.
func webhookServer(o *config.Options, tlsOpts []func(*tls.Config)) webhook.Server {
	if !o.Webhook.Enabled {
		return nil
	}
	// controller-runtime starts this server only once something calls
	// mgr.GetWebhookServer(); setupWebhooks does, and only when webhooks
	// are enabled, so --enable-webhooks=false opens no port. The serving
	// pair is read from the cert dir on each handshake whose files
	// changed (certs.ServeFromDir), so renewals need no restart.
	return webhook.NewServer(webhook.Options{
		Port:    o.Webhook.Port,
		CertDir: o.Webhook.CertDir,
		TLSOpts: append(append([]func(*tls.Config){}, tlsOpts...), certs.ServeFromDir(o.Webhook.CertDir)),
	})
}

// imageBuildOptions hands the image-builder environment to the build Jobs'
// rendering.
func imageBuildOptions(ib config.ImageBuilderOptions) render.ImageBuildOptions {
	return render.ImageBuildOptions{
		Namespace:                 ib.Namespace,
		Engine:                    string(ib.Engine),
		BuildkitURL:               ib.BuildkitURL,
		BuildkitImage:             ib.BuildkitImage,
		DockerRegistryServer:      ib.DockerRegistryServer,
		RepositoryName:            ib.RepositoryName,
		DockerRegistrySecure:      ib.DockerRegistrySecure,
		EstargzEnabled:            ib.EstargzEnabled,
		AddNamespacePrefixToImage: ib.AddNamespacePrefixToImage,
		APIStoreEndpoint:          ib.APIStoreEndpoint,
	}
}

// topologyLevels are the topology levels as the renderer takes them.
func topologyLevels(levels []config.TopologyLevel) []render.TopologyLevel {
	out := make([]render.TopologyLevel, 0, len(levels))
	for _, l := range levels {
		out = append(out, render.TopologyLevel{Domain: l.Domain, Label: l.Label})
	}
	return out
}
