package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/dynamoctl/dynamo-operator/internal/testenv"
	"github.com/dynamoctl/dynamo-operator/operator/config"
)

func envOf(vars map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	}
}

// Bad configuration must fail before anything contacts a cluster, so these
// cases need no API server.
func TestRunRejectsBadConfiguration(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
		// names must all appear in the error line.
		names []string
	}{
		{name: "out of range port", args: []string{"--webhook-port=70000"}, names: []string{"--webhook-port"}},
		{name: "unknown flag", args: []string{"--bogus=1"}, names: []string{"-bogus"}},
		{name: "unparsable value", args: []string{"--kube-api-burst=lots"}, names: []string{"-kube-api-burst"}},
		{
			name:  "several problems",
			args:  []string{"--restrict-namespace=Team_A", "--leader-election-retry-period=1m"},
			env:   map[string]string{"LOG_LEVEL": "loud"},
			names: []string{"--restrict-namespace", "--leader-election-retry-period", "LOG_LEVEL"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			if code := run(tt.args, envOf(tt.env), &stderr); code != exitInvalidArgs {
				t.Errorf("run(%q) = %d, want %d", tt.args, code, exitInvalidArgs)
			}
			out := stderr.String()
			if !strings.HasSuffix(out, "\n") || strings.Count(out, "\n") != 1 {
				t.Fatalf("stderr is not exactly one line: %q", out)
			}
			if !strings.HasPrefix(out, "dynamo-operator: invalid configuration: ") {
				t.Errorf("stderr %q lacks the dynamo-operator: invalid configuration: prefix", out)
			}
			for _, name := range tt.names {
				if !strings.Contains(out, name) {
					t.Errorf("stderr %q does not name %s", out, name)
				}
			}
		})
	}
}

func TestRunHelp(t *testing.T) {
	var stderr bytes.Buffer
	if code := run([]string{"--help"}, envOf(nil), &stderr); code != exitOK {
		t.Errorf("run(--help) = %d, want %d", code, exitOK)
	}
	if !strings.Contains(stderr.String(), "Usage: dynamo-operator") {
		t.Errorf("run(--help) printed %q, want usage", stderr.String())
	}
}

// manager.New only prepares clients, so pointing it at an address nobody
// listens on checks the wiring without a cluster.
var env *testenv.Env

// TestMain starts an API server: registering controllers needs discovery.
func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, func(e *testenv.Env) { env = e }))
}

func TestManagerOptions(t *testing.T) {
	base := &rest.Config{Host: "https://127.0.0.1:1"}
	tests := []struct {
		name string
		args []string
		// wantWebhookPort is 0 when no custom webhook server should be set.
		wantWebhookPort int
		wantNamespace   string
	}{
		{
			name:            "cluster-wide with webhooks",
			args:            []string{"--metrics-bind-address=0", "--health-probe-bind-address=0", "--webhook-port=10250"},
			wantWebhookPort: 10250,
		},
		{
			name: "namespace-scoped with leader election and insecure metrics",
			args: []string{
				"--metrics-bind-address=0", "--metrics-secure=false", "--health-probe-bind-address=0",
				"--restrict-namespace=team-a", "--leader-elect", "--enable-webhooks=false",
			},
			wantNamespace: "team-a",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := config.Parse(tt.args, envOf(nil))
			if err != nil {
				t.Fatal(err)
			}
			cfg, opts, err := managerOptions(base, o)
			if err != nil {
				t.Fatalf("managerOptions: %v", err)
			}
			if cfg.QPS != o.KubeAPIQPS || cfg.Burst != o.KubeAPIBurst {
				t.Errorf("QPS/Burst = %v/%v, want %v/%v", cfg.QPS, cfg.Burst, o.KubeAPIQPS, o.KubeAPIBurst)
			}
			if base.QPS != 0 {
				t.Errorf("managerOptions modified the caller's rest.Config")
			}
			if opts.LeaderElection != o.LeaderElection.Enabled || opts.LeaderElectionID != o.LeaderElection.ID {
				t.Errorf("leader election %v %q", opts.LeaderElection, opts.LeaderElectionID)
			}
			if _, scoped := opts.Cache.DefaultNamespaces[tt.wantNamespace]; (tt.wantNamespace != "") != scoped {
				t.Errorf("cache namespaces = %v, want %q", opts.Cache.DefaultNamespaces, tt.wantNamespace)
			}
			if tt.wantWebhookPort != 0 {
				srv, ok := opts.WebhookServer.(*webhook.DefaultServer)
				if !ok || srv.Options.Port != tt.wantWebhookPort || srv.Options.CertDir != o.Webhook.CertDir {
					t.Errorf("webhook server = %#v, want port %d and cert dir %s",
						opts.WebhookServer, tt.wantWebhookPort, o.Webhook.CertDir)
				}
			} else if opts.WebhookServer != nil {
				t.Errorf("no webhook server expected with --enable-webhooks=false")
			}
		})
	}
}

// newManager registers the controllers against a real API server.
func TestNewManagerRegistersControllers(t *testing.T) {
	o, err := config.Parse([]string{"--metrics-bind-address=0", "--health-probe-bind-address=0"}, envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := newManager(env.Config, o)
	if err != nil {
		t.Fatalf("newManager: %v", err)
	}
	if got := mgr.GetConfig().QPS; got != o.KubeAPIQPS {
		t.Errorf("manager QPS = %v, want %v", got, o.KubeAPIQPS)
	}
}
