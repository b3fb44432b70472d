package metrics

import (
	"os"
	"path/filepath"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"

	"github.com/dynamoctl/dynamo-operator/operator/certs"
)

var certExpiryDesc = prometheus.NewDesc("dynamo_operator_webhook_certificate_expiry_timestamp_seconds",
	"notAfter of the webhook serving certificate in the cert dir, as Unix seconds; absent while there is none "+
		"or when webhooks are off.",
	nil, nil)

// certExpiry exports the notAfter of the serving certificate (tls.crt) in
// the cert dir set by WatchCertificate. It reads the file at scrape time, so
// it reports the certificate the webhook server serves from the next
// handshake on, whoever renewed it (this operator, cert-manager, an
// installer).
var certExpiry = &certificateExpiry{}

type certificateExpiry struct {
	mu  sync.Mutex
	dir string
}

// WatchCertificate makes /metrics report the expiry of the serving
// certificate in dir; "" stops it. The registry is process-wide, so the
// last operator set up in a process wins.
func WatchCertificate(dir string) {
	certExpiry.mu.Lock()
	certExpiry.dir = dir
	certExpiry.mu.Unlock()
}

// Describe implements prometheus.Collector.
func (c *certificateExpiry) Describe(ch chan<- *prometheus.Desc) { ch <- certExpiryDesc }

// Collect implements prometheus.Collector.
func (c *certificateExpiry) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	dir := c.dir
	c.mu.Unlock()
	if dir == "" {
		return
	}
	data, err := os.ReadFile(filepath.Join(dir, corev1.TLSCertKey))
	if err != nil {
		return
	}
	chain, err := certs.ParseCertificates(data)
	if err != nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(certExpiryDesc, prometheus.GaugeValue, float64(chain[0].NotAfter.Unix()))
}
