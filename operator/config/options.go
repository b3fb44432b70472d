// Package config parses and validates the dynamo-operator manager's
// command-line flags and environment. It never talks to Kubernetes, so every
// rule can be unit tested with plain argument slices and a fake environment.
package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap/zapcore"
)

// Version is the operator's build version. Release builds stamp it with
//
//	-ldflags "-X github.com/dynamoctl/dynamo-operator/operator/config.Version=<version>"
//
// and it is the default of --operator-version.
var Version = "dev"

// Operating modes reported by Options.Mode.
const (
	ModeClusterWide     = "cluster-wide"
	ModeNamespaceScoped = "namespace-scoped"
)

// WebhookCertMode selects who provisions the webhook serving certificate.
type WebhookCertMode string

const (
	// WebhookCertModeAuto lets the operator generate and rotate a self-signed
	// certificate in --webhook-cert-secret.
	WebhookCertModeAuto WebhookCertMode = "auto"
	// WebhookCertModeCertManager expects cert-manager to populate the secret
	// and inject the CA bundle.
	WebhookCertModeCertManager WebhookCertMode = "cert-manager"
	// WebhookCertModeExternal expects the certificate in --webhook-cert-dir
	// and the CA bundle to be managed by the installer.
	WebhookCertModeExternal WebhookCertMode = "external"
)

// Log formats.
const (
	LogFormatJSON    = "json"
	LogFormatConsole = "console"
)

// ImageBuildEngine is the builder used for DynamoComponent images.
type ImageBuildEngine string

const (
	ImageBuildEngineBuildKit ImageBuildEngine = "buildkit"
	ImageBuildEngineKaniko   ImageBuildEngine = "kaniko"
)

// Options is the validated configuration of the operator manager.
type Options struct {
	// NATSAddr and EtcdAddr are handed to Dynamo workers as environment;
	// empty means the graph brings its own.
	NATSAddr string
	EtcdAddr string

	// RestrictNamespace, when set, confines the operator to one namespace.
	RestrictNamespace string
	// NamespaceLease controls the Lease a namespace-scoped operator holds so
	// that a cluster-wide operator leaves its namespace alone.
	NamespaceLease NamespaceLeaseOptions

	LeaderElection LeaderElectionOptions

	// MetricsBindAddress is host:port, or "0" to disable the metrics server.
	MetricsBindAddress string
	// MetricsSecure serves metrics over HTTPS behind Kubernetes authn/authz.
	MetricsSecure bool
	// MetricsCertDir holds the metrics serving pair (tls.crt, tls.key);
	// empty means a self-signed pair made at start.
	MetricsCertDir string
	// HealthProbeBindAddress is host:port, or "0" to disable health probes.
	HealthProbeBindAddress string
	// PprofBindAddress serves Go's net/http/pprof profiles at host:port;
	// "0" (the default) disables it. For measuring, e.g. `make bench`'s
	// heap profile: it is unauthenticated, so bind it to loopback.
	PprofBindAddress string

	Webhook WebhookOptions

	// OperatorVersion identifies this operator build, e.g. in Lease holder
	// identities.
	OperatorVersion string

	MaxConcurrentReconciles int
	// ModelCheckInterval is how often a worker holding a DynamoModel's
	// adapter is asked whether it still has it; ModelUnloadTimeout how long
	// a deleted model waits for its workers to unload it.
	ModelCheckInterval, ModelUnloadTimeout time.Duration
	// KubeAPIQPS is the client-side rate limit; 0 is automatic: none when
	// the API server runs API Priority and Fairness (app.ClientLimits).
	KubeAPIQPS float32
	// KubeAPIBurst is the burst under KubeAPIQPS; 0 is twice the QPS.
	KubeAPIBurst int

	// LogFormat is json (the default, for collectors) or console (for
	// people), from --log-format or LOG_FORMAT.
	LogFormat string

	// LogLevel is the normalised LOG_LEVEL: "debug", "info", "warn",
	// "error" or a decimal verbosity such as "3". Use ZapLevel to apply it.
	LogLevel string

	// SystemNamespace is DYNAMO_SYSTEM_NAMESPACE, where the Dynamo platform
	// components live.
	SystemNamespace string
	// OperatorNamespace is the namespace the operator runs in: POD_NAMESPACE
	// in-cluster, otherwise SystemNamespace.
	OperatorNamespace string

	ImageBuilder ImageBuilderOptions

	// ApplyCRDs makes the binary server-side apply its embedded CRDs, wait
	// until they are served, and exit: the chart's init container.
	ApplyCRDs bool
	// TopologyDomainLabels are the topology levels, broadest first, with
	// the node label of each (--topology-domain-labels).
	TopologyDomainLabels []TopologyLevel

	// MigrateStorage makes the leader rewrite the objects of the embedded
	// CRDs held in a version other than the storage version and trim each
	// CRD's storedVersions (operator/storagemigration): set by the chart for
	// the release that installs the CRDs, cluster-wide only.
	MigrateStorage bool
}

// NamespaceLeaseOptions configures the namespace-scoped operator's Lease.
type NamespaceLeaseOptions struct {
	Duration      time.Duration
	RenewInterval time.Duration
	// OwnerRole, when set, is a Role in the namespace that the Lease is
	// created owned by (the chart's), so uninstalling removes it.
	OwnerRole string
}

