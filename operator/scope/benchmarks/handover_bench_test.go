// Package benchmarks measures how fast a cluster-wide operator hands a
// namespace over to a namespace-scoped operator and takes it back:
//
//	make bench-handover BENCH_FLAGS='-handovers=20 -graphs=20'
//
// Each hand-over starts while the cluster-wide operator is busy in the
// namespace (every graph was just changed), creates the marker Lease as a
// namespace-scoped operator would (renewTime at creation), changes the graphs
// again while the Lease lives, and lets it expire. The API server's audit log
// times the cluster-wide operator's writes.
package benchmarks

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/onsi/gomega"
	"go.uber.org/zap/zapcore"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/dynamoctl/dynamo-operator/internal/await"
	"github.com/dynamoctl/dynamo-operator/internal/builders"
	"github.com/dynamoctl/dynamo-operator/internal/testenv"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/app"
	"github.com/dynamoctl/dynamo-operator/operator/scope"
)

var (
	handovers = flag.Int("handovers", 20, "hand-overs to measure")
	graphs    = flag.Int("graphs", 20, "graphs in the handed-over namespace")
	leaseSecs = flag.Int("lease-seconds", 2, "duration of the marker Lease")
)

const operatorUser = "cluster-wide-operator"

func BenchmarkHandover(b *testing.B) {
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	env, err := testenv.StartWith(testenv.Options{Audit: true})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = env.Stop() }()
	ctx := context.Background()
	op, err := env.NewOperatorAs(operatorUser, []string{"--max-concurrent-reconciles=8", "--kube-api-qps=200", "--kube-api-burst=400"}, app.Deps{})
	if err != nil {
		b.Fatal(err)
	}
	if err := op.Start(ctx); err != nil {
		b.Fatal(err)
	}
	defer op.Stop()

	ns, err := env.CreateNamespace(ctx, "handover")
	if err != nil {
		b.Fatal(err)
	}
	seen := watchLeases(ctx, b, env, ns)
	for i := range *graphs {
		if err := env.Client.Create(ctx, graph(ns, i)); err != nil {
			b.Fatal(err)
		}
	}
	replicas := int32(1)
	waitConverged(ctx, b, env, ns, replicas)

	var stopLags, sentLags, resumeLags, watchLags []time.Duration
	var tail []int
	for h := range *handovers {
		// Busy: every graph changes, then the Lease appears at once.
		replicas = int32(1 + (2*h+1)%3)
		scaleAll(ctx, b, env, ns, replicas)
		created := createLease(ctx, b, env, ns)
		select {
		case at := <-seen:
			watchLags = append(watchLags, at.Sub(created))
		case <-time.After(time.Minute):
			b.Fatal("the baseline watch did not see the lease")
		}
		expiry := created.Add(time.Duration(*leaseSecs) * time.Second)
		// Changed while excluded: only a resumed operator acts on this.
		replicas = int32(1 + (2*h+2)%3)
		scaleAll(ctx, b, env, ns, replicas)
		waitConverged(ctx, b, env, ns, replicas)

		writes, received := writeTimes(b, env, ns)
		var last, lastSent time.Time
		afterCreation := 0
		for i, at := range writes {
			if at.Before(expiry) {
				last = at
				if !at.Before(created) {
					afterCreation++
				}
				if received[i].After(lastSent) {
					lastSent = received[i]
				}
			}
		}
		i, _ := slices.BinarySearchFunc(writes, expiry, func(a, t time.Time) int { return a.Compare(t) })
		if i == len(writes) {
			b.Fatalf("hand-over %d: no write after the lease expired", h)
		}
		stopLags = append(stopLags, last.Sub(created))
		sentLags = append(sentLags, lastSent.Sub(created))
		resumeLags = append(resumeLags, writes[i].Sub(expiry))
		tail = append(tail, afterCreation)
		// The next hand-over needs the expired Lease gone, as the next
		// scoped operator would find it.
		if err := env.Client.Delete(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: scope.LeaseName}}); err != nil {
			b.Fatal(err)
		}
	}
	fmt.Printf("\nhand-overs: %d, graphs in the namespace: %d, lease %ds\n", *handovers, *graphs, *leaseSecs)
	fmt.Printf("baseline: lease created -> a bare watch in this process sees it: median %v, max %v\n",
		median(watchLags), slices.Max(watchLags))
	fmt.Printf("lease created -> last cluster-wide write (negative: it was already idle): median %v, max %v\n",
		median(stopLags), slices.Max(stopLags))
	fmt.Printf("lease created -> last cluster-wide write received by the API server: median %v, max %v\n",
		median(sentLags), slices.Max(sentLags))
	fmt.Printf("cluster-wide writes completed after the lease was created: %v (total %d)\n", tail, sum(tail))
	fmt.Printf("lease expired -> first resumed write: median %v, max %v\n", median(resumeLags), slices.Max(resumeLags))
}

