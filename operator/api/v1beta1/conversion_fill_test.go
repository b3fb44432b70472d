package v1beta1

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/randfill"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

// quantities are what a random quantity is drawn from: valid, in the forms
// users write (the API server stores a quantity as written, Go decodes it
// to the same value).
var quantities = []string{"0", "1", "2", "8", "500m", "1.5", "100Mi", "2Gi", "10G", "3e3"}

// shortValues are what a random field of the short resource form is drawn
// from: quantities, GPU counts, and a value that does not parse.
var shortValues = []string{"", "1", "2", "0", "500m", "1.5", "2Gi", "1k", "nonsense"}

// names are what random names are drawn from, so that parts of an object
// refer to each other (containers, claims, GPU types) often enough.
var names = []string{"main", "frontend-sidecar", "metrics", "cache", "nvidia.com/gpu", "amd.com/gpu",
	"cpu", "memory", "prefill", "decode", "worker", "frontend", "x"}

// filler returns a filler of objects the API server could hold: valid
// quantities, times in seconds, JSON values that are JSON, unique
// component names, no annotation the conversion owns, and graphs of a size
// a test can hold thousands of.
func filler(r *rand.Rand) *randfill.Filler {
	return randfill.New().RandSource(r).NilChance(0.4).NumElements(0, 3).MaxDepth(14).Funcs(fillFuncs()...)
}

func fillerFromFuzz(data []byte) *randfill.Filler {
	return randfill.NewFromGoFuzz(data).NilChance(0.4).NumElements(0, 3).MaxDepth(14).Funcs(fillFuncs()...)
}

func pick[T any](c randfill.Continue, from []T) T { return from[c.Intn(len(from))] }

func fillFuncs() []any {
	return []any{
		func(q *resource.Quantity, c randfill.Continue) { *q = resource.MustParse(pick(c, quantities)) },
		func(t *metav1.Time, c randfill.Continue) {
			*t = metav1.NewTime(time.Unix(c.Int63n(2e9), 0))
		},
		func(v *intstr.IntOrString, c randfill.Continue) {
			if c.Bool() {
				*v = intstr.FromInt32(c.Int31n(65536))
			} else {
				*v = intstr.FromString(pick(c, names))
			}
		},
		func(s *string, c randfill.Continue) { *s = pick(c, names) },
		func(raw *runtime.RawExtension, c randfill.Continue) {
			*raw = runtime.RawExtension{Raw: []byte(fmt.Sprintf(`{"k":%d}`, c.Intn(100)))}
		},
		func(j *apiextensionsv1.JSON, c randfill.Continue) {
			*j = apiextensionsv1.JSON{Raw: []byte(fmt.Sprintf(`{"v":%d}`, c.Intn(100)))}
		},
		func(m *metav1.ObjectMeta, c randfill.Continue) {
			*m = metav1.ObjectMeta{Name: "g", Namespace: "ns", Generation: c.Int63n(5)}
			c.Fill(&m.Labels)
			c.Fill(&m.Annotations)
		},
		func(m *metav1.TypeMeta, c randfill.Continue) {},
		func(i *v1alpha1.ResourceItem, c randfill.Continue) {
			i.CPU, i.Memory, i.GPU = pick(c, shortValues), pick(c, shortValues), pick(c, shortValues)
			i.GPUType = pick(c, []string{"", "nvidia.com/gpu", "amd.com/gpu", "example.com/fpga"})
			if c.Bool() {
				i.Custom = map[string]string{pick(c, names): pick(c, shortValues)}
			}
		},
		func(s *DynamoGraphDeploymentSpec, c randfill.Continue) {
			c.FillNoCustom(s)
			for i := range s.Components {
				// Unique, as the schema's list map requires.
				s.Components[i].ComponentName = fmt.Sprintf("%s%d", pick(c, names), i)
			}
		},
	}
}

// jsonRoundTrip is obj as the API server hands it over: written to JSON and
// read back, which drops what JSON cannot carry (empty versus nil, the
// form of a quantity).
func jsonRoundTrip[T any](t testing.TB, obj *T) *T {
	t.Helper()
	raw, err := json.Marshal(obj)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	out := new(T)
	if err := json.Unmarshal(raw, out); err != nil {
		t.Fatalf("unmarshal %s: %v", raw, err)
	}
	return out
}

// semanticDiff is cmp.Diff (-want +got) of two objects that differ in
// apiequality.Semantic's sense, "" when they do not.
func semanticDiff(want, got any) string {
	if apiequality.Semantic.DeepEqual(want, got) {
		return ""
	}
	return cmp.Diff(want, got)
}

var _ = corev1.Container{}
