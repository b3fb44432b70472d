package config

import (
	"bytes"
	"encoding/base64"
	"errors"
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/zap/zapcore"
)

// testCAPEM is PEM-shaped: the flag's parsing checks the form, not the
// certificate.
const testCAPEM = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"

func envOf(vars map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	}
}

func defaultOptions() Options {
	return Options{
		NamespaceLease: NamespaceLeaseOptions{Duration: 30 * time.Second, RenewInterval: 10 * time.Second},
		LeaderElection: LeaderElectionOptions{
			ID:            "dynamo-operator-leader",
			Namespace:     "dynamo",
			LeaseDuration: 15 * time.Second,
			RenewDeadline: 10 * time.Second,
			RetryPeriod:   2 * time.Second,
			CreateLease:   true,
		},
		MetricsBindAddress:     ":8443",
		MetricsSecure:          true,
		HealthProbeBindAddress: ":8081",
		PprofBindAddress:       "0",
		Webhook: WebhookOptions{
			Enabled:      true,
			Port:         9443,
			CertMode:     WebhookCertModeAuto,
			CertDir:      "/tmp/k8s-webhook-server/serving-certs",
			CertSecret:   "dynamo-operator-webhook-cert",
			ServiceName:  "dynamo-operator-webhook",
			CertValidity: 90 * 24 * time.Hour,
			CAValidity:   10 * 365 * 24 * time.Hour,
			Drain:        5 * time.Second,

			ManageConfigurations: true,
			InjectCRDs:           true,
		},
		OperatorVersion:         Version,
		MaxConcurrentReconciles: 32,
		ModelCheckInterval:      30 * time.Second,
		ModelUnloadTimeout:      2 * time.Minute,
		KubeAPIQPS:              0,
		KubeAPIBurst:            0,
		LogFormat:               LogFormatJSON,
		LogLevel:                "info",
		SystemNamespace:         "dynamo",
		OperatorNamespace:       "dynamo",
		ImageBuilder: ImageBuilderOptions{
			Engine:               ImageBuildEngineBuildKit,
			DockerRegistrySecure: true,
			RepositoryName:       "dynamo-components",
		},
		TopologyDomainLabels: []TopologyLevel{
			{Domain: "region", Label: "topology.kubernetes.io/region"},
			{Domain: "zone", Label: "topology.kubernetes.io/zone"},
			{Domain: "block", Label: "topology.nvidia.com/block"},
			{Domain: "rack", Label: "topology.nvidia.com/rack"},
			{Domain: "nvlink", Label: "nvidia.com/gpu.clique"},
			{Domain: "host", Label: "kubernetes.io/hostname"},
		},
	}
}

