package apitest

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/internal/builders"
)

// TestUnreportedStatusReadsInProgress: a graph, component, model or
// artifact whose status nobody has written yet comes back from the API
// server with status {observedGeneration: 0} (the CRDs' default; a graph's
// with state "initializing" too, for kubectl's State column), which
// kstatus, as Flux and kpt run it, reads as InProgress. Without the default
// the object has no status and no conditions, which kstatus reads as
// Current: a graph applied through GitOps would count as healthy during the
// operator's first-report hold. It reads the create response, which no
// controller can have written to, and the object read back.
func TestUnreportedStatusReadsInProgress(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ns := env.Namespace(t, "unreported")
	unreported := map[string]any{"observedGeneration": int64(0)}
	for _, tc := range []struct {
		obj  client.Object
		want map[string]any
	}{
		{builders.MakeGraph("llm", ns).Service("Worker", builders.MakeService().GPUs(1)).Obj(),
			map[string]any{"observedGeneration": int64(0), "state": "initializing"}},
		{builders.MakeComponent("llm-worker", ns, builders.MakeService().GPUs(1)).Obj(), unreported},
		{builders.MakeModel("qwen", ns, "Qwen/Qwen3-0.6B", "Qwen/Qwen3-0.6B").Obj(), unreported},
		{builders.MakeDynamoComponent("artifact", ns, "llm:v1").Obj(), unreported},
	} {
		obj := tc.obj
		kind := obj.GetObjectKind().GroupVersionKind().Kind
		content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{Object: content}
		if err := env.Client.Create(ctx, u); err != nil {
			t.Fatalf("creating the %s: %v", kind, err)
		}
		check := func(what string, got *unstructured.Unstructured) {
			t.Helper()
			st, _, _ := unstructured.NestedFieldNoCopy(got.Object, "status")
			if diff := cmp.Diff(tc.want, st); diff != "" {
				t.Errorf("%s, %s: status (-want +got):\n%s", kind, what, diff)
			}
			res, err := status.Compute(got)
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != status.InProgressStatus {
				t.Errorf("%s, %s: kstatus reads %s (%s), want InProgress", kind, what, res.Status, res.Message)
			}
		}
		check("create response", u)
		read := &unstructured.Unstructured{}
		read.SetGroupVersionKind(u.GroupVersionKind())
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(u), read); err != nil {
			t.Fatal(err)
		}
		// The operator, when another test of the package started it, may
		// have reported on the object already: only the create response is
		// sure to hold nobody's status.
		if g, _, _ := unstructured.NestedInt64(read.Object, "status", "observedGeneration"); g == 0 {
			check("read back", read)
		}
	}
}
