package webhooks

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/webhook/conversion"
)

// PathConvert is where the webhook server answers the API server's
// ConversionReviews for the CRDs that convert by webhook (the
// DynamoGraphDeployment and DynamoComponentDeployment CRDs, whose
// spec.conversion operator/crdinstall points here).
const PathConvert = "/convert"

// Conversion metrics. A review carries the objects of one kind, all to one
// apiVersion; the API server sends one for every read, write or watch event
// in a version other than the stored v1alpha1.
var (
	conversionDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "dynamo_operator_conversion_duration_seconds",
		Help: "Time the operator's conversion webhook takes to answer a ConversionReview, by resource_type " +
			"(DynamoGraphDeployment, DynamoComponentDeployment) and desired_version (nvidia.com/v1alpha1, nvidia.com/v1beta1).",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14), // 0.5ms .. ~4s
	}, []string{"resource_type", "desired_version"})
	conversionRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "dynamo_operator_conversion_requests_total",
		Help: "ConversionReviews answered, by resource_type, desired_version and result (converted, failed).",
	}, []string{"resource_type", "desired_version", "result"})
	conversionObjects = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "dynamo_operator_conversion_objects_total",
		Help: "Objects in the ConversionReviews answered, by resource_type and desired_version.",
	}, []string{"resource_type", "desired_version"})
)

func init() {
	metrics.Registry.MustRegister(conversionDuration, conversionRequests, conversionObjects)
}

// ConversionHandler is the CRD conversion webhook for scheme's convertible
// kinds (controller-runtime's, through the Hub and Convertible methods of
// operator/api), measured. registry may be nil: the kinds convert through
// their own methods, not through registered converters.
func ConversionHandler(scheme *runtime.Scheme, registry conversion.Registry) http.Handler {
	if registry == nil {
		registry = conversion.NewRegistry()
	}
	return instrumentedConversion{next: conversion.NewWebhookHandler(scheme, registry)}
}

// instrumentedConversion reads what a review asks (the kind, the desired
// version, how many objects) before the handler does, and the result from
// its answer.
type instrumentedConversion struct{ next http.Handler }

// reviewSummary is the part of a ConversionReview the metrics need; the
// objects' other fields are skipped unparsed.
type reviewSummary struct {
	Request *struct {
		DesiredAPIVersion string `json:"desiredAPIVersion"`
		Objects           []struct {
			Kind string `json:"kind"`
		} `json:"objects"`
	} `json:"request"`
	Response *struct {
		Result struct {
			Status string `json:"status"`
		} `json:"result"`
	} `json:"response"`
}

func (h instrumentedConversion) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	var in reviewSummary
	_ = json.Unmarshal(body, &in) // an unreadable review is the handler's to answer
	rec := &recordingWriter{ResponseWriter: w}
	h.next.ServeHTTP(rec, r)

	kind, version := "unknown", "unknown"
	if in.Request != nil {
		version = in.Request.DesiredAPIVersion
		if len(in.Request.Objects) > 0 {
			kind = in.Request.Objects[0].Kind
		}
		conversionObjects.WithLabelValues(kind, version).Add(float64(len(in.Request.Objects)))
	}
	var out reviewSummary
	result := "failed"
	if json.Unmarshal(rec.body.Bytes(), &out) == nil && out.Response != nil && out.Response.Result.Status == "Success" {
		result = "converted"
	}
	conversionDuration.WithLabelValues(kind, version).Observe(time.Since(start).Seconds())
	conversionRequests.WithLabelValues(kind, version, result).Inc()
}

// recordingWriter passes the answer on and keeps a copy of its body.
type recordingWriter struct {
	http.ResponseWriter
	body bytes.Buffer
}

func (w *recordingWriter) Write(p []byte) (int, error) {
	w.body.Write(p)
	return w.ResponseWriter.Write(p)
}
