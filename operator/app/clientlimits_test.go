package app_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/dynamoctl/dynamo-operator/operator/app"
)

// A real kube-apiserver runs API Priority and Fairness by default: the
// automatic limits turn client-side rate limiting off; flags still win.
func TestClientLimitsOffUnderPriorityAndFairness(t *testing.T) {
	ctx := context.Background()
	cfg, why := app.ClientLimits(ctx, env.Config, 0, 0)
	if cfg.QPS >= 0 {
		t.Errorf("automatic limits against a server with APF: QPS %v (%s), want negative (client-go: no limit)", cfg.QPS, why)
	}
	cfg, _ = app.ClientLimits(ctx, env.Config, 7, 9)
	if cfg.QPS != 7 || cfg.Burst != 9 {
		t.Errorf("explicit limits: QPS %v burst %d, want 7 and 9", cfg.QPS, cfg.Burst)
	}
}

// Without APF's response headers, or when the server cannot be asked, the
// fallback limits apply.
func TestClientLimitsFallBackWithoutPriorityAndFairness(t *testing.T) {
	ctx := context.Background()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusNotFound)
	}))
	defer srv.Close()
	for name, host := range map[string]string{"no APF": srv.URL, "unreachable": "http://127.0.0.1:1"} {
		cfg, why := app.ClientLimits(ctx, &rest.Config{Host: host}, 0, 0)
		if cfg.QPS != app.FallbackQPS || cfg.Burst != app.FallbackBurst {
			t.Errorf("%s: QPS %v burst %d (%s), want the fallback %d and %d", name, cfg.QPS, cfg.Burst, why,
				app.FallbackQPS, app.FallbackBurst)
		}
	}
}