// LeaderElectionOptions configures controller-runtime leader election.
type LeaderElectionOptions struct {
	Enabled bool
	ID      string
	// Namespace holds the election Lease; Parse resolves an empty flag to
	// OperatorNamespace so running outside a cluster works too.
	Namespace     string
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration
	// CreateLease false means the installer (the chart) creates and deletes
	// the election Lease: the operator only takes and renews it, so a
	// replica still running after `helm uninstall` cannot bring it back.
	CreateLease bool
}

// WebhookOptions configures the admission webhook server.
type WebhookOptions struct {
	Enabled     bool
	Port        int
	CertMode    WebhookCertMode
	CertDir     string
	CertSecret  string
	ServiceName string
	// CertValidity and CAValidity are the lifetimes of the serving
	// certificate and of its CA in the auto cert mode; the operator renews
	// each well before it expires.
	CertValidity time.Duration
	CAValidity   time.Duration
	// ManageConfigurations true (the default, for local runs and tests)
	// makes the operator create and maintain its webhook configurations.
	// False (the chart) leaves them to the installer: the operator only
	// injects its CA bundle in the auto mode and never creates or deletes
	// them.
	ManageConfigurations bool
	// URLHost, when set, makes webhook configurations call
	// https://<URLHost>:<Port> instead of the Service, for running the
	// operator outside the cluster.
	URLHost string
	// InjectCRDs, in the auto cert mode, makes the operator keep its CA
	// bundle injected into the conversion webhook of the CRDs that name
	// its webhook (the operator that installed them). False: it never
	// reads or writes CRDs (an install without rights on them).
	InjectCRDs bool
	// CABundle (PEM, from base64 --webhook-ca-bundle) is the CA the CRDs'
	// conversion webhook trusts, applied with them by --apply-crds in the
	// external cert mode, where the installer provides the certificate.
	CABundle []byte
	// Drain is how long the operator keeps answering admissions after
	// SIGTERM, closing each connection after its answer, before it stops:
	// the API server keeps connections to a terminating pod alive, and a
	// request written into one the server has just closed fails.
	Drain time.Duration
}

// URL returns the base URL webhook configurations should call when URLHost
// is set, and "" when they should go through the Service.
func (w WebhookOptions) URL() string {
	if w.URLHost == "" {
		return ""
	}
	return "https://" + net.JoinHostPort(w.URLHost, strconv.Itoa(w.Port))
}

// ImageBuilderOptions configures image builds for DynamoComponent. The
// operator only carries these to the build jobs.
type ImageBuilderOptions struct {
	// Namespace runs the build Jobs; empty means each DynamoComponent's
	// own namespace.
	Namespace                 string
	Engine                    ImageBuildEngine
	BuildkitURL               string
	BuildkitImage             string
	DockerRegistryServer      string
	DockerRegistrySecure      bool
	RepositoryName            string
	EstargzEnabled            bool
	AddNamespacePrefixToImage bool
	APIStoreEndpoint          string
}

// Mode reports whether the operator watches the whole cluster or a single
// namespace.
func (o *Options) Mode() string {
	if o.RestrictNamespace != "" {
		return ModeNamespaceScoped
	}
	return ModeClusterWide
}

// ZapLevel converts LogLevel to a zap level. Numeric verbosities map to
// negative zap levels, which is how logr's V(n) is expressed in zap.
func (o *Options) ZapLevel() zapcore.Level {
	if n, err := strconv.Atoi(o.LogLevel); err == nil && n >= 0 && n <= maxLogVerbosity {
		return zapcore.Level(-n)
	}
	switch o.LogLevel {
	case "debug":
		return zapcore.DebugLevel
	case "warn":
		return zapcore.WarnLevel
	case "error":
		return zapcore.ErrorLevel
	default:
		return zapcore.InfoLevel
	}
}

