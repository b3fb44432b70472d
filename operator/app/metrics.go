package app

import (
	"context"
	"crypto/tls"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/dynamoctl/dynamo-operator/operator/config"
	"github.com/dynamoctl/dynamo-operator/operator/metrics"
	"github.com/dynamoctl/dynamo-operator/operator/scope"
)

// metricsServerOptions serves /metrics on --metrics-bind-address. Secure (the
// default), it is HTTPS and lets in only callers whose bearer token the API
// server authenticates (TokenReview) and authorizes for "get" on the
// non-resource URL /metrics (SubjectAccessReview); without a 200 the
// caller gets 401 (no or bad token) or 403 (not allowed). The serving pair
// comes from --metrics-cert-dir (tls.crt, tls.key; reloaded when it
// changes), or is self-signed at start when that is empty: Prometheus
// scrapes with insecureSkipVerify or the CA of that pair.
func metricsServerOptions(o *config.Options, tlsOpts []func(*tls.Config), clk clock.PassiveClock) metricsserver.Options {
	opts := metricsserver.Options{
		BindAddress:   o.MetricsBindAddress,
		SecureServing: o.MetricsSecure,
		TLSOpts:       tlsOpts,
	}
	if !o.MetricsSecure {
		return opts
	}
	opts.FilterProvider = scraperFilter(clk)
	if o.MetricsCertDir != "" {
		opts.CertDir = o.MetricsCertDir
		opts.CertName = corev1.TLSCertKey
		opts.KeyName = corev1.TLSPrivateKeyKey
	}
	return opts
}

// addMetrics adds what the operator's own metrics need beyond the
// controllers' instrumentation: the inventory behind resources_total,
// fed by the controllers' informers and counting only namespaces this
// operator owns now (hybrid mode), and the serving certificate's expiry.
func addMetrics(mgr manager.Manager, o *config.Options, gate *scope.Gate) error {
	inv := metrics.NewInventory(gate.Allowed)
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		return inv.Run(ctx, mgr.GetCache())
	})); err != nil {
		return fmt.Errorf("adding the resource inventory: %w", err)
	}
	if o.Webhook.Enabled {
		metrics.WatchCertificate(o.Webhook.CertDir)
	}
	return nil
}
