package rules

import (
	"encoding/json"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dynamoctl/dynamo-operator/internal/builders"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

// applyDefaults applies GraphDefaults' patch to dgd's JSON, as the API
// server does, and returns the result.
func applyDefaults(t *testing.T, dgd *v1alpha1.DynamoGraphDeployment, create bool) *v1alpha1.DynamoGraphDeployment {
	t.Helper()
	raw, err := json.Marshal(dgd)
	if err != nil {
		t.Fatal(err)
	}
	ops := GraphDefaults(dgd, create, "1.2.3")
	if len(ops) == 0 {
		return dgd
	}
	patchJSON, err := json.Marshal(ops)
	if err != nil {
		t.Fatal(err)
	}
	patch, err := jsonpatch.DecodePatch(patchJSON)
	if err != nil {
		t.Fatal(err)
	}
	out, err := patch.Apply(raw)
	if err != nil {
		t.Fatalf("applying %s: %v", patchJSON, err)
	}
	got := &v1alpha1.DynamoGraphDeployment{}
	if err := json.Unmarshal(out, got); err != nil {
		t.Fatal(err)
	}
	return got
}

func TestGraphDefaults(t *testing.T) {
	dgd := builders.MakeGraph("llm", "ns").
		Service("Frontend", builders.MakeEmptyService()).
		Service("a/b~c", builders.MakeEmptyService()).
		Service("Worker", builders.MakeEmptyService().Replicas(0)).
		Obj()
	got := applyDefaults(t, dgd, true)
	for name, want := range map[string]int32{"Frontend": 1, "a/b~c": 1, "Worker": 0} {
		if r := got.Spec.Services[name].Replicas; r == nil || *r != want {
			t.Errorf("services.%s.replicas = %v, want %d", name, r, want)
		}
	}
	if v := got.Annotations[OriginVersionAnnotation]; v != "1.2.3" {
		t.Errorf("origin version = %q", v)
	}

	// Existing annotations are kept, and so is an origin version already set.
	dgd.Annotations = map[string]string{"keep": "me", OriginVersionAnnotation: "0.9.0"}
	got = applyDefaults(t, dgd, true)
	if got.Annotations["keep"] != "me" || got.Annotations[OriginVersionAnnotation] != "0.9.0" {
		t.Errorf("annotations = %v", got.Annotations)
	}
	dgd.Annotations = map[string]string{"keep": "me"}
	if got = applyDefaults(t, dgd, true); got.Annotations[OriginVersionAnnotation] != "1.2.3" || got.Annotations["keep"] != "me" {
		t.Errorf("annotations = %v", got.Annotations)
	}

	// Updates default replicas of services added later, never the annotation.
	upd := builders.MakeGraph("llm", "ns").Service("New", builders.MakeEmptyService()).Obj()
	upd.ObjectMeta = metav1.ObjectMeta{Name: "llm"}
	got = applyDefaults(t, upd, false)
	if _, set := got.Annotations[OriginVersionAnnotation]; set || got.Spec.Services["New"].Replicas == nil {
		t.Errorf("update defaults: annotations %v, replicas %v", got.Annotations, got.Spec.Services["New"].Replicas)
	}

	// A defaulted graph needs nothing more: the webhook then sends no patch.
	if ops := GraphDefaults(applyDefaults(t, builders.MakeGraph("x", "ns").Service("A", builders.MakeEmptyService()).Obj(), true), true, "1.2.3"); len(ops) != 0 {
		t.Errorf("second pass patches %v", ops)
	}
}