// Flag names, shared by registration and error messages.
const (
	flagNATSAddr                    = "natsAddr"
	flagEtcdAddr                    = "etcdAddr"
	flagRestrictNamespace           = "restrict-namespace"
	flagNamespaceLeaseDuration      = "namespace-lease-duration"
	flagNamespaceLeaseRenewInterval = "namespace-lease-renew-interval"
	flagLeaderElect                 = "leader-elect"
	flagLeaderElectionID            = "leader-election-id"
	flagLeaderElectionNamespace     = "leader-election-namespace"
	flagLeaderElectionLeaseDuration = "leader-election-lease-duration"
	flagLeaderElectionRenewDeadline = "leader-election-renew-deadline"
	flagLeaderElectionRetryPeriod   = "leader-election-retry-period"
	flagMetricsBindAddress          = "metrics-bind-address"
	flagMetricsSecure               = "metrics-secure"
	flagMetricsCertDir              = "metrics-cert-dir"
	flagLogFormat                   = "log-format"
	flagHealthProbeBindAddress      = "health-probe-bind-address"
	flagPprofBindAddress            = "pprof-bind-address"
	flagWebhookPort                 = "webhook-port"
	flagEnableWebhooks              = "enable-webhooks"
	flagWebhookCertMode             = "webhook-cert-mode"
	flagWebhookCertDir              = "webhook-cert-dir"
	flagWebhookCertSecret           = "webhook-cert-secret"
	flagWebhookServiceName          = "webhook-service-name"
	flagWebhookURLHost              = "webhook-url-host"
	flagWebhookCertValidity         = "webhook-cert-validity"
	flagWebhookCAValidity           = "webhook-ca-validity"
	flagWebhookDrain                = "webhook-drain"
	flagWebhookInjectCRDs           = "webhook-inject-crds"
	flagWebhookCABundle             = "webhook-ca-bundle"
	flagOperatorVersion             = "operator-version"
	flagMaxConcurrentReconciles     = "max-concurrent-reconciles"
	flagModelCheckInterval          = "model-check-interval"
	flagModelUnloadTimeout          = "model-unload-timeout"
	flagKubeAPIQPS                  = "kube-api-qps"
	flagKubeAPIBurst                = "kube-api-burst"
	flagApplyCRDs                   = "apply-crds"
	flagWebhookManageConfigurations = "webhook-manage-configurations"
	flagLeaderElectionCreateLease   = "leader-election-create-lease"
	flagNamespaceLeaseOwnerRole     = "namespace-lease-owner-role"
	flagMigrateStorage              = "migrate-storage"
)

// Environment variable names.
const (
	envLogLevel                      = "LOG_LEVEL"
	envLogFormat                     = "LOG_FORMAT"
	envSystemNamespace               = "DYNAMO_SYSTEM_NAMESPACE"
	envPodNamespace                  = "POD_NAMESPACE"
	envImageBuilderNamespace         = "DYNAMO_IMAGE_BUILDER_NAMESPACE"
	envImageBuildEngine              = "DYNAMO_IMAGE_BUILD_ENGINE"
	envBuildkitURL                   = "BUILDKIT_URL"
	envBuildkitImage                 = "BUILDKIT_IMAGE"
	envDockerRegistryServer          = "DOCKER_REGISTRY_SERVER"
	envDockerRegistryUsername        = "DOCKER_REGISTRY_USERNAME"
	envDockerRegistrySecure          = "DOCKER_REGISTRY_SECURE"
	envImageRepositoryName           = "DYNAMO_IMAGE_REPOSITORY_NAME"
	envDockerRegistryRepositoryName  = "DOCKER_REGISTRY_DYNAMO_COMPONENTS_REPOSITORY_NAME"
	envInternalImagesBuildkit        = "INTERNAL_IMAGES_BUILDKIT"
	envEstargzEnabled                = "ESTARGZ_ENABLED"
	envAddNamespacePrefixToImageName = "ADD_NAMESPACE_PREFIX_TO_IMAGE_NAME"
	envAPIStoreEndpoint              = "API_STORE_ENDPOINT"
)

// defaultBuildkitImageHelp mirrors render.DefaultBuildkitImage for the
// help text (config does not import render).
const defaultBuildkitImageHelp = "moby/buildkit:v0.17.3-rootless"

// Defaults that other flags or env vars derive from.
const (
	defaultLeaderElectionID = "dynamo-operator-leader"
	defaultSystemNamespace  = "dynamo"
)

// flagValues receives the flag values. Values whose Options field has a type
// the flag package cannot fill are held here and converted by Parse.
type flagValues struct {
	o        *Options
	qps      float64
	certMode string
	caBundle string
	topology string
}

func newFlagSet(v *flagValues) *flag.FlagSet {
	fs := flag.NewFlagSet("dynamo-operator", flag.ContinueOnError)
	// Parse reports errors itself; the FlagSet must not print usage as a
	// side effect (it would spam test output and duplicate main's message).
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	for _, add := range []func(*flag.FlagSet, *flagValues){
		addWorkerAndScopeFlags, addLeaderElectionFlags, addServingFlags, addWebhookFlags, addControllerFlags,
		addTopologyFlags,
	} {
		add(fs, v)
	}
	return fs
}

// addWorkerAndScopeFlags: the addresses given to Dynamo's workers, and the
// namespace scope with its marker Lease.
func addWorkerAndScopeFlags(fs *flag.FlagSet, v *flagValues) {
	o := v.o
	fs.StringVar(&o.NATSAddr, flagNATSAddr, "",
		"NATS address given to Dynamo workers, as nats://host:port or host:port.")
	fs.StringVar(&o.EtcdAddr, flagEtcdAddr, "",
		"etcd address given to Dynamo workers, as http://host:port or host:port.")
	fs.StringVar(&o.RestrictNamespace, flagRestrictNamespace, "",
		"Run namespace-scoped: watch and manage only this namespace.")
	fs.DurationVar(&o.NamespaceLease.Duration, flagNamespaceLeaseDuration, 30*time.Second,
		"Duration of the Lease a namespace-scoped operator holds in its namespace.")
	fs.DurationVar(&o.NamespaceLease.RenewInterval, flagNamespaceLeaseRenewInterval, 10*time.Second,
		"How often a namespace-scoped operator renews its Lease; must be less than --"+flagNamespaceLeaseDuration+".")

	fs.StringVar(&o.NamespaceLease.OwnerRole, flagNamespaceLeaseOwnerRole, "",
		"Role in --"+flagRestrictNamespace+" the marker Lease is created owned by, so the garbage collector removes it with the install (the chart's).")
}

