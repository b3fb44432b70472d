package metrics_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dynamoctl/dynamo-operator/internal/testenv"
)

// The API server decides who may scrape: a token it authenticates
// (TokenReview) of a subject allowed "get" on /metrics (SubjectAccessReview).
func TestMetricsEndpointRefusesWhatItMust(t *testing.T) {
	r := operator(t)
	ctx := context.Background()
	allowed, err := env.ServiceAccountToken(ctx, metav1.NamespaceDefault, "prometheus", true)
	if err != nil {
		t.Fatal(err)
	}
	denied, err := env.ServiceAccountToken(ctx, metav1.NamespaceDefault, "nosy", false)
	if err != nil {
		t.Fatal(err)
	}
	for name, tt := range map[string]struct {
		token string
		want  int
	}{
		"allowed to get /metrics":              {allowed, http.StatusOK},
		"authenticated, not allowed":           {denied, http.StatusForbidden},
		"no token":                             {"", http.StatusUnauthorized},
		"a token the API server does not know": {"not-a-token", http.StatusUnauthorized},
	} {
		t.Run(name, func(t *testing.T) {
			code, body, err := testenv.Scrape(ctx, r.metricsURL, tt.token)
			if err != nil {
				t.Fatal(err)
			}
			if code != tt.want {
				t.Fatalf("HTTP %d, want %d: %.200s", code, tt.want, body)
			}
			if code == http.StatusOK && !strings.Contains(string(body), "dynamo_operator_") {
				t.Fatalf("200 without the operator's metrics: %.500s", body)
			}
			if code != http.StatusOK && strings.Contains(string(body), "dynamo_operator_") {
				t.Fatalf("HTTP %d but metrics in the body", code)
			}
		})
	}
}

// Over plain HTTP the server does not answer with metrics at all.
func TestMetricsEndpointIsHTTPSOnly(t *testing.T) {
	r := operator(t)
	code, body, err := testenv.Scrape(context.Background(), strings.Replace(r.metricsURL, "https://", "http://", 1), "")
	if err == nil && code == http.StatusOK {
		t.Fatalf("plain HTTP answered 200: %.200s", body)
	}
}