func TestParseValid(t *testing.T) {
	tests := map[string]struct {
		args []string
		env  map[string]string
		// nilEnv passes a nil lookupEnv instead of env.
		nilEnv bool
		// edit turns the defaults into the expected options.
		edit func(o *Options)
	}{
		"defaults": {
			edit: func(*Options) {},
		},
		"nil lookupEnv is an empty environment": {
			nilEnv: true,
			edit:   func(*Options) {},
		},
		"service addresses as URLs": {
			args: []string{"--natsAddr=nats://nats.dynamo.svc:4222", "--etcdAddr", "http://etcd:2379"},
			edit: func(o *Options) {
				o.NATSAddr = "nats://nats.dynamo.svc:4222"
				o.EtcdAddr = "http://etcd:2379"
			},
		},
		"service addresses as host:port and URL without port": {
			args: []string{"-natsAddr=10.0.0.1:4222", "-etcdAddr=https://etcd.example.com"},
			edit: func(o *Options) {
				o.NATSAddr = "10.0.0.1:4222"
				o.EtcdAddr = "https://etcd.example.com"
			},
		},
		"namespace-scoped derives the leader election id": {
			args: []string{"--restrict-namespace=team-a", "--leader-elect"},
			edit: func(o *Options) {
				o.RestrictNamespace = "team-a"
				o.LeaderElection.Enabled = true
				o.LeaderElection.ID = "dynamo-operator-leader-team-a"
			},
		},
		"explicit leader election id wins in namespace-scoped mode": {
			args: []string{"--restrict-namespace=team-a", "--leader-election-id=my-lock"},
			edit: func(o *Options) {
				o.RestrictNamespace = "team-a"
				o.LeaderElection.ID = "my-lock"
			},
		},
		"explicitly passing the default id keeps it in namespace-scoped mode": {
			args: []string{"--restrict-namespace=team-a", "--leader-election-id=dynamo-operator-leader"},
			edit: func(o *Options) { o.RestrictNamespace = "team-a" },
		},
		"topology levels of a cluster's own labels, in order": {
			args: []string{"--topology-domain-labels= rack=example.com/rack , host=kubernetes.io/hostname,"},
			edit: func(o *Options) {
				o.TopologyDomainLabels = []TopologyLevel{
					{Domain: "rack", Label: "example.com/rack"}, {Domain: "host", Label: "kubernetes.io/hostname"}}
			},
		},
		"no topology levels": {
			args: []string{"--topology-domain-labels="},
			edit: func(o *Options) { o.TopologyDomainLabels = nil },
		},
		"empty restrict-namespace means cluster-wide": {
			args: []string{"--restrict-namespace="},
			edit: func(*Options) {},
		},
		"leader election namespace from POD_NAMESPACE": {
			env: map[string]string{"POD_NAMESPACE": "ops", "DYNAMO_SYSTEM_NAMESPACE": "platform"},
			edit: func(o *Options) {
				o.SystemNamespace = "platform"
				o.OperatorNamespace = "ops"
				o.LeaderElection.Namespace = "ops"
			},
		},
		"leader election namespace falls back to DYNAMO_SYSTEM_NAMESPACE": {
			env: map[string]string{"DYNAMO_SYSTEM_NAMESPACE": "platform"},
			edit: func(o *Options) {
				o.SystemNamespace = "platform"
				o.OperatorNamespace = "platform"
				o.LeaderElection.Namespace = "platform"
			},
		},
		"explicit leader election namespace": {
			args: []string{"--leader-election-namespace=locks"},
			env:  map[string]string{"POD_NAMESPACE": "ops"},
			edit: func(o *Options) {
				o.OperatorNamespace = "ops"
				o.LeaderElection.Namespace = "locks"
			},
		},
		"leader election timings": {
			args: []string{
				"--leader-election-lease-duration=60s",
				"--leader-election-renew-deadline=40s",
				"--leader-election-retry-period=5s",
				"--namespace-lease-duration=1m",
				"--namespace-lease-renew-interval=20s",
			},
			edit: func(o *Options) {
				o.LeaderElection.LeaseDuration = time.Minute
				o.LeaderElection.RenewDeadline = 40 * time.Second
				o.LeaderElection.RetryPeriod = 5 * time.Second
				o.NamespaceLease.Duration = time.Minute
				o.NamespaceLease.RenewInterval = 20 * time.Second
			},
		},
		"servers": {
			args: []string{
				"--metrics-bind-address=0",
				"--metrics-secure=false",
				"--health-probe-bind-address=127.0.0.1:0",
				"--webhook-port=10250",
				"--enable-webhooks=false",
				"--webhook-cert-mode=cert-manager",
				"--webhook-cert-dir=/certs",
				"--webhook-cert-secret=my.cert",
				"--webhook-service-name=my-webhook",
				"--webhook-url-host=host.docker.internal",
				"--webhook-cert-validity=4s", "--webhook-ca-validity=12s",
				"--webhook-drain=0s",
			},
			edit: func(o *Options) {
				o.MetricsBindAddress = "0"
				o.MetricsSecure = false
				o.HealthProbeBindAddress = "127.0.0.1:0"
				o.Webhook = WebhookOptions{
					Enabled:      false,
					Port:         10250,
					CertMode:     WebhookCertModeCertManager,
					CertDir:      "/certs",
					CertSecret:   "my.cert",
					ServiceName:  "my-webhook",
					URLHost:      "host.docker.internal",
					CertValidity: 4 * time.Second,
					CAValidity:   12 * time.Second,

					ManageConfigurations: true,
					InjectCRDs:           true,
				}
			},
		},
		"installed by the chart": {
			args: []string{
				"--webhook-manage-configurations=false",
				"--leader-election-create-lease=false",
				"--namespace-lease-owner-role=dynamo-test-dynamo-operator",
				"--apply-crds",
				"--migrate-storage",
			},
			edit: func(o *Options) {
				o.Webhook.ManageConfigurations = false
				o.LeaderElection.CreateLease = false
				o.NamespaceLease.OwnerRole = "dynamo-test-dynamo-operator"
				o.ApplyCRDs = true
				o.MigrateStorage = true
			},
		},
		"CRDs applied in the external cert mode": {
			args: []string{
				"--apply-crds",
				"--webhook-cert-mode=external",
				"--webhook-ca-bundle=" + base64.StdEncoding.EncodeToString([]byte(testCAPEM)),
				"--webhook-inject-crds=false",
			},
			edit: func(o *Options) {
				o.ApplyCRDs = true
				o.Webhook.CertMode = WebhookCertModeExternal
				o.Webhook.CABundle = []byte(testCAPEM)
				o.Webhook.InjectCRDs = false
			},
		},
		"IPv6 bind address and webhook host": {
			args: []string{"--metrics-bind-address=[::1]:8443", "--webhook-url-host=::1"},
			edit: func(o *Options) {
				o.MetricsBindAddress = "[::1]:8443"
				o.Webhook.URLHost = "::1"
			},
		},
		"tuning": {
			args: []string{
				"--operator-version=v1.2.3",
				"--max-concurrent-reconciles=1",
				"--kube-api-qps=2.5",
				"--kube-api-burst=1",
			},
			edit: func(o *Options) {
				o.OperatorVersion = "v1.2.3"
				o.MaxConcurrentReconciles = 1
				o.KubeAPIQPS = 2.5
				o.KubeAPIBurst = 1
			},
		},
		"operator version at the length limit": {
			args: []string{"--operator-version=" + strings.Repeat("v", 128)},
			edit: func(o *Options) { o.OperatorVersion = strings.Repeat("v", 128) },
		},
		"log level name is case-insensitive": {
			env:  map[string]string{"LOG_LEVEL": " DEBUG "},
			edit: func(o *Options) { o.LogLevel = "debug" },
		},
		"log format from the environment": {
			env:  map[string]string{"LOG_FORMAT": "console"},
			edit: func(o *Options) { o.LogFormat = LogFormatConsole },
		},
		"log format flag wins over the environment": {
			args: []string{"--log-format=json"},
			env:  map[string]string{"LOG_FORMAT": "console"},
			edit: func(*Options) {},
		},
		"log level verbosity is normalised": {
			env:  map[string]string{"LOG_LEVEL": "03"},
			edit: func(o *Options) { o.LogLevel = "3" },
		},
		"empty environment values mean unset": {
			env: map[string]string{
				"LOG_LEVEL": "", "DYNAMO_SYSTEM_NAMESPACE": "", "POD_NAMESPACE": "",
				"DOCKER_REGISTRY_SECURE": "", "DYNAMO_IMAGE_BUILD_ENGINE": "",
			},
			edit: func(*Options) {},
		},
		"image builder settings under Dynamo's documented names win": {
			env: map[string]string{
				"DYNAMO_IMAGE_REPOSITORY_NAME":                      "ours",
				"DOCKER_REGISTRY_DYNAMO_COMPONENTS_REPOSITORY_NAME": "dynamos",
				"BUILDKIT_IMAGE":                                    "ours:1",
				"INTERNAL_IMAGES_BUILDKIT":                          "moby/buildkit:v0.20.2",
			},
			edit: func(o *Options) {
				o.ImageBuilder.RepositoryName = "dynamos"
				o.ImageBuilder.BuildkitImage = "moby/buildkit:v0.20.2"
			},
		},
		"image builder settings": {
			env: map[string]string{
				"DYNAMO_IMAGE_BUILDER_NAMESPACE":     "builds",
				"DYNAMO_IMAGE_BUILD_ENGINE":          "Kaniko",
				"BUILDKIT_URL":                       "unix:///run/buildkit/buildkitd.sock",
				"BUILDKIT_IMAGE":                     "moby/buildkit:v0.20.0",
				"DOCKER_REGISTRY_SERVER":             "nvcr.io/nvidia",
				"DOCKER_REGISTRY_USERNAME":           "$oauthtoken",
				"DOCKER_REGISTRY_SECURE":             "false",
				"DYNAMO_IMAGE_REPOSITORY_NAME":       "team/dynamo_components",
				"ESTARGZ_ENABLED":                    "0",
				"ADD_NAMESPACE_PREFIX_TO_IMAGE_NAME": "TRUE",
				"API_STORE_ENDPOINT":                 "http://dynamo-store.dynamo.svc",
			},
			edit: func(o *Options) {
				o.ImageBuilder = ImageBuilderOptions{
					Namespace:                 "builds",
					Engine:                    ImageBuildEngineKaniko,
					BuildkitURL:               "unix:///run/buildkit/buildkitd.sock",
					BuildkitImage:             "moby/buildkit:v0.20.0",
					DockerRegistryServer:      "nvcr.io/nvidia",
					DockerRegistrySecure:      false,
					RepositoryName:            "team/dynamo_components",
					AddNamespacePrefixToImage: true,
					APIStoreEndpoint:          "http://dynamo-store.dynamo.svc",
				}
			},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			lookup := envOf(tt.env)
			if tt.nilEnv {
				lookup = nil
			}
			got, err := Parse(tt.args, lookup)
			if err != nil {
				t.Fatalf("Parse(%q) returned error: %v", tt.args, err)
			}
			want := defaultOptions()
			tt.edit(&want)
			if diff := cmp.Diff(want, *got); diff != "" {
				t.Errorf("Parse(%q) (-want +got):\n%s", tt.args, diff)
			}
		})
	}
}