// addLeaderElectionFlags: leader election among the operator's replicas.
func addLeaderElectionFlags(fs *flag.FlagSet, v *flagValues) {
	o := v.o
	fs.BoolVar(&o.LeaderElection.Enabled, flagLeaderElect, false,
		"Enable leader election so only one replica reconciles at a time.")
	fs.StringVar(&o.LeaderElection.ID, flagLeaderElectionID, defaultLeaderElectionID,
		"Name of the leader election Lease; defaults to "+defaultLeaderElectionID+"-<namespace> with --"+flagRestrictNamespace+".")
	fs.StringVar(&o.LeaderElection.Namespace, flagLeaderElectionNamespace, "",
		"Namespace of the leader election Lease; empty means the operator's own namespace ("+envPodNamespace+", else "+envSystemNamespace+").")
	fs.DurationVar(&o.LeaderElection.LeaseDuration, flagLeaderElectionLeaseDuration, 15*time.Second,
		"How long non-leaders wait before trying to take over an unrenewed lease.")
	fs.DurationVar(&o.LeaderElection.RenewDeadline, flagLeaderElectionRenewDeadline, 10*time.Second,
		"How long the leader keeps retrying to renew before giving up leadership.")
	fs.DurationVar(&o.LeaderElection.RetryPeriod, flagLeaderElectionRetryPeriod, 2*time.Second,
		"Interval between leader election attempts.")
	fs.BoolVar(&o.LeaderElection.CreateLease, flagLeaderElectionCreateLease, true,
		"Create the leader election Lease when missing; false when the installer owns it (the chart).")
}

// addServingFlags: metrics, health probes, profiling and logs.
func addServingFlags(fs *flag.FlagSet, v *flagValues) {
	o := v.o
	fs.StringVar(&o.MetricsBindAddress, flagMetricsBindAddress, ":8443",
		`Metrics server address as host:port; "0" disables it.`)
	fs.BoolVar(&o.MetricsSecure, flagMetricsSecure, true,
		"Serve metrics over HTTPS; only callers whose token may \"get\" the non-resource URL /metrics (TokenReview, SubjectAccessReview) are answered.")
	fs.StringVar(&o.MetricsCertDir, flagMetricsCertDir, "",
		"Directory with the metrics serving certificate (tls.crt, tls.key), reloaded on change; empty: self-signed at start.")
	fs.StringVar(&o.LogFormat, flagLogFormat, "",
		"Log format: json or console; default "+envLogFormat+", else json.")
	fs.StringVar(&o.HealthProbeBindAddress, flagHealthProbeBindAddress, ":8081",
		`Health probe address as host:port; "0" disables it.`)
	fs.StringVar(&o.PprofBindAddress, flagPprofBindAddress, "0",
		`Go profiling (net/http/pprof) address as host:port, unauthenticated: bind it to loopback; "0" disables it.`)
}

// addWebhookFlags: the admission and conversion webhooks' server and
// certificates.
func addWebhookFlags(fs *flag.FlagSet, v *flagValues) {
	o := v.o
	fs.IntVar(&o.Webhook.Port, flagWebhookPort, 9443, "Port the webhook server listens on.")
	fs.BoolVar(&o.Webhook.Enabled, flagEnableWebhooks, true, "Serve admission webhooks.")
	fs.StringVar(&v.certMode, flagWebhookCertMode, string(WebhookCertModeAuto),
		"Webhook certificate source: auto, cert-manager or external.")
	fs.StringVar(&o.Webhook.CertDir, flagWebhookCertDir, "/tmp/k8s-webhook-server/serving-certs",
		"Directory holding the webhook serving certificate (tls.crt, tls.key).")
	fs.StringVar(&o.Webhook.CertSecret, flagWebhookCertSecret, "dynamo-operator-webhook-cert",
		"Secret holding the webhook serving certificate.")
	fs.StringVar(&o.Webhook.ServiceName, flagWebhookServiceName, "dynamo-operator-webhook",
		"Service that fronts the webhook server.")
	fs.BoolVar(&o.Webhook.ManageConfigurations, flagWebhookManageConfigurations, true,
		"Create and maintain the webhook configurations; false when the installer owns them (the chart): the operator then only injects the CA bundle in the auto cert mode.")
	fs.StringVar(&o.Webhook.URLHost, flagWebhookURLHost, "",
		"If set, webhook configurations call https://<host>:<webhook-port> instead of the Service (for local runs).")
	fs.DurationVar(&o.Webhook.CertValidity, flagWebhookCertValidity, 90*24*time.Hour,
		"Lifetime of the webhook serving certificate in the auto cert mode; renewed when a third is left.")
	fs.DurationVar(&o.Webhook.CAValidity, flagWebhookCAValidity, 10*365*24*time.Hour,
		"Lifetime of the webhook CA in the auto cert mode; at least twice --"+flagWebhookCertValidity+" plus margins.")
	fs.BoolVar(&o.Webhook.InjectCRDs, flagWebhookInjectCRDs, true,
		"In the auto cert mode, keep the CA bundle injected into the conversion webhook of the CRDs that name this operator's webhook "+
			"(the operator that installed them); needs get, list, watch and patch on them. false: never read or write CRDs.")
	fs.StringVar(&v.caBundle, flagWebhookCABundle, "",
		"Base64 PEM CA bundle the CRDs' conversion webhook trusts, applied with --"+flagApplyCRDs+" in the external cert mode.")
	fs.DurationVar(&o.Webhook.Drain, flagWebhookDrain, 5*time.Second,
		"After SIGTERM, keep answering admissions this long, closing each connection after its answer, before stopping (0: stop at once). Keep it below the pod's termination grace period.")
}

