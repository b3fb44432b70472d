package webhooks

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/webhooks/rules"
)

func TestMetricsCountAnswersAndDenialReasons(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	const kind = "MetricsTestGraph" // a label value no other test uses
	h := instrumented{resource: kind, next: admission.WithValidator(scheme, &validator[*v1alpha1.DynamoGraphDeployment]{
		create: rules.ValidateGraph, update: rules.ValidateGraphUpdate,
	}).Handler}
	req := func(op admissionv1.Operation, obj, old string) admission.Request {
		r := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
			Operation: op, Object: runtime.RawExtension{Raw: []byte(obj)},
		}}
		if old != "" {
			r.OldObject = runtime.RawExtension{Raw: []byte(old)}
		}
		return r
	}
	const head = `{"apiVersion":"nvidia.com/v1alpha1","kind":"DynamoGraphDeployment","metadata":{"name":"llm"},`
	good := head + `"spec":{"backendFramework":"vllm","services":{"W":{}}}}`
	bad := head + `"spec":{"services":{"my_worker":{},"W":{"envFromSecret":"A_B","resources":{"limits":{"gpu":"x","cpu":"y"}}}}}}`
	changed := head + `"spec":{"backendFramework":"sglang","services":{"W":{}}}}`

	if resp := h.Handle(context.Background(), req(admissionv1.Create, good, "")); !resp.Allowed {
		t.Fatalf("good graph denied: %v", resp.Result)
	}
	if resp := h.Handle(context.Background(), req(admissionv1.Create, bad, "")); resp.Allowed {
		t.Fatal("bad graph allowed")
	}
	if resp := h.Handle(context.Background(), req(admissionv1.Update, changed, good)); resp.Allowed {
		t.Fatal("immutable change allowed")
	}

	for _, c := range []struct {
		labels []string
		want   float64
	}{
		{[]string{kind, "CREATE", "allowed"}, 1},
		{[]string{kind, "CREATE", "denied"}, 1},
		{[]string{kind, "UPDATE", "denied"}, 1},
	} {
		if got := testutil.ToFloat64(webhookRequests.WithLabelValues(c.labels...)); got != c.want {
			t.Errorf("webhook_requests_total%v = %v, want %v", c.labels, got, c.want)
		}
	}
	// Each broken rule counts once per request, however many fields break it.
	for _, c := range []struct {
		labels []string
		want   float64
	}{
		{[]string{kind, "CREATE", rules.ReasonChildName}, 1},
		{[]string{kind, "CREATE", rules.ReasonReference}, 1},
		{[]string{kind, "CREATE", rules.ReasonResources}, 1},
		{[]string{kind, "UPDATE", rules.ReasonImmutable}, 1},
		{[]string{kind, "CREATE", rules.ReasonImmutable}, 0},
	} {
		if got := testutil.ToFloat64(webhookDenials.WithLabelValues(c.labels...)); got != c.want {
			t.Errorf("webhook_denials_total%v = %v, want %v", c.labels, got, c.want)
		}
	}
	if n := testutil.CollectAndCount(webhookDuration, "dynamo_operator_webhook_duration_seconds"); n < 2 {
		t.Errorf("%d duration series", n)
	}
}
