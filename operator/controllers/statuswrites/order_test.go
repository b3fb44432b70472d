package statuswrites

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// orderClient records the kind of every object created or patched through
// it, in order.
type orderClient struct {
	client.Client
	mu     sync.Mutex
	writes []string
}

func (c *orderClient) record(obj client.Object) {
	gvk, err := c.GroupVersionKindFor(obj)
	kind := fmt.Sprintf("%T", obj)
	if err == nil {
		kind = gvk.Kind
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writes = append(c.writes, kind+"/"+obj.GetName())
}

func (c *orderClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	c.record(obj)
	return c.Client.Create(ctx, obj, opts...)
}

func (c *orderClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	c.record(obj)
	return c.Client.Patch(ctx, obj, patch, opts...)
}

// Apply records the kind and name of the applied configuration (the
// Applier server-side applies every child).
func (c *orderClient) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	var meta struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	data, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, &meta); err != nil {
		return err
	}
	c.mu.Lock()
	c.writes = append(c.writes, meta.Kind+"/"+meta.Metadata.Name)
	c.mu.Unlock()
	return c.Client.Apply(ctx, obj, opts...)
}

// A new graph's discovery ServiceAccount is written before any of its
// components: their pods name it, and the API server refuses a pod whose
// ServiceAccount does not exist yet (the ReplicaSet controller then retries
// with backoff, and the graph said "cannot create pods: ... forbidden"
// meanwhile, as the simulator once showed).
func TestGraphWritesItsServiceAccountBeforeItsComponents(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t, "graph-write-order")
	clock := clocktesting.NewFakeClock(time.Unix(1000, 0))
	dgd := createGraph(t, ctx, ns)
	c := &orderClient{Client: env.Client}
	r := newGraphReconciler(c, c, clock)
	reconcileOnce(t, ctx, r, client.ObjectKeyFromObject(dgd))

	first := map[string]int{}
	for i, w := range c.writes {
		kind, _, _ := strings.Cut(w, "/")
		if _, ok := first[kind]; !ok {
			first[kind] = i
		}
	}
	sa, okSA := first["ServiceAccount"]
	dcd, okDCD := first["DynamoComponentDeployment"]
	if !okSA || !okDCD {
		t.Fatalf("the reconcile wrote %v: want the ServiceAccount and the components", c.writes)
	}
	if sa > dcd {
		t.Errorf("a component was written before the discovery ServiceAccount: %v", c.writes)
	}
}