// watchLeases is the baseline: a bare watch of the marker Lease, as fast as
// any operator could learn of it. It sends the time it sees each creation.
func watchLeases(ctx context.Context, b *testing.B, env *testenv.Env, ns string) <-chan time.Time {
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		b.Fatal(err)
	}
	w, err := cs.CoordinationV1().Leases(ns).Watch(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", scope.LeaseName).String(),
	})
	if err != nil {
		b.Fatal(err)
	}
	seen := make(chan time.Time, 1)
	go func() {
		for ev := range w.ResultChan() {
			if ev.Type == watch.Added {
				seen <- time.Now()
			}
		}
	}()
	b.Cleanup(w.Stop)
	return seen
}

func graph(ns string, i int) *v1alpha1.DynamoGraphDeployment {
	const image = "nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.0"
	return builders.MakeGraph(fmt.Sprintf("g%03d", i), ns).
		Service("Frontend", builders.MakeService().Type(v1alpha1.ComponentTypeFrontend).Image(image)).
		Service("Worker", builders.MakeService().Type(v1alpha1.ComponentTypeWorker).Image(image)).
		Obj()
}

func scaleAll(ctx context.Context, b *testing.B, env *testenv.Env, ns string, replicas int32) {
	patch := fmt.Appendf(nil, `{"spec":{"services":{"Worker":{"replicas":%d}}}}`, replicas)
	for i := range *graphs {
		g := builders.MakeGraph(fmt.Sprintf("g%03d", i), ns).Obj()
		if err := env.Client.Patch(ctx, g, client.RawPatch(types.MergePatchType, patch)); err != nil {
			b.Fatal(err)
		}
	}
}

// createLease creates the marker Lease as a namespace-scoped operator does
// and returns its renewTime.
func createLease(ctx context.Context, b *testing.B, env *testenv.Env, ns string) time.Time {
	now := metav1.NewMicroTime(time.Now())
	l := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: scope.LeaseName},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity: ptr.To("bench"), LeaseDurationSeconds: ptr.To(int32(*leaseSecs)),
			AcquireTime: &now, RenewTime: &now,
		},
	}
	if err := env.Client.Create(ctx, l); err != nil {
		b.Fatal(err)
	}
	return now.Time
}

// waitConverged waits until every worker Deployment has the replicas.
func waitConverged(ctx context.Context, b *testing.B, env *testenv.Env, ns string, replicas int32) {
	await.New(b).Eventually(func() int {
		dcds := &v1alpha1.DynamoComponentDeploymentList{}
		if err := env.Client.List(ctx, dcds, client.InNamespace(ns)); err != nil {
			b.Fatal(err)
		}
		done := 0
		for _, d := range dcds.Items {
			if d.Spec.ComponentType == v1alpha1.ComponentTypeWorker && ptr.Deref(d.Spec.Replicas, 1) == replicas {
				done++
			}
		}
		return done
	}).WithTimeout(2*time.Minute).WithPolling(20*time.Millisecond).Should(gomega.Equal(*graphs), "workers at %d replicas", replicas)
}

// writeTimes lists when the cluster-wide operator's writes in ns completed,
// in that order, and when the API server received each.
func writeTimes(b *testing.B, env *testenv.Env, ns string) (completed, received []time.Time) {
	events, err := env.AuditEvents()
	if err != nil {
		b.Fatal(err)
	}
	var mine []testenv.AuditEvent
	for _, ev := range events {
		if ev.User.Username == operatorUser && ev.ObjectRef.Namespace == ns {
			mine = append(mine, ev)
		}
	}
	sort.Slice(mine, func(i, j int) bool { return mine[i].StageTimestamp.Before(&mine[j].StageTimestamp) })
	for _, ev := range mine {
		completed = append(completed, ev.StageTimestamp.Time)
		received = append(received, ev.RequestReceivedTimestamp.Time)
	}
	return completed, received
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func sum(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}