// addControllerFlags: the controllers, the API client and the one-shot
// CRD tasks.
func addControllerFlags(fs *flag.FlagSet, v *flagValues) {
	o := v.o
	fs.StringVar(&o.OperatorVersion, flagOperatorVersion, Version, "Operator version reported in logs and Leases.")
	fs.IntVar(&o.MaxConcurrentReconciles, flagMaxConcurrentReconciles, 32,
		"Maximum concurrent reconciles per controller.")
	fs.DurationVar(&o.ModelCheckInterval, flagModelCheckInterval, 30*time.Second,
		"How often each worker holding a DynamoModel's LoRA adapter is asked (GET /v1/loras) whether it still has it.")
	fs.DurationVar(&o.ModelUnloadTimeout, flagModelUnloadTimeout, 2*time.Minute,
		"How long a deleted DynamoModel waits for every worker to unload its adapter before it is let go with an event.")
	fs.Float64Var(&v.qps, flagKubeAPIQPS, 0, "Client-side limit of sustained queries per second to the Kubernetes API. "+
		"0 (the default): no client-side limit when the API server runs API Priority and Fairness, 50 otherwise.")
	fs.IntVar(&o.KubeAPIBurst, flagKubeAPIBurst, 0, "Burst of queries to the Kubernetes API under --kube-api-qps. "+
		"0 (the default): twice the QPS.")
	fs.BoolVar(&o.ApplyCRDs, flagApplyCRDs, false,
		"Server-side apply the CRDs built into this binary, wait until they are served, and exit (the chart's init container).")
	fs.BoolVar(&o.MigrateStorage, flagMigrateStorage, false,
		"As leader, rewrite the objects of the CRDs built into this binary that are stored in a version other than the storage version, "+
			"then trim each CRD's status.storedVersions to it (the release that installs the CRDs; cluster-wide only).")
}

// Setting is one flag or environment variable of the operator: what --help
// prints and what docs/reference/flags.md is generated from.
type Setting struct {
	Name    string
	Default string // a flag's default as --help shows it; empty for a variable (its help says)
	Usage   string
}

// DefaultGCPercent is the operator's GOGC when the environment sets none, and
// MemoryLimitRatio the share of the container's memory limit GOMEMLIMIT
// becomes (operator/cmd/manager/memory.go says why).
const (
	DefaultGCPercent = 40
	MemoryLimitRatio = 0.9
)

// environment lists every environment variable the operator reads, in the
// order --help prints them.
var environment = []Setting{
	{Name: envLogLevel, Usage: "debug, info, warn, error or a verbosity number (default info): info is V(0) (what users must see), 1 adds each child written and why, 2 adds reconciles with nothing to do; debug is 1"},
	{Name: envLogFormat, Usage: "json or console, when --" + flagLogFormat + " is not given (default json)"},
	{Name: envSystemNamespace, Usage: "namespace of the Dynamo platform (default " + defaultSystemNamespace + ")"},
	{Name: envPodNamespace, Usage: "namespace the operator runs in (set by the Deployment)"},
	{Name: envImageBuilderNamespace, Usage: "namespace for image build jobs (default: each DynamoComponent's own namespace)"},
	{Name: envImageBuildEngine, Usage: "buildkit or kaniko (default buildkit)"},
	{Name: envBuildkitURL, Usage: "BuildKit daemon address, e.g. tcp://buildkitd:1234"},
	{Name: envBuildkitImage, Usage: "BuildKit image for build jobs (default " + defaultBuildkitImageHelp + ")"},
	{Name: envInternalImagesBuildkit, Usage: "BuildKit image for build jobs, Dynamo's name (wins over " + envBuildkitImage + ")"},
	{Name: envDockerRegistryServer, Usage: "registry that built images are pushed to"},
	{Name: envDockerRegistryUsername, Usage: "accepted as Dynamo's operator documents it, and ignored: build Jobs push with the credentials of the DynamoComponent's dockerConfigJsonSecretName"},
	{Name: envDockerRegistrySecure, Usage: "use HTTPS for the registry (default true)"},
	{Name: envImageRepositoryName, Usage: "repository for built images (default dynamo-components)"},
	{Name: envDockerRegistryRepositoryName, Usage: "repository for built images, Dynamo's name (wins over " + envImageRepositoryName + ")"},
	{Name: envEstargzEnabled, Usage: "build eStargz images (default false)"},
	{Name: envAddNamespacePrefixToImageName, Usage: "prefix image names with the namespace (default false)"},
	{Name: envAPIStoreEndpoint, Usage: "Dynamo API store URL"},
	{Name: "GOGC", Usage: fmt.Sprintf("the Go garbage collector's target percentage (default %d when unset)", DefaultGCPercent)},
	{Name: "GOMEMLIMIT", Usage: fmt.Sprintf("the Go runtime's soft memory limit (default %d%% of the container's memory limit)", int(MemoryLimitRatio*100))},
	{Name: "AUTOMEMLIMIT", Usage: "off: leave GOMEMLIMIT unset instead of deriving it from the container's memory limit"},
}

