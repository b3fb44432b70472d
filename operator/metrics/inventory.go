package metrics

import (
	"context"
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

// States of objects whose status has no one-word summary (components).
const (
	StateReady    = "ready"
	StateNotReady = "not_ready"
	StateUnknown  = "unknown"
)

// inventoried are the kinds resources_total counts, each with how its state
// is read. A new kind is one row.
var inventoried = []struct {
	resourceType string
	newObject    func() client.Object
	state        func(client.Object) string
}{
	{"DynamoGraphDeployment", func() client.Object { return &v1alpha1.DynamoGraphDeployment{} }, graphState},
	{"DynamoComponentDeployment", func() client.Object { return &v1alpha1.DynamoComponentDeployment{} }, componentState},
}

// graphState is the graph's status.state (initializing, pending,
// successful, failed): initializing before the operator first wrote it, the
// CRD's default; "unknown" only without a state (a CRD older than the
// default).
func graphState(obj client.Object) string {
	if s := obj.(*v1alpha1.DynamoGraphDeployment).Status.State; s != "" {
		return string(s)
	}
	return StateUnknown
}

// componentState is ready or not_ready from the Available condition of the
// current generation, "unknown" without one.
func componentState(obj client.Object) string {
	dcd := obj.(*v1alpha1.DynamoComponentDeployment)
	c := meta.FindStatusCondition(dcd.Status.Conditions, v1alpha1.ConditionAvailable)
	switch {
	case c == nil || c.ObservedGeneration != dcd.Generation:
		return StateUnknown
	case c.Status == metav1.ConditionTrue:
		return StateReady
	default:
		return StateNotReady
	}
}

var resourcesDesc = prometheus.NewDesc("dynamo_operator_resources_total",
	"Objects the operator manages now, by resource_type (DynamoGraphDeployment, DynamoComponentDeployment), "+
		"namespace and state (graphs: initializing before the operator's first report, pending, successful, failed; "+
		"components: ready, not_ready, unknown before the operator's first report). Namespaces another operator owns are not counted.",
	[]string{"resource_type", "namespace", "state"}, nil)

// Inventory counts the managed objects by kind, namespace and state from
// the informers' add, update and delete events, so a scrape costs one pass
// over the series, never a list. A series with no object left is not
// exported: stale series vanish with their last object.
type Inventory struct {
	// Counted says whether a namespace's objects count (hybrid mode: not
	// those a namespace-scoped operator owns). Asked at scrape time, so a
	// namespace handed over or back is reflected at once. nil counts all.
	Counted func(namespace string) bool

	mu sync.Mutex
	// state is the last state seen of each object, by kind.
	state  map[string]map[types.NamespacedName]string
	counts map[seriesKey]int
}

type seriesKey struct{ resourceType, namespace, state string }

// NewInventory returns an empty inventory; Watch feeds it.
func NewInventory(counted func(namespace string) bool) *Inventory {
	return &Inventory{Counted: counted, state: map[string]map[types.NamespacedName]string{}, counts: map[seriesKey]int{}}
}

// Run subscribes the inventory to the informers of every counted kind and
// exports it on /metrics until ctx ends. The informers are the
// controllers' own: no extra watch is opened; their existing objects are
// replayed as adds. As a manager runnable it runs on the leader only, so
// replicas on standby do not report the same objects again.
func (inv *Inventory) Run(ctx context.Context, c cache.Informers) error {
	for _, k := range inventoried {
		informer, err := c.GetInformer(ctx, k.newObject())
		if err != nil {
			return fmt.Errorf("inventory of %s: %w", k.resourceType, err)
		}
		resourceType, state := k.resourceType, k.state
		reg, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { inv.set(resourceType, obj, state) },
			UpdateFunc: func(_, obj any) { inv.set(resourceType, obj, state) },
			DeleteFunc: func(obj any) { inv.remove(resourceType, obj) },
		})
		if err != nil {
			return fmt.Errorf("inventory of %s: %w", k.resourceType, err)
		}
		defer func() { _ = informer.RemoveEventHandler(reg) }()
	}
	inventories.add(inv)
	defer inventories.remove(inv)
	<-ctx.Done()
	return nil
}

func (inv *Inventory) set(resourceType string, obj any, state func(client.Object) string) {
	o, ok := obj.(client.Object)
	if !ok {
		return
	}
	inv.Set(resourceType, types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}, state(o))
}

func (inv *Inventory) remove(resourceType string, obj any) {
	if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if o, ok := obj.(client.Object); ok {
		inv.Delete(resourceType, types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()})
	}
}

// Set records that the object key of resourceType is in state now.
func (inv *Inventory) Set(resourceType string, key types.NamespacedName, state string) {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	byKey := inv.state[resourceType]
	if byKey == nil {
		byKey = map[types.NamespacedName]string{}
		inv.state[resourceType] = byKey
	}
	if old, ok := byKey[key]; ok {
		if old == state {
			return
		}
		inv.dec(seriesKey{resourceType, key.Namespace, old})
	}
	byKey[key] = state
	inv.counts[seriesKey{resourceType, key.Namespace, state}]++
}

// Delete forgets the object key of resourceType.
func (inv *Inventory) Delete(resourceType string, key types.NamespacedName) {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	old, ok := inv.state[resourceType][key]
	if !ok {
		return
	}
	delete(inv.state[resourceType], key)
	inv.dec(seriesKey{resourceType, key.Namespace, old})
}

func (inv *Inventory) dec(k seriesKey) {
	if inv.counts[k] <= 1 {
		delete(inv.counts, k)
		return
	}
	inv.counts[k]--
}

// Snapshot returns the counted series and their values now.
func (inv *Inventory) Snapshot() map[seriesKey]int {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	out := make(map[seriesKey]int, len(inv.counts))
	for k, n := range inv.counts {
		if inv.Counted == nil || inv.Counted(k.namespace) {
			out[k] = n
		}
	}
	return out
}

// inventories are the running inventories of this process: one in the
// binary, several when tests run more than one operator in process (a
// cluster-wide and a namespace-scoped one each count what they own, so
// their sum is the truth). They share one registered collector because the
// registry is process-wide.
var inventories = &inventorySet{set: map[*Inventory]struct{}{}}

type inventorySet struct {
	mu  sync.Mutex
	set map[*Inventory]struct{}
}

func (s *inventorySet) add(inv *Inventory) {
	s.mu.Lock()
	s.set[inv] = struct{}{}
	s.mu.Unlock()
}

func (s *inventorySet) remove(inv *Inventory) {
	s.mu.Lock()
	delete(s.set, inv)
	s.mu.Unlock()
}

// Describe implements prometheus.Collector.
func (s *inventorySet) Describe(ch chan<- *prometheus.Desc) { ch <- resourcesDesc }

// Collect implements prometheus.Collector.
func (s *inventorySet) Collect(ch chan<- prometheus.Metric) {
	s.mu.Lock()
	invs := make([]*Inventory, 0, len(s.set))
	for inv := range s.set {
		invs = append(invs, inv)
	}
	s.mu.Unlock()
	sum := map[seriesKey]int{}
	for _, inv := range invs {
		for k, n := range inv.Snapshot() {
			sum[k] += n
		}
	}
	for k, n := range sum {
		ch <- prometheus.MustNewConstMetric(resourcesDesc, prometheus.GaugeValue, float64(n), k.resourceType, k.namespace, k.state)
	}
}
