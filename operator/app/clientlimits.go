package app

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"k8s.io/client-go/rest"
)

// Client-side limits used when the API server does not run API Priority and
// Fairness, or when asking it fails: client-go's own rate limiter is then
// all that protects the server.
const (
	FallbackQPS   = 50
	FallbackBurst = 100
)

// apfProbeTimeout bounds the one request that asks the server whether it
// runs API Priority and Fairness.
const apfProbeTimeout = 10 * time.Second

// ClientLimits returns cfg with the client-side rate limit the operator
// runs with. Explicit limits (qps > 0) are kept. With automatic limits
// (qps 0, the default) client-side limiting is off when the API server runs
// API Priority and Fairness: APF queues and sheds load per priority level on
// the server, where it can see every client, so a fixed client limit only
// makes the operator slow (13,000 writes at 50 QPS take four minutes) without
// protecting anything. Without APF, or when the probe fails, the fallback
// limits apply. The second result says which was chosen, for the log.
func ClientLimits(ctx context.Context, cfg *rest.Config, qps float32, burst int) (*rest.Config, string) {
	cfg = rest.CopyConfig(cfg)
	if qps > 0 {
		if burst == 0 {
			burst = max(1, int(2*qps))
		}
		cfg.QPS, cfg.Burst = qps, burst
		return cfg, fmt.Sprintf("client-side limit %g QPS, burst %d (flags)", qps, burst)
	}
	apf, err := HasPriorityAndFairness(ctx, cfg)
	switch {
	case err != nil:
		cfg.QPS, cfg.Burst = FallbackQPS, FallbackBurst
		return cfg, fmt.Sprintf("client-side limit %d QPS, burst %d: could not tell whether the API server runs "+
			"API Priority and Fairness: %v", FallbackQPS, FallbackBurst, err)
	case apf:
		// client-go: a negative QPS disables client-side rate limiting.
		cfg.QPS, cfg.Burst = -1, 0
		return cfg, "no client-side limit: the API server runs API Priority and Fairness"
	default:
		cfg.QPS, cfg.Burst = FallbackQPS, FallbackBurst
		return cfg, fmt.Sprintf("client-side limit %d QPS, burst %d: the API server does not run "+
			"API Priority and Fairness", FallbackQPS, FallbackBurst)
	}
}

// HasPriorityAndFairness asks the API server, with one request, whether it
// runs API Priority and Fairness: APF names the flow schema and priority
// level that classified each request in response headers. Serving the
// flowcontrol API group is not proof: the filter can be off while the group
// is served.
func HasPriorityAndFairness(ctx context.Context, cfg *rest.Config) (bool, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = apfProbeTimeout
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return false, err
	}
	ctx, cancel := context.WithTimeout(ctx, apfProbeTimeout)
	defer cancel()
	host, _, err := rest.DefaultServerUrlFor(cfg)
	if err != nil {
		return false, err
	}
	// JoinPath, not concatenation: an in-cluster host URL ends in "/", and
	// "//apis/..." is outside the discovery paths every user may read.
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, host.JoinPath("apis", "flowcontrol.apiserver.k8s.io").String(), nil)
	if err != nil {
		return false, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return false, err
	}
	defer func() { _ = resp.Body.Close() }()
	return resp.Header.Get("X-Kubernetes-PF-PriorityLevel-UID") != "", nil
}