// Flags returns every flag with its default and help, sorted by name.
func Flags() []Setting {
	var out []Setting
	newFlagSet(&flagValues{o: &Options{}}).VisitAll(func(f *flag.Flag) {
		out = append(out, Setting{Name: f.Name, Default: f.DefValue, Usage: f.Usage})
	})
	return out
}

// Environment returns every environment variable the operator reads.
func Environment() []Setting { return append([]Setting(nil), environment...) }

// Usage writes help text for all flags and environment variables to w.
func Usage(w io.Writer) {
	fs := newFlagSet(&flagValues{o: &Options{}})
	fs.SetOutput(w)
	fmt.Fprintln(w, "Usage: dynamo-operator [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Flags:")
	fs.PrintDefaults()
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Environment:")
	for _, e := range environment {
		fmt.Fprintf(w, "  %s\n    \t%s\n", e.Name, e.Usage)
	}
}

// Parse parses args (without the program name) and the environment seen
// through lookupEnv, and validates the result. A nil lookupEnv means an empty
// environment. Environment variables set to an empty string count as unset,
// so manifests can blank a value to get the default.
//
// Every problem found is reported in one single-line error. -h and --help
// return flag.ErrHelp; print Usage in that case.
func Parse(args []string, lookupEnv func(string) (string, bool)) (*Options, error) {
	v := &flagValues{o: &Options{}}
	fs := newFlagSet(v)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, flag.ErrHelp
		}
		return nil, fmt.Errorf("invalid configuration: %w", err)
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("invalid configuration: unexpected argument %q: the operator takes only flags", fs.Arg(0))
	}
	explicit := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { explicit[f.Name] = true })

	if lookupEnv == nil {
		lookupEnv = func(string) (string, bool) { return "", false }
	}
	env := func(name string) (string, bool) {
		s, ok := lookupEnv(name)
		s = strings.TrimSpace(s)
		return s, ok && s != ""
	}

	var p problems
	o := v.o
	o.Webhook.CertMode = WebhookCertMode(v.certMode)
	validateFlags(o, v.qps, explicit, &p)
	o.Webhook.CABundle = parseCABundle(v.caBundle, o.Webhook.CertMode, &p)
	o.TopologyDomainLabels = parseTopologyDomainLabels(v.topology, &p)
	parseEnv(o, env, &p)
	resolveDerived(o, explicit, env, &p)
	if len(p) > 0 {
		return nil, p.err()
	}
	return o, nil
}

func validateFlags(o *Options, qps float64, explicit map[string]bool, p *problems) {
	validateWorkerAndScopeFlags(o, p)
	validateLeaderElectionFlags(o, explicit, p)
	checkBindAddress(p, flagMetricsBindAddress, o.MetricsBindAddress)
	checkBindAddress(p, flagHealthProbeBindAddress, o.HealthProbeBindAddress)
	checkBindAddress(p, flagPprofBindAddress, o.PprofBindAddress)
	validateWebhookFlags(o.Webhook, p)
	validateControllerFlags(o, qps, p)
}

// validateWorkerAndScopeFlags: see addWorkerAndScopeFlags.
func validateWorkerAndScopeFlags(o *Options, p *problems) {
	checkServiceAddress(p, flagNATSAddr, o.NATSAddr, "nats://nats:4222")
	checkServiceAddress(p, flagEtcdAddr, o.EtcdAddr, "http://etcd:2379")
	// An empty value is accepted so charts can always pass the flag.
	if o.RestrictNamespace != "" {
		checkDNS1123Label(p, "--"+flagRestrictNamespace, o.RestrictNamespace)
	}

	if o.NamespaceLease.OwnerRole != "" {
		checkDNS1123Subdomain(p, "--"+flagNamespaceLeaseOwnerRole, o.NamespaceLease.OwnerRole)
	}
	// Its rights are cluster-wide: every object of a kind, and the CRDs.
	if o.MigrateStorage && o.RestrictNamespace != "" {
		p.flag(flagMigrateStorage, "a namespace-scoped operator (--%s) can neither list cluster-wide nor patch CRDs: "+
			"the cluster-wide release that installs the CRDs migrates their storage", flagRestrictNamespace)
	}
	// The Lease stores whole seconds; a fraction would make the holder and
	// the cluster-wide operator disagree about the expiry.
	if d := o.NamespaceLease.Duration; d < time.Second || d%time.Second != 0 {
		p.flag(flagNamespaceLeaseDuration, "must be a whole number of seconds, at least 1s, got %s", d)
	}
	// The holder stops writing at 90% of the duration; a renewal interval
	// under 45% leaves room to retry one failed renewal before that.
	if ri, d := o.NamespaceLease.RenewInterval, o.NamespaceLease.Duration; ri <= 0 || ri > d*45/100 {
		p.flag(flagNamespaceLeaseRenewInterval, "must be greater than 0 and at most 45%% of --%s (%s), got %s",
			flagNamespaceLeaseDuration, d, ri)
	}
}

