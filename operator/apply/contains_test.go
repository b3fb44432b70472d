package apply

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/utils/ptr"

	"github.com/dynamoctl/dynamo-operator/internal/builders"
)

func TestDiff(t *testing.T) {
	cases := map[string]struct {
		have, want map[string]any
		diffs      []string
	}{
		"server defaults and other managers' fields do not matter": {
			have: map[string]any{"spec": map[string]any{"replicas": int64(2), "progressDeadlineSeconds": int64(600)}},
			want: map[string]any{"spec": map[string]any{"replicas": float64(2)}},
		},
		"empty objects and lists the server dropped are not missing": {
			have: map[string]any{"spec": map[string]any{"image": "a"}},
			want: map[string]any{"spec": map[string]any{"image": "a", "resources": map[string]any{}, "args": []any{}}},
		},
		"a changed value": {
			have:  map[string]any{"spec": map[string]any{"image": "a"}},
			want:  map[string]any{"spec": map[string]any{"image": "b"}},
			diffs: []string{".spec.image: expected b, got a"},
		},
		"a missing field and a shorter list": {
			have:  map[string]any{"l": []any{"x"}},
			want:  map[string]any{"l": []any{"x", "y"}, "m": "v"},
			diffs: []string{".l: expected 2 items, got [x]", ".m: missing"},
		},
		"a number against a string": {
			have:  map[string]any{"n": "1"},
			want:  map[string]any{"n": int64(1)},
			diffs: []string{".n: expected 1, got 1"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Diff(tc.have, tc.want)
			if diff := cmp.Diff(tc.diffs, got, cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("Diff (-want +got):\n%s", diff)
			}
		})
	}
}

func TestApplyMapDropsStatusAndNullsAndHashesStably(t *testing.T) {
	d := builders.MakeDeployment("x", "ns").Replicas(2).StatusReplicas(7).Obj()
	m, err := toApplyMap(d)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m["status"]; ok {
		t.Errorf("status must not be applied")
	}
	meta := m["metadata"].(map[string]any)
	if _, ok := meta["creationTimestamp"]; ok {
		t.Errorf("null creationTimestamp must be pruned, got %v", meta)
	}
	h1, _ := Hash(m)
	m2, _ := toApplyMap(d.DeepCopy())
	h2, _ := Hash(m2)
	if h1 != h2 {
		t.Errorf("hash is not stable: %s vs %s", h1, h2)
	}
	d.Spec.Replicas = ptr.To[int32](3)
	m3, _ := toApplyMap(d)
	if h3, _ := Hash(m3); h3 == h1 {
		t.Errorf("a changed spec must change the hash")
	}
	if _, err := toApplyMap(builders.MakeDeployment("no-kind", "").WithoutTypeMeta().Obj()); err == nil {
		t.Errorf("an object without apiVersion/kind must be refused")
	}
}
