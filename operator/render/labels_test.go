package render

import (
	"regexp"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1beta1"
	"github.com/dynamoctl/dynamo-operator/operator/apply"
)

func TestBaseModelHash(t *testing.T) {
	hex8 := regexp.MustCompile(`^[0-9a-f]{8}$`)
	for _, name := range []string{"Qwen/Qwen3-0.6B", "meta-llama/Llama-3.1-8B-Instruct", "", "a b/c:d@e"} {
		h := BaseModelHash(name)
		if !hex8.MatchString(h) {
			t.Errorf("BaseModelHash(%q) = %q, want 8 lowercase hex characters", name, h)
		}
		if msgs := validation.IsValidLabelValue(h); len(msgs) > 0 {
			t.Errorf("BaseModelHash(%q) = %q is not a label value: %v", name, h, msgs)
		}
		if again := BaseModelHash(name); again != h {
			t.Errorf("BaseModelHash(%q) is not stable: %q then %q", name, h, again)
		}
	}
	// The first 10 hex characters of sha256("Qwen/Qwen3-0.6B").
	if got, want := BaseModelHash("Qwen/Qwen3-0.6B"), "fb68f5a6"; got != want {
		t.Errorf("BaseModelHash(Qwen/Qwen3-0.6B) = %q, want %q", got, want)
	}
	if BaseModelHash("Qwen/Qwen3-0.6B") == BaseModelHash("Qwen/Qwen3-8B") {
		t.Error("different models share a hash")
	}
}

func TestPropagated(t *testing.T) {
	cases := map[string]struct {
		sources []map[string]string
		want    map[string]string
	}{
		"nothing": {want: nil},
		"only excluded keys": {sources: []map[string]string{{
			"kubectl.kubernetes.io/last-applied-configuration": "{}",
			LabelManagedBy:              "someone-else",
			v1beta1.AnnotationBetaSpec:  "{}",
			v1beta1.AnnotationAlphaSpec: "{}",
		}}, want: nil},
		"user keys kept, later source wins, operator and kubectl keys dropped": {
			sources: []map[string]string{
				{"team": "a", "tier": "gold", LabelGraphName: "other", "kubectl.kubernetes.io/restartedAt": "now"},
				{"team": "b", LabelComponent: "x", LabelPVCRetained: "false", "nvidia.com/last-applied-hash": "h"},
			},
			want: map[string]string{"team": "b", "tier": "gold"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, propagated(tc.sources...)); diff != "" {
				t.Errorf("propagated (-want +got):\n%s", diff)
			}
		})
	}
}

func TestInheritedAnnotations(t *testing.T) {
	got := inheritedAnnotations(map[string]string{
		"kubectl.kubernetes.io/last-applied-configuration": "{}",
		"nvidia.com/last-applied-hash":                     "abc",
		AnnotationGraphReplicas:                            "2",
		v1beta1.AnnotationBetaSpec:                         "{}",
		v1beta1.AnnotationBetaStatus:                       "{}",
		"owner":                                            "team-a",
		LabelGraphName:                                     "kept: only the applier's own keys are object-specific",
	})
	want := map[string]string{"owner": "team-a", LabelGraphName: "kept: only the applier's own keys are object-specific"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("inheritedAnnotations (-want +got):\n%s", diff)
	}
	if got := inheritedAnnotations(nil); got != nil {
		t.Errorf("inheritedAnnotations(nil) = %v, want nil", got)
	}
}

// The applier's hash annotation must never travel from a component to its
// workload, or the workload would be rewritten on every reconcile.
func TestHashAnnotationMirrorsApplier(t *testing.T) {
	if lastAppliedHashAnnotation != apply.HashAnnotation {
		t.Fatalf("lastAppliedHashAnnotation = %q, apply.HashAnnotation = %q", lastAppliedHashAnnotation, apply.HashAnnotation)
	}
}

// The frontend sidecar's container has one name in both versions: a
// v1beta1 frontendSidecar naming it gets the sidecar's defaults.
func TestSidecarNameMirrorsConversion(t *testing.T) {
	if SidecarContainerName != v1beta1.FrontendSidecarContainerName {
		t.Fatalf("SidecarContainerName = %q, v1beta1.FrontendSidecarContainerName = %q",
			SidecarContainerName, v1beta1.FrontendSidecarContainerName)
	}
}

func TestMerged(t *testing.T) {
	if got := merged(nil, map[string]string{}); got != nil {
		t.Errorf("merged of empty maps = %v, want nil", got)
	}
	a := map[string]string{"x": "1", "y": "1"}
	got := merged(a, map[string]string{"y": "2"})
	if diff := cmp.Diff(map[string]string{"x": "1", "y": "2"}, got); diff != "" {
		t.Errorf("merged (-want +got):\n%s", diff)
	}
	got["x"] = "changed"
	if a["x"] != "1" {
		t.Error("merged returned a map sharing storage with its input")
	}
}