// validateLeaderElectionFlags: see addLeaderElectionFlags.
func validateLeaderElectionFlags(o *Options, explicit map[string]bool, p *problems) {
	if explicit[flagLeaderElectionID] {
		checkDNS1123Subdomain(p, "--"+flagLeaderElectionID, o.LeaderElection.ID)
	}
	if o.LeaderElection.Namespace != "" {
		checkDNS1123Label(p, "--"+flagLeaderElectionNamespace, o.LeaderElection.Namespace)
	}
	le := o.LeaderElection
	if le.LeaseDuration <= 0 {
		p.flag(flagLeaderElectionLeaseDuration, "must be greater than 0, got %s", le.LeaseDuration)
	}
	if le.RenewDeadline <= 0 || le.RenewDeadline >= le.LeaseDuration {
		p.flag(flagLeaderElectionRenewDeadline, "must be greater than 0 and less than --%s (%s), got %s",
			flagLeaderElectionLeaseDuration, le.LeaseDuration, le.RenewDeadline)
	}
	// client-go refuses to start an elector unless the renew deadline exceeds
	// the jittered retry period, so check the same bound here rather than
	// failing after the manager has started.
	if le.RetryPeriod <= 0 || le.RenewDeadline <= time.Duration(leaderElectionJitterFactor*float64(le.RetryPeriod)) {
		p.flag(flagLeaderElectionRetryPeriod,
			"must be greater than 0 and less than --%s (%s) even with client-go's %gx retry jitter, got %s",
			flagLeaderElectionRenewDeadline, le.RenewDeadline, leaderElectionJitterFactor, le.RetryPeriod)
	}
}

// validateWebhookFlags: see addWebhookFlags.
func validateWebhookFlags(w WebhookOptions, p *problems) {
	if w.Port < 1 || w.Port > 65535 {
		p.flag(flagWebhookPort, "must be between 1 and 65535, got %d", w.Port)
	}
	switch w.CertMode {
	case WebhookCertModeAuto, WebhookCertModeCertManager, WebhookCertModeExternal:
	default:
		p.flag(flagWebhookCertMode, "must be one of %s, %s, %s, got %q",
			WebhookCertModeAuto, WebhookCertModeCertManager, WebhookCertModeExternal, string(w.CertMode))
	}
	if w.CertDir == "" {
		p.flag(flagWebhookCertDir, "must be non-empty")
	}
	checkDNS1123Subdomain(p, "--"+flagWebhookCertSecret, w.CertSecret)
	if w.CertValidity <= 0 {
		p.flag(flagWebhookCertValidity, "must be greater than 0, got %s", w.CertValidity)
	}
	if w.CAValidity <= 2*w.CertValidity {
		p.flag(flagWebhookCAValidity, "must be more than twice --%s (%s), got %s", flagWebhookCertValidity, w.CertValidity, w.CAValidity)
	}
	if w.Drain < 0 {
		p.flag(flagWebhookDrain, "must not be negative, got %s", w.Drain)
	}
	checkDNS1035Label(p, "--"+flagWebhookServiceName, w.ServiceName)
	if w.URLHost != "" && !validHost(w.URLHost) {
		p.flag(flagWebhookURLHost, "must be a hostname or IP address without scheme or port, got %q", w.URLHost)
	}
}

// validateControllerFlags: see addControllerFlags. It sets o.KubeAPIQPS
// from qps when valid.
func validateControllerFlags(o *Options, qps float64, p *problems) {
	if strings.TrimSpace(o.OperatorVersion) == "" {
		p.flag(flagOperatorVersion, "must be non-empty")
	} else if n := len([]rune(o.OperatorVersion)); n > maxOperatorVersionLength {
		p.flag(flagOperatorVersion, "must be at most %d characters, got %d", maxOperatorVersionLength, n)
	}

	if o.MaxConcurrentReconciles < 1 {
		p.flag(flagMaxConcurrentReconciles, "must be at least 1, got %d", o.MaxConcurrentReconciles)
	}
	if o.ModelCheckInterval < time.Second {
		p.flag(flagModelCheckInterval, "must be at least 1s, got %s", o.ModelCheckInterval)
	}
	if o.ModelUnloadTimeout <= 0 {
		p.flag(flagModelUnloadTimeout, "must be greater than 0, got %s", o.ModelUnloadTimeout)
	}
	// rest.Config takes a float32, so reject what cannot be represented
	// instead of silently turning it into +Inf.
	if !(qps >= 0 && qps <= math.MaxFloat32) {
		p.flag(flagKubeAPIQPS, "must be 0 (automatic) or a finite number greater than 0, got %v", qps)
	} else {
		o.KubeAPIQPS = float32(qps)
	}
	if o.KubeAPIBurst < 0 {
		p.flag(flagKubeAPIBurst, "must be 0 (twice the QPS) or at least 1, got %d", o.KubeAPIBurst)
	}
}

