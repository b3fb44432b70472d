package webhooks

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// Webhook metrics, served on the operator's /metrics with the controllers'.
var (
	webhookDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "dynamo_operator_webhook_duration_seconds",
		Help: "Time the operator's admission webhooks take to answer, by resource_type (DynamoGraphDeployment, " +
			"DynamoComponentDeployment, DynamoModel, DynamoComponent) and operation (CREATE, UPDATE).",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14), // 0.5ms .. ~4s
	}, []string{"resource_type", "operation"})
	webhookRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "dynamo_operator_webhook_requests_total",
		Help: "Admission requests answered, by resource_type (DynamoGraphDeployment, DynamoComponentDeployment, " +
			"DynamoModel, DynamoComponent), operation (CREATE, UPDATE) and result (allowed, denied).",
	}, []string{"resource_type", "operation", "result"})
	webhookDenials = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "dynamo_operator_webhook_denials_total",
		Help: "Denied admission requests by resource_type, operation (CREATE, UPDATE) and reason: the rule that " +
			"failed, e.g. immutable_field_changed, resource_invalid, child_name_invalid (each rule once per request; " +
			"other for a request that could not be decoded).",
	}, []string{"resource_type", "operation", "reason"})
)

func init() {
	metrics.Registry.MustRegister(webhookDuration, webhookRequests, webhookDenials)
}

// instrumented measures a handler and counts its answers. The validator
// reports the rules that failed through the request's context (reasons),
// since the response only carries messages.
type instrumented struct {
	resource string
	next     admission.Handler
}

func (h instrumented) Handle(ctx context.Context, req admission.Request) admission.Response {
	start := time.Now()
	r := &reasons{}
	resp := h.next.Handle(context.WithValue(ctx, reasonsKey{}, r), req)
	op := string(req.Operation)
	webhookDuration.WithLabelValues(h.resource, op).Observe(time.Since(start).Seconds())
	result := "allowed"
	if !resp.Allowed {
		result = "denied"
		names := r.names()
		if len(names) == 0 {
			names = []string{"other"} // a request that could not be decoded
		}
		for _, reason := range names {
			webhookDenials.WithLabelValues(h.resource, op, reason).Inc()
		}
	}
	webhookRequests.WithLabelValues(h.resource, op, result).Inc()
	return resp
}

type reasonsKey struct{}

// reasons collects the distinct rules a request broke.
type reasons struct {
	mu  sync.Mutex
	set map[string]bool
}

func (r *reasons) names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.set))
	for n := range r.set {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// recordReasons notes the rules (errors' Origin) of errs for the metrics.
func recordReasons(ctx context.Context, errs field.ErrorList) {
	r, ok := ctx.Value(reasonsKey{}).(*reasons)
	if !ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.set == nil {
		r.set = map[string]bool{}
	}
	for _, e := range errs {
		origin := e.Origin
		if origin == "" {
			origin = "other"
		}
		r.set[origin] = true
	}
}