func TestParseInvalid(t *testing.T) {
	tests := map[string]struct {
		args []string
		env  map[string]string
		// want are substrings the error must contain, in order.
		want []string
	}{
		"the documented example": {
			args: []string{"--webhook-port=70000"},
			env:  map[string]string{"LOG_LEVEL": "loud"},
			want: []string{`invalid configuration: --webhook-port: must be between 1 and 65535, got 70000; LOG_LEVEL: must be one of debug, info, warn, error or a verbosity number, got "loud"`},
		},
		"webhook certificate lifetimes": {
			args: []string{"--webhook-cert-validity=0s", "--webhook-ca-validity=1h"},
			want: []string{`--webhook-cert-validity: must be greater than 0, got 0s`},
		},
		"webhook CA shorter than two certificate lifetimes": {
			args: []string{"--webhook-cert-validity=1h", "--webhook-ca-validity=2h"},
			want: []string{`--webhook-ca-validity: must be more than twice --webhook-cert-validity (1h0m0s), got 2h0m0s`},
		},
		"CA bundle outside the external cert mode": {
			args: []string{"--webhook-ca-bundle=" + base64.StdEncoding.EncodeToString([]byte(testCAPEM))},
			want: []string{`--webhook-ca-bundle: only used with --webhook-cert-mode=external; in the other modes the CA is injected`},
		},
		"CA bundle not base64": {
			args: []string{"--webhook-cert-mode=external", "--webhook-ca-bundle=" + testCAPEM},
			want: []string{`--webhook-ca-bundle: must be base64-encoded PEM: illegal base64 data`},
		},
		"CA bundle not PEM": {
			args: []string{"--webhook-cert-mode=external", "--webhook-ca-bundle=" + base64.StdEncoding.EncodeToString([]byte("ca"))},
			want: []string{`--webhook-ca-bundle: must be base64-encoded PEM certificates`},
		},
		"topology levels": {
			args: []string{"--topology-domain-labels=rack,Rack=a/b,host=kubernetes.io/hostname,host=x,zone=a b"},
			want: []string{`--topology-domain-labels: "rack" is not domain=node-label`,
				`--topology-domain-labels: domain "Rack" must be lowercase letters, digits and inner dashes`,
				`--topology-domain-labels: domain "host" is given twice`,
				`--topology-domain-labels: label "a b" of domain zone: name part must consist of`},
		},
		"negative webhook drain": {
			args: []string{"--webhook-drain=-1s"},
			want: []string{`--webhook-drain: must not be negative, got -1s`},
		},
		"nats address without port": {
			args: []string{"--natsAddr=nats"},
			want: []string{`--natsAddr: must be a URL with scheme and host (e.g. nats://nats:4222) or host:port, got "nats"`},
		},
		"etcd URL without host": {
			args: []string{"--etcdAddr=http://:2379"},
			want: []string{`--etcdAddr: must be a URL with scheme and host`, `got "http://:2379"`},
		},
		"etcd port out of range": {
			args: []string{"--etcdAddr=etcd:0"},
			want: []string{`--etcdAddr: `, `got "etcd:0"`},
		},
		"nats URL credentials are redacted": {
			args: []string{"--natsAddr=nats://user:secret@:4222"},
			want: []string{`--natsAddr: `, `got "nats://user:xxxxx@:4222"`},
		},
		"nats host with spaces": {
			args: []string{"--natsAddr=my nats:4222"},
			want: []string{`--natsAddr: `},
		},
		"restrict namespace not a label": {
			args: []string{"--restrict-namespace=Team_A"},
			want: []string{`--restrict-namespace: a lowercase RFC 1123 label`, `got "Team_A"`},
		},
		"storage migration namespace-scoped": {
			args: []string{"--restrict-namespace=team-a", "--migrate-storage"},
			want: []string{`--migrate-storage: a namespace-scoped operator (--restrict-namespace) can neither list cluster-wide nor patch CRDs`},
		},
		"namespace lease renew interval too close to the duration": {
			args: []string{"--namespace-lease-renew-interval=14s"},
			want: []string{`--namespace-lease-renew-interval: must be greater than 0 and at most 45% of --namespace-lease-duration (30s), got 14s`},
		},
		"namespace lease durations not positive": {
			args: []string{"--namespace-lease-duration=0s", "--namespace-lease-renew-interval=-1s"},
			want: []string{
				`--namespace-lease-duration: must be a whole number of seconds, at least 1s, got 0s`,
				`--namespace-lease-renew-interval: must be greater than 0`,
			},
		},
		"namespace lease duration in fractions of a second": {
			args: []string{"--namespace-lease-duration=2500ms", "--namespace-lease-renew-interval=1s"},
			want: []string{`--namespace-lease-duration: must be a whole number of seconds, at least 1s, got 2.5s`},
		},
		"leader election renew deadline not below lease duration": {
			args: []string{"--leader-election-renew-deadline=15s"},
			want: []string{`--leader-election-renew-deadline: must be greater than 0 and less than --leader-election-lease-duration (15s), got 15s`},
		},
		"leader election retry period not below renew deadline": {
			args: []string{"--leader-election-retry-period=10s"},
			want: []string{`--leader-election-retry-period: must be greater than 0 and less than --leader-election-renew-deadline (10s)`, `got 10s`},
		},
		"leader election retry period too close to renew deadline for client-go jitter": {
			args: []string{"--leader-election-retry-period=9s"},
			want: []string{`--leader-election-retry-period: `, `1.2x retry jitter, got 9s`},
		},
		"leader election durations not positive": {
			args: []string{"--leader-election-lease-duration=0s", "--leader-election-renew-deadline=0s", "--leader-election-retry-period=0s"},
			want: []string{
				`--leader-election-lease-duration: must be greater than 0, got 0s`,
				`--leader-election-renew-deadline: must be greater than 0`,
				`--leader-election-retry-period: must be greater than 0`,
			},
		},
		"explicit empty leader election id": {
			args: []string{"--leader-election-id="},
			want: []string{`--leader-election-id: `, `got ""`},
		},
		"leader election namespace not a label": {
			args: []string{"--leader-election-namespace=a.b"},
			want: []string{`--leader-election-namespace: must not contain dots, got "a.b"`},
		},
		"bind addresses": {
			args: []string{"--metrics-bind-address=8443", "--health-probe-bind-address=:65536"},
			want: []string{
				`--metrics-bind-address: must be host:port with a port between 0 and 65535, or "0" to disable, got "8443"`,
				`--health-probe-bind-address: must be host:port`, `got ":65536"`,
			},
		},
		"empty bind address": {
			args: []string{"--health-probe-bind-address="},
			want: []string{`--health-probe-bind-address: `, `got ""`},
		},
		"signed port": {
			args: []string{"--metrics-bind-address=:+80"},
			want: []string{`--metrics-bind-address: `},
		},
		"webhook settings": {
			args: []string{
				"--webhook-port=0",
				"--webhook-cert-mode=manual",
				"--webhook-cert-dir=",
				"--webhook-cert-secret=Bad_Secret",
				"--webhook-service-name=1webhook",
				"--webhook-url-host=https://localhost:9443",
			},
			want: []string{
				`--webhook-port: must be between 1 and 65535, got 0`,
				`--webhook-cert-mode: must be one of auto, cert-manager, external, got "manual"`,
				`--webhook-cert-dir: must be non-empty`,
				`--webhook-cert-secret: a lowercase RFC 1123 subdomain`, `got "Bad_Secret"`,
				`--webhook-service-name: a DNS-1035 label`, `got "1webhook"`,
				`--webhook-url-host: must be a hostname or IP address without scheme or port, got "https://localhost:9443"`,
			},
		},
		"operator version empty": {
			args: []string{"--operator-version= "},
			want: []string{`--operator-version: must be non-empty`},
		},
		"operator version too long": {
			args: []string{"--operator-version=" + strings.Repeat("v", 129)},
			want: []string{`--operator-version: must be at most 128 characters, got 129`},
		},
		"tuning out of range": {
			args: []string{"--max-concurrent-reconciles=0", "--kube-api-qps=-1", "--kube-api-burst=-1"},
			want: []string{
				`--max-concurrent-reconciles: must be at least 1, got 0`,
				`--kube-api-qps: must be 0 (automatic) or a finite number greater than 0, got -1`,
				`--kube-api-burst: must be 0 (twice the QPS) or at least 1, got -1`,
			},
		},
		"qps not finite": {
			args: []string{"--kube-api-qps=+Inf"},
			want: []string{`--kube-api-qps: must be 0 (automatic) or a finite number greater than 0, got +Inf`},
		},
		"qps not a number": {
			args: []string{"--kube-api-qps=NaN"},
			want: []string{`--kube-api-qps: must be 0 (automatic) or a finite number greater than 0, got NaN`},
		},
		"qps beyond float32": {
			args: []string{"--kube-api-qps=1e39"},
			want: []string{`--kube-api-qps: must be 0 (automatic) or a finite number greater than 0, got 1e+39`},
		},
		"log verbosity out of range": {
			env:  map[string]string{"LOG_LEVEL": "-1"},
			want: []string{`LOG_LEVEL: verbosity must be between 0 and 127, got "-1"`},
		},
		"eStargz needs BuildKit": {
			env:  map[string]string{"DYNAMO_IMAGE_BUILD_ENGINE": "kaniko", "ESTARGZ_ENABLED": "true"},
			want: []string{`ESTARGZ_ENABLED: needs DYNAMO_IMAGE_BUILD_ENGINE=buildkit (kaniko cannot build eStargz images)`},
		},
		"namespaces from env": {
			env: map[string]string{
				"DYNAMO_SYSTEM_NAMESPACE":        "Dynamo",
				"POD_NAMESPACE":                  "-ops",
				"DYNAMO_IMAGE_BUILDER_NAMESPACE": strings.Repeat("b", 64),
			},
			want: []string{
				`DYNAMO_SYSTEM_NAMESPACE: a lowercase RFC 1123 label`, `got "Dynamo"`,
				`POD_NAMESPACE: a lowercase RFC 1123 label`, `got "-ops"`,
				`DYNAMO_IMAGE_BUILDER_NAMESPACE: must be no more than 63 characters`,
			},
		},
		"image builder settings": {
			env: map[string]string{
				"DYNAMO_IMAGE_BUILD_ENGINE":          "docker",
				"BUILDKIT_URL":                       "buildkitd:1234",
				"DOCKER_REGISTRY_SECURE":             "yes",
				"DYNAMO_IMAGE_REPOSITORY_NAME":       "Dynamo Components",
				"ESTARGZ_ENABLED":                    "on",
				"ADD_NAMESPACE_PREFIX_TO_IMAGE_NAME": "maybe",
				"API_STORE_ENDPOINT":                 "dynamo-store:80",
			},
			want: []string{
				`DYNAMO_IMAGE_BUILD_ENGINE: must be one of buildkit, kaniko, got "docker"`,
				`BUILDKIT_URL: must be a URL with a scheme (e.g. tcp://buildkitd:1234), got "buildkitd:1234"`,
				`DOCKER_REGISTRY_SECURE: must be true or false, got "yes"`,
				`DYNAMO_IMAGE_REPOSITORY_NAME: must be a lowercase image repository path`, `got "Dynamo Components"`,
				`ESTARGZ_ENABLED: must be true or false, got "on"`,
				`ADD_NAMESPACE_PREFIX_TO_IMAGE_NAME: must be true or false, got "maybe"`,
				`API_STORE_ENDPOINT: must be an http or https URL with a host, got "dynamo-store:80"`,
			},
		},
		"newlines in values stay on one line": {
			args: []string{"--restrict-namespace=a\nb"},
			env:  map[string]string{"LOG_LEVEL": "x\ny"},
			want: []string{`--restrict-namespace: `, `got "a\nb"`, `LOG_LEVEL: `, `got "x\ny"`},
		},
		"unknown flag": {
			args: []string{"--bogus"},
			want: []string{`invalid configuration: flag provided but not defined: -bogus`},
		},
		"unparsable flag value": {
			args: []string{"--webhook-port=abc"},
			want: []string{`invalid configuration: invalid value "abc" for flag -webhook-port`},
		},
		"flag without value": {
			args: []string{"--natsAddr"},
			want: []string{`invalid configuration: flag needs an argument: -natsAddr`},
		},
		"positional argument": {
			args: []string{"--leader-elect", "start"},
			want: []string{`invalid configuration: unexpected argument "start"`},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := Parse(tt.args, envOf(tt.env))
			if err == nil {
				t.Fatalf("Parse(%q) = %+v, want error", tt.args, got)
			}
			if got != nil {
				t.Errorf("Parse(%q) returned options alongside error", tt.args)
			}
			msg := err.Error()
			if strings.ContainsAny(msg, "\r\n") {
				t.Errorf("error spans several lines: %q", msg)
			}
			if !strings.HasPrefix(msg, "invalid configuration: ") {
				t.Errorf("error %q lacks the invalid configuration prefix", msg)
			}
			rest := msg
			for _, w := range tt.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("error %q\ndoes not contain (in order) %q", msg, w)
				}
				rest = rest[i+len(w):]
			}
		})
	}
}