func parseEnv(o *Options, env func(string) (string, bool), p *problems) {
	o.LogLevel = "info"
	if s, ok := env(envLogLevel); ok {
		if level, err := parseLogLevel(s); err != nil {
			p.env(envLogLevel, "%s, got %q", err, s)
		} else {
			o.LogLevel = level
		}
	}

	o.SystemNamespace = defaultSystemNamespace
	if s, ok := env(envSystemNamespace); ok {
		o.SystemNamespace = s
		checkDNS1123Label(p, envSystemNamespace, s)
	}
	parseImageBuilderEnv(&o.ImageBuilder, env, p)
}

// parseImageBuilderEnv reads the image builder's settings, named as
// Dynamo's operator names them.
func parseImageBuilderEnv(ib *ImageBuilderOptions, env func(string) (string, bool), p *problems) {
	ib.Engine = ImageBuildEngineBuildKit
	if s, ok := env(envImageBuildEngine); ok {
		switch e := ImageBuildEngine(strings.ToLower(s)); e {
		case ImageBuildEngineBuildKit, ImageBuildEngineKaniko:
			ib.Engine = e
		default:
			p.env(envImageBuildEngine, "must be one of %s, %s, got %q", ImageBuildEngineBuildKit, ImageBuildEngineKaniko, s)
		}
	}
	if s, ok := env(envBuildkitURL); ok {
		ib.BuildkitURL = s
		if !hasScheme(s) {
			p.env(envBuildkitURL, "must be a URL with a scheme (e.g. tcp://buildkitd:1234), got %q", s)
		}
	}
	ib.BuildkitImage, _ = env(envBuildkitImage)
	if s, ok := env(envInternalImagesBuildkit); ok {
		ib.BuildkitImage = s // Dynamo's documented name
	}
	ib.DockerRegistryServer, _ = env(envDockerRegistryServer)
	ib.DockerRegistrySecure = parseBoolEnv(env, p, envDockerRegistrySecure, true)
	ib.RepositoryName = "dynamo-components"
	for _, name := range []string{envImageRepositoryName, envDockerRegistryRepositoryName} {
		s, ok := env(name)
		if !ok {
			continue
		}
		ib.RepositoryName = s // Dynamo's documented name, last, wins
		if !imageRepositoryPattern.MatchString(s) {
			p.env(name,
				"must be a lowercase image repository path (e.g. dynamo-components or team/dynamo), got %q", s)
		}
	}
	ib.EstargzEnabled = parseBoolEnv(env, p, envEstargzEnabled, false)
	if ib.EstargzEnabled && ib.Engine == ImageBuildEngineKaniko {
		// kaniko cannot write eStargz layers; a build that silently
		// ignored the setting would surprise whoever set it.
		p.env(envEstargzEnabled, "needs %s=%s (kaniko cannot build eStargz images)", envImageBuildEngine, ImageBuildEngineBuildKit)
	}
	ib.AddNamespacePrefixToImage = parseBoolEnv(env, p, envAddNamespacePrefixToImageName, false)
	if s, ok := env(envAPIStoreEndpoint); ok {
		ib.APIStoreEndpoint = s
		if !isHTTPURL(s) {
			p.env(envAPIStoreEndpoint, "must be an http or https URL with a host, got %q", s)
		}
	}
}

// resolveDerived fills in defaults that depend on other settings.
func resolveDerived(o *Options, explicit map[string]bool, env func(string) (string, bool), p *problems) {
	if o.LogFormat == "" {
		o.LogFormat, _ = env(envLogFormat)
	}
	switch o.LogFormat {
	case "":
		o.LogFormat = LogFormatJSON
	case LogFormatJSON, LogFormatConsole:
	default:
		if explicit[flagLogFormat] {
			p.flag(flagLogFormat, "must be %s or %s, got %q", LogFormatJSON, LogFormatConsole, o.LogFormat)
		} else {
			p.env(envLogFormat, "must be %s or %s, got %q", LogFormatJSON, LogFormatConsole, o.LogFormat)
		}
	}
	o.OperatorNamespace = o.SystemNamespace
	if s, ok := env(envPodNamespace); ok {
		o.OperatorNamespace = s
		checkDNS1123Label(p, envPodNamespace, s)
	}
	if o.LeaderElection.Namespace == "" {
		o.LeaderElection.Namespace = o.OperatorNamespace
	}
	// Namespace-scoped operators in different namespaces must not contend
	// for the same Lease.
	if o.RestrictNamespace != "" && !explicit[flagLeaderElectionID] {
		o.LeaderElection.ID = defaultLeaderElectionID + "-" + o.RestrictNamespace
	}

	// Empty: each build Job runs in its DynamoComponent's namespace, owned
	// by it, which every deployment mode may write to.
	if s, ok := env(envImageBuilderNamespace); ok {
		o.ImageBuilder.Namespace = s
		checkDNS1123Label(p, envImageBuilderNamespace, s)
	}
}
