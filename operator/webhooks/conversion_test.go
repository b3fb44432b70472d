package webhooks

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1beta1"
)

// review is a ConversionReview of objs to desired, as the API server sends.
func review(t *testing.T, desired string, objs ...string) string {
	t.Helper()
	r := apiextensionsv1.ConversionReview{Request: &apiextensionsv1.ConversionRequest{UID: "1", DesiredAPIVersion: desired}}
	r.APIVersion, r.Kind = "apiextensions.k8s.io/v1", "ConversionReview"
	for _, o := range objs {
		r.Request.Objects = append(r.Request.Objects, runtime.RawExtension{Raw: []byte(o)})
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The handler converts a stored v1alpha1 graph to v1beta1 through the
// kinds' hub and spoke methods.
func TestConversionHandlerConvertsAGraph(t *testing.T) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{v1alpha1.AddToScheme, v1beta1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	obj := `{"apiVersion":"nvidia.com/v1alpha1","kind":"DynamoGraphDeployment","metadata":{"name":"g","namespace":"n"},` +
		`"spec":{"services":{"Frontend":{"componentType":"frontend","replicas":1}}}}`
	got := serve(ConversionHandler(scheme, nil), review(t, "nvidia.com/v1beta1", obj))
	if got == nil || got.Response.Result.Status != "Success" || len(got.Response.ConvertedObjects) != 1 {
		t.Fatalf("want one converted object, got %+v", got)
	}
	dgd := &v1beta1.DynamoGraphDeployment{}
	if err := json.Unmarshal(got.Response.ConvertedObjects[0].Raw, dgd); err != nil {
		t.Fatal(err)
	}
	if dgd.APIVersion != "nvidia.com/v1beta1" || len(dgd.Spec.Components) != 1 || dgd.Spec.Components[0].ComponentName != "Frontend" {
		t.Errorf("converted graph: %+v", dgd)
	}
}

func serve(h http.Handler, body string) *apiextensionsv1.ConversionReview {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, PathConvert, strings.NewReader(body)))
	out := &apiextensionsv1.ConversionReview{}
	if json.Unmarshal(rec.Body.Bytes(), out) != nil {
		return nil
	}
	return out
}

// The metrics count each review once by kind, desired version and result,
// and its objects; a review the handler refuses counts as failed.
func TestConversionMetrics(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	const kind = "MetricsTestConversion" // a label value no other test uses
	obj := `{"apiVersion":"nvidia.com/v1alpha1","kind":"` + kind + `","metadata":{"name":"a"}}`
	succeeding := instrumentedConversion{next: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"response":{"uid":"1","result":{"status":"Success"},"convertedObjects":[]}}`))
	})}
	serve(succeeding, review(t, "nvidia.com/v1beta1", obj, obj))
	// The real handler: this scheme knows no such kind.
	if got := serve(ConversionHandler(scheme, nil), review(t, "nvidia.com/v1beta1", obj)); got == nil || got.Response.Result.Status != "Failure" {
		t.Fatalf("want a Failure answer, got %+v", got)
	}

	for labels, want := range map[[3]string]float64{
		{kind, "nvidia.com/v1beta1", "converted"}: 1,
		{kind, "nvidia.com/v1beta1", "failed"}:    1,
	} {
		if got := testutil.ToFloat64(conversionRequests.WithLabelValues(labels[:]...)); got != want {
			t.Errorf("conversion_requests_total%v = %v, want %v", labels, got, want)
		}
	}
	if got := testutil.ToFloat64(conversionObjects.WithLabelValues(kind, "nvidia.com/v1beta1")); got != 3 {
		t.Errorf("conversion_objects_total = %v, want 3", got)
	}
}
