package certs

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Results of a pass of the certificate loop (passesTotal).
const (
	passOK    = "ok"
	passError = "error"
)

// passesTotal counts the certificate loop's passes. The loop sleeps until
// its next rotation or a change of what it watches, so the rate is near
// zero in a steady cluster; a rate that stays up means something keeps
// waking it, and errors mean the certificate, a bundle or the Secret
// cannot be written (the log says which).
var passesTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "dynamo_operator_webhook_certificate_passes_total",
	Help: "Passes of the webhook certificate loop (renewal, rotation, CA bundle injection), by result (ok, error). " +
		"Near zero in a steady cluster.",
}, []string{"result"})

func init() {
	metrics.Registry.MustRegister(passesTotal)
}
