package app_test

import (
	"os"
	"strings"
	"testing"

	"go.uber.org/zap/zapcore"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/dynamoctl/dynamo-operator/internal/testenv"
	"github.com/dynamoctl/dynamo-operator/operator/app"
	"github.com/dynamoctl/dynamo-operator/operator/config"
)

var env *testenv.Env

func noEnv(string) (string, bool) { return "", false }

func TestMain(m *testing.M) {
	// Operators killed by tests complain about the API they can no longer
	// reach; only errors are worth reading.
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	// The audit log tells the writes of two operators apart (modes tests).
	os.Exit(testenv.RunWith(m, testenv.Options{Audit: true}, func(e *testenv.Env) { env = e }))
}

func TestManagerOptions(t *testing.T) {
	base := &rest.Config{Host: "https://127.0.0.1:1"}
	tests := map[string]struct {
		args []string
		// wantWebhookPort is 0 when no custom webhook server should be set.
		wantWebhookPort int
		wantNamespace   string
	}{
		"cluster-wide with webhooks": {
			args:            []string{"--metrics-bind-address=0", "--health-probe-bind-address=0", "--webhook-port=10250"},
			wantWebhookPort: 10250,
		},
		"namespace-scoped with leader election and insecure metrics": {
			args: []string{
				"--metrics-bind-address=0", "--metrics-secure=false", "--health-probe-bind-address=0",
				"--restrict-namespace=team-a", "--leader-elect", "--enable-webhooks=false",
			},
			wantNamespace: "team-a",
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			o, err := config.Parse(tt.args, noEnv)
			if err != nil {
				t.Fatal(err)
			}
			cfg, opts, err := app.ManagerOptions(base, o, clock.RealClock{})
			if err != nil {
				t.Fatalf("ManagerOptions: %v", err)
			}
			if cfg.QPS != o.KubeAPIQPS || cfg.Burst != o.KubeAPIBurst {
				t.Errorf("QPS/Burst = %v/%v, want %v/%v", cfg.QPS, cfg.Burst, o.KubeAPIQPS, o.KubeAPIBurst)
			}
			if base.QPS != 0 || base.UserAgent != "" {
				t.Errorf("ManagerOptions modified the caller's rest.Config")
			}
			// Every request names the process: the audit log tells the
			// replicas of one ServiceAccount apart by it.
			host, _ := os.Hostname()
			if id := app.ReplicaIdentity(cfg.UserAgent); !strings.HasPrefix(id, host+"_") || len(id) <= len(host)+1 {
				t.Errorf("user agent %q carries identity %q, want %s_<uuid>", cfg.UserAgent, id, host)
			}
			if opts.LeaderElection {
				if lock := opts.LeaderElectionResourceLockInterface; lock == nil || lock.Identity() != app.ReplicaIdentity(cfg.UserAgent) {
					t.Errorf("the election lock %v does not run as the identity of the user agent %q", lock, cfg.UserAgent)
				}
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

// New registers the controllers against a real API server.
func TestNewRegistersControllers(t *testing.T) {
	o, err := config.Parse([]string{"--metrics-bind-address=0", "--health-probe-bind-address=0"}, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := app.New(env.Config, o, app.Deps{})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	// The default --kube-api-qps 0 is automatic: envtest's kube-apiserver
	// runs API Priority and Fairness, so there is no client-side limit
	// (client-go's QPS < 0).
	if got := mgr.GetConfig().QPS; o.KubeAPIQPS != 0 || got >= 0 {
		t.Errorf("manager QPS = %v with --kube-api-qps %v, want no client-side limit (< 0)", got, o.KubeAPIQPS)
	}
}

func TestReplicaIdentity(t *testing.T) {
	tests := map[string]struct{ userAgent, want string }{
		"a replica's client":               {"dynamo-operator/v0.3.0 (linux/amd64) kubernetes/abc replica/op-7d9f_1b2c", "op-7d9f_1b2c"},
		"its leader election client":       {"dynamo-operator/v0.3.0 (linux/amd64) kubernetes/abc replica/op-7d9f_1b2c/leader-election", "op-7d9f_1b2c"},
		"another client (kubectl, a test)": {"kubectl/v1.36.3 (linux/amd64) kubernetes/abc", ""},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if got := app.ReplicaIdentity(tt.userAgent); got != tt.want {
				t.Errorf("ReplicaIdentity(%q) = %q, want %q", tt.userAgent, got, tt.want)
			}
		})
	}
}