func TestParseReportsEveryProblem(t *testing.T) {
	_, err := Parse([]string{
		"--natsAddr=bad", "--webhook-port=0", "--max-concurrent-reconciles=0",
	}, envOf(map[string]string{"LOG_LEVEL": "loud", "ESTARGZ_ENABLED": "x"}))
	if err == nil {
		t.Fatal("Parse succeeded, want error")
	}
	msg := err.Error()
	for _, name := range []string{"--natsAddr", "--webhook-port", "--max-concurrent-reconciles", "LOG_LEVEL", "ESTARGZ_ENABLED"} {
		if !strings.Contains(msg, name+": ") {
			t.Errorf("error %q does not name %s", msg, name)
		}
	}
	if n := strings.Count(msg, "; "); n != 4 {
		t.Errorf("error %q has %d separators, want 4", msg, n)
	}
}

func TestParseHelp(t *testing.T) {
	for _, arg := range []string{"-h", "--help", "-help"} {
		t.Run(arg, func(t *testing.T) {
			_, err := Parse([]string{arg}, nil)
			if !errors.Is(err, flag.ErrHelp) {
				t.Errorf("Parse(%q) error = %v, want flag.ErrHelp", arg, err)
			}
		})
	}
}

func TestOperatorVersionDefaultsToVersion(t *testing.T) {
	old := Version
	t.Cleanup(func() { Version = old })
	Version = "v9.9.9-test"
	o, err := Parse(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if o.OperatorVersion != "v9.9.9-test" {
		t.Errorf("OperatorVersion = %q, want the linked Version", o.OperatorVersion)
	}
}

func TestMode(t *testing.T) {
	tests := []struct {
		restrict string
		want     string
	}{
		{"", ModeClusterWide},
		{"team-a", ModeNamespaceScoped},
	}
	for _, tt := range tests {
		o := &Options{RestrictNamespace: tt.restrict}
		if got := o.Mode(); got != tt.want {
			t.Errorf("Mode() with RestrictNamespace %q = %q, want %q", tt.restrict, got, tt.want)
		}
	}
}

func TestZapLevel(t *testing.T) {
	tests := []struct {
		logLevel string
		want     zapcore.Level
	}{
		{"debug", zapcore.DebugLevel},
		{"info", zapcore.InfoLevel},
		{"warn", zapcore.WarnLevel},
		{"error", zapcore.ErrorLevel},
		{"0", zapcore.InfoLevel},
		{"1", zapcore.DebugLevel},
		{"5", zapcore.Level(-5)},
		{"127", zapcore.Level(-127)},
		{"", zapcore.InfoLevel},
	}
	for _, tt := range tests {
		o := &Options{LogLevel: tt.logLevel}
		if got := o.ZapLevel(); got != tt.want {
			t.Errorf("ZapLevel() with LogLevel %q = %v, want %v", tt.logLevel, got, tt.want)
		}
	}
}

func TestWebhookURL(t *testing.T) {
	tests := []struct {
		host string
		port int
		want string
	}{
		{"", 9443, ""},
		{"localhost", 9443, "https://localhost:9443"},
		{"::1", 8443, "https://[::1]:8443"},
	}
	for _, tt := range tests {
		w := WebhookOptions{URLHost: tt.host, Port: tt.port}
		if got := w.URL(); got != tt.want {
			t.Errorf("URL() with host %q port %d = %q, want %q", tt.host, tt.port, got, tt.want)
		}
	}
}

func TestUsageListsEverything(t *testing.T) {
	var buf bytes.Buffer
	Usage(&buf)
	out := buf.String()
	for _, name := range []string{
		"-natsAddr", "-etcdAddr", "-restrict-namespace", "-namespace-lease-duration",
		"-namespace-lease-renew-interval", "-leader-elect", "-leader-election-id",
		"-leader-election-namespace", "-leader-election-lease-duration",
		"-leader-election-renew-deadline", "-leader-election-retry-period",
		"-metrics-bind-address", "-metrics-secure", "-health-probe-bind-address", "-pprof-bind-address",
		"-webhook-port", "-enable-webhooks", "-webhook-cert-mode", "-webhook-cert-dir",
		"-webhook-cert-secret", "-webhook-service-name", "-webhook-url-host", "-webhook-inject-crds", "-webhook-ca-bundle",
		"-operator-version", "-max-concurrent-reconciles", "-kube-api-qps", "-kube-api-burst", "-migrate-storage",
		"LOG_LEVEL", "DYNAMO_SYSTEM_NAMESPACE", "POD_NAMESPACE", "DYNAMO_IMAGE_BUILDER_NAMESPACE",
		"DYNAMO_IMAGE_BUILD_ENGINE", "BUILDKIT_URL", "BUILDKIT_IMAGE", "DOCKER_REGISTRY_SERVER",
		"DOCKER_REGISTRY_USERNAME", "DOCKER_REGISTRY_SECURE", "DYNAMO_IMAGE_REPOSITORY_NAME",
		"ESTARGZ_ENABLED", "ADD_NAMESPACE_PREFIX_TO_IMAGE_NAME", "API_STORE_ENDPOINT",
		"DOCKER_REGISTRY_DYNAMO_COMPONENTS_REPOSITORY_NAME", "INTERNAL_IMAGES_BUILDKIT",
	} {
		if !strings.Contains(out, name) {
			t.Errorf("Usage does not mention %s", name)
		}
	}
}
