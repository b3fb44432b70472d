package webhooks

import (
	"context"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/dynamoctl/dynamo-operator/internal/builders"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/webhooks/rules"
)

func TestConfigurationsClusterWideThroughService(t *testing.T) {
	v, m := Configurations(ConfigurationOptions{ServiceNamespace: "dynamo", ServiceName: "dynamo-operator-webhook"})
	if v.Name != "dynamo-operator-validating" || m.Name != "dynamo-operator-mutating" {
		t.Errorf("names %q %q", v.Name, m.Name)
	}
	if len(v.Webhooks) != 4 || len(m.Webhooks) != 2 {
		t.Fatalf("webhooks: %d validating, %d mutating", len(v.Webhooks), len(m.Webhooks))
	}
	kinds := map[string]string{}
	for _, w := range v.Webhooks {
		if w.NamespaceSelector != nil || *w.FailurePolicy != "Fail" || *w.SideEffects != "None" ||
			len(w.AdmissionReviewVersions) != 1 || w.AdmissionReviewVersions[0] != "v1" {
			t.Errorf("webhook %s: %+v", w.Name, w)
		}
		if len(w.Rules) != 1 || len(w.Rules[0].Operations) != 2 {
			t.Errorf("webhook %s rules %+v", w.Name, w.Rules)
		}
		s := w.ClientConfig.Service
		if s == nil || s.Namespace != "dynamo" || s.Name != "dynamo-operator-webhook" || *s.Port != 443 || w.ClientConfig.URL != nil {
			t.Errorf("webhook %s client config %+v", w.Name, w.ClientConfig)
		}
		kinds[w.Rules[0].Resources[0]] = *s.Path
	}
	want := map[string]string{
		"dynamographdeployments":     PathValidateGraph,
		"dynamocomponentdeployments": PathValidateComponentDeployment,
		"dynamomodels":               PathValidateModel,
		"dynamocomponents":           PathValidateComponent,
	}
	for r, p := range want {
		if kinds[r] != p {
			t.Errorf("%s served at %q, want %q", r, kinds[r], p)
		}
	}
}

func TestConfigurationsNamespaceScopedByURL(t *testing.T) {
	v, m := Configurations(ConfigurationOptions{RestrictNamespace: "team-a", URL: "https://127.0.0.1:9443"})
	if v.Name != "dynamo-operator-validating-team-a" || m.Name != "dynamo-operator-mutating-team-a" {
		t.Errorf("names %q %q", v.Name, m.Name)
	}
	for _, w := range append(v.Webhooks[:0:0], v.Webhooks...) {
		if w.NamespaceSelector == nil || w.NamespaceSelector.MatchLabels[NamespaceNameLabel] != "team-a" {
			t.Errorf("webhook %s selector %+v", w.Name, w.NamespaceSelector)
		}
		if w.ClientConfig.URL == nil || *w.ClientConfig.URL != "https://127.0.0.1:9443"+*pathOf(w.Rules[0].Resources[0]) {
			t.Errorf("webhook %s url %v", w.Name, w.ClientConfig.URL)
		}
	}
	if got := *m.Webhooks[0].ClientConfig.URL; got != "https://127.0.0.1:9443"+PathMutateGraph {
		t.Errorf("mutating url %s", got)
	}
}

func pathOf(resource string) *string {
	p := map[string]string{
		"dynamographdeployments":     PathValidateGraph,
		"dynamocomponentdeployments": PathValidateComponentDeployment,
		"dynamomodels":               PathValidateModel,
		"dynamocomponents":           PathValidateComponent,
	}[resource]
	return &p
}

// A cluster-wide operator allows, without judging or defaulting, objects in
// a namespace a namespace-scoped operator owns.
func TestExcludedNamespacesAreNotJudged(t *testing.T) {
	excluded := func(ns string) bool { return ns == "team-a" }
	v := &validator[*v1alpha1.DynamoGraphDeployment]{create: rules.ValidateGraph, update: rules.ValidateGraphUpdate, excluded: excluded}
	bad := builders.MakeGraph("llm", "ns").Service("my_worker", builders.MakeService()).Obj()
	bad.Namespace = "team-a"
	if _, err := v.ValidateCreate(context.Background(), bad); err != nil {
		t.Errorf("excluded namespace judged: %v", err)
	}
	bad.Namespace = "team-b"
	if _, err := v.ValidateCreate(context.Background(), bad); err == nil {
		t.Error("an invalid graph in a namespace the operator owns was allowed")
	}

	scheme := runtime.NewScheme()
	_ = v1alpha1.AddToScheme(scheme)
	d := &graphDefaulter{decoder: admission.NewDecoder(scheme), version: "1.0.0", excluded: excluded}
	req := func(ns string) admission.Request {
		return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
			Operation: admissionv1.Create, Namespace: ns,
			Object: runtime.RawExtension{Raw: []byte(`{"apiVersion":"nvidia.com/v1alpha1","kind":"DynamoGraphDeployment",` +
				`"metadata":{"name":"x"},"spec":{"services":{"A":{}}}}`)},
		}}
	}
	if resp := d.Handle(context.Background(), req("team-a")); !resp.Allowed || len(resp.Patches) != 0 {
		t.Errorf("excluded namespace defaulted: %+v", resp)
	}
	if resp := d.Handle(context.Background(), req("team-b")); !resp.Allowed || len(resp.Patches) != 2 {
		t.Errorf("owned namespace not defaulted: %+v", resp)
	}
}

// Objects being deleted are not judged: finalizers must come off.
func TestDeletingObjectsAreNotJudged(t *testing.T) {
	v := &validator[*v1alpha1.DynamoGraphDeployment]{create: rules.ValidateGraph, update: rules.ValidateGraphUpdate}
	old := builders.MakeGraph("llm", "ns").Service("W", builders.MakeService()).Obj()
	cur := old.DeepCopy()
	cur.Spec.BackendFramework = v1alpha1.BackendFrameworkVLLM
	if _, err := v.ValidateUpdate(context.Background(), old, cur); err == nil {
		t.Fatal("immutable field change allowed")
	}
	cur.DeletionTimestamp = &metav1.Time{}
	if _, err := v.ValidateUpdate(context.Background(), old, cur); err != nil {
		t.Errorf("update of an object being deleted judged: %v", err)
	}
}
