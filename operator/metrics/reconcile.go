package metrics

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/dynamoctl/dynamo-operator/operator/scope"
)

// Results of a reconcile, the values of the result label.
const (
	ResultSuccess = "success"
	ResultRequeue = "requeue"
	ResultError   = "error"
)

// errorTypes classifies a reconcile's error by the API status it carries,
// first match wins; an error none matches is "other". A new type is one row.
var errorTypes = []struct {
	name  string
	match func(error) bool
}{
	{"conflict", apierrors.IsConflict},
	{"not_found", apierrors.IsNotFound},
	{"already_exists", apierrors.IsAlreadyExists},
	// Unauthorized is the operator's own credentials refused: as actionable
	// as forbidden (fix the RBAC or the token), so counted with it.
	{"forbidden", func(err error) bool { return apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) }},
	{"validation", func(err error) bool { return apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) }},
	{"too_many_requests", apierrors.IsTooManyRequests},
	{"timeout", func(err error) bool {
		return apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) || errors.Is(err, context.DeadlineExceeded)
	}},
	{"internal", func(err error) bool { return apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err) }},
}

// ErrorTypeOther is the error_type of an error that carries no API status
// the table knows.
const ErrorTypeOther = "other"

// ErrorType returns the error_type label value of err.
func ErrorType(err error) string {
	for _, t := range errorTypes {
		if t.match(err) {
			return t.name
		}
	}
	return ErrorTypeOther
}

// ErrorTypes lists every error_type value, for help text and tests.
func ErrorTypes() []string {
	out := make([]string, 0, len(errorTypes)+1)
	for _, t := range errorTypes {
		out = append(out, t.name)
	}
	return append(out, ErrorTypeOther)
}

var (
	reconcileTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "dynamo_operator_reconcile_total",
		Help: "Reconciles finished, by resource_type (DynamoGraphDeployment, DynamoComponentDeployment) and " +
			"result (success; requeue: asked to come back later; error: returned an error and is retried).",
	}, []string{"resource_type", "result"})
	reconcileDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "dynamo_operator_reconcile_duration_seconds",
		Help: "Time a reconcile takes, by resource_type (DynamoGraphDeployment, DynamoComponentDeployment) and " +
			"result (success, requeue, error).",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 14), // 1ms .. ~8s
	}, []string{"resource_type", "result"})
	reconcileErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "dynamo_operator_reconcile_errors_total",
		Help: "Reconciles that returned an error, by resource_type (DynamoGraphDeployment, DynamoComponentDeployment) " +
			"and error_type from the API error (conflict, not_found, already_exists, forbidden, validation, " +
			"too_many_requests, timeout, internal, other).",
	}, []string{"resource_type", "error_type"})
)

func init() {
	ctrlmetrics.Registry.MustRegister(reconcileTotal, reconcileDuration, reconcileErrors, inventories, certExpiry)
}

// Instrument counts and times every reconcile of next as resourceType.
// Errors are counted, not logged: controller-runtime logs a returned error
// once, where it is handled (the retry).
func Instrument(resourceType string, next reconcile.Reconciler) reconcile.Reconciler {
	// Every result and error type starts at 0, so "no errors" reads as a
	// 0 on dashboards and in rate(), not as a missing series.
	for _, r := range []string{ResultSuccess, ResultRequeue, ResultError} {
		reconcileTotal.WithLabelValues(resourceType, r)
	}
	for _, e := range ErrorTypes() {
		reconcileErrors.WithLabelValues(resourceType, e)
	}
	return instrumented{resourceType: resourceType, next: next}
}

type instrumented struct {
	resourceType string
	next         reconcile.Reconciler
}

func (i instrumented) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	start := time.Now()
	res, err := i.next.Reconcile(ctx, req)
	if errors.Is(err, scope.ErrNotOwned) {
		// Dropped because the namespace changed hands mid-way: neither a
		// failure nor a finished reconcile; the new owner does the work.
		return res, err
	}
	Observe(i.resourceType, res, err, time.Since(start))
	return res, err
}

// Observe records one reconcile's outcome.
func Observe(resourceType string, res reconcile.Result, err error, took time.Duration) {
	result := ResultSuccess
	switch {
	case err != nil:
		result = ResultError
		reconcileErrors.WithLabelValues(resourceType, ErrorType(err)).Inc()
	case res.RequeueAfter > 0 || res.Requeue: //nolint:staticcheck // Requeue still honoured by controller-runtime
		result = ResultRequeue
	}
	reconcileTotal.WithLabelValues(resourceType, result).Inc()
	reconcileDuration.WithLabelValues(resourceType, result).Observe(took.Seconds())
}
