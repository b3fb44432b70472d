package app_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/dynamoctl/dynamo-operator/internal/await"
	"github.com/dynamoctl/dynamo-operator/internal/testenv"
	"github.com/dynamoctl/dynamo-operator/operator/app"
	"github.com/dynamoctl/dynamo-operator/operator/scope"
)

const graphYAML = `apiVersion: nvidia.com/v1alpha1
kind: DynamoGraphDeployment
metadata:
  name: llm
spec:
  services:
    Frontend:
      componentType: frontend
      replicas: 1
      extraPodSpec:
        mainContainer:
          image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:0.6.1
`

func createGraph(t *testing.T, ns string) {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(graphYAML), &u.Object); err != nil {
		t.Fatal(err)
	}
	u.SetNamespace(ns)
	if err := env.Client.Create(context.Background(), u); err != nil {
		t.Fatal(err)
	}
}

func scaleFrontend(t *testing.T, ns string, replicas int) {
	t.Helper()
	patch := fmt.Sprintf(`{"spec":{"services":{"Frontend":{"replicas":%d}}}}`, replicas)
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("nvidia.com/v1alpha1")
	u.SetKind("DynamoGraphDeployment")
	u.SetNamespace(ns)
	u.SetName("llm")
	if err := env.Client.Patch(context.Background(), u, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatal(err)
	}
}

// frontend returns the graph's frontend Deployment: its replicas and its
// NATS_SERVER, which tells which operator rendered it.
func frontend(t *testing.T, ns string) (replicas int32, nats string, ok bool) {
	t.Helper()
	d := &appsv1.Deployment{}
	err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "llm-frontend"}, d)
	if apierrors.IsNotFound(err) {
		return 0, "", false
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range d.Spec.Template.Spec.Containers {
		for _, e := range c.Env {
			if e.Name == "NATS_SERVER" {
				nats = e.Value
			}
		}
	}
	return ptr.Deref(d.Spec.Replicas, 0), nats, true
}

func markerLease(t *testing.T, ns string) (*coordinationv1.Lease, bool) {
	t.Helper()
	l := &coordinationv1.Lease{}
	err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: scope.LeaseName}, l)
	if apierrors.IsNotFound(err) {
		return nil, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return l, true
}

// writesBy lists the audited writes of user in namespace, in time order.
func writesBy(t *testing.T, user, ns string) []testenv.AuditEvent {
	t.Helper()
	events, err := env.AuditEvents()
	if err != nil {
		t.Fatal(err)
	}
	var out []testenv.AuditEvent
	for _, ev := range events {
		if ev.User.Username == user && ev.ObjectRef.Namespace == ns {
			out = append(out, ev)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].StageTimestamp.Before(&out[j].StageTimestamp) })
	return out
}

// writesBetween lists the writes of evs completed from from until to.
func writesBetween(evs []testenv.AuditEvent, from, to time.Time) []string {
	return writesIn(evs, from, to, func(ev testenv.AuditEvent) time.Time { return ev.StageTimestamp.Time })
}

// writesIn lists the writes of evs whose at is from from until to.
func writesIn(evs []testenv.AuditEvent, from, to time.Time, at func(testenv.AuditEvent) time.Time) []string {
	var out []string
	for _, ev := range evs {
		at := at(ev)
		if !at.Before(from) && at.Before(to) {
			out = append(out, fmt.Sprintf("%s %s %s/%s at %s", ev.Verb, ev.ObjectRef.Resource, ev.ObjectRef.Subresource,
				ev.ObjectRef.Name, at.Format(time.RFC3339Nano)))
		}
	}
	return out
}

// hybridLease is the marker Lease duration of the scoped operators here
// (--namespace-lease-duration).
const hybridLease = 2 * time.Second

// writesWhileHeld lists the writes of evs while holder's marker Lease in ns
// held the namespace, from owned to until. A renewal late enough that the
// Lease expired first (a starved machine: the Lease lasts 2 s, renewed every
// 500 ms) is a lapse in which the cluster-wide operator rightly takes the
// namespace back; writes in a lapse are not counted, and lapsed says so.
func writesWhileHeld(evs []testenv.AuditEvent, holder *testenv.Operator, ns string, owned, until time.Time) (writes []string, lapsed string) {
	held, lapses := scope.HeldSpans(owned, until, holder.LeaseRenewals(ns, scope.LeaseName), hybridLease, scope.MinSettle)
	for _, h := range held {
		writes = append(writes, writesBetween(evs, h.From, h.To)...)
	}
	for _, l := range lapses {
		lapsed += fmt.Sprintf("\n(the lease lapsed from %s for %s: renewed late, writes then not counted)",
			l.From.Format(time.RFC3339Nano), l.To.Sub(l.From).Round(time.Millisecond))
	}
	return writes, lapsed
}

// holderSettled proves the other half of "never interleave": user, which
// acquired ns's marker Lease at acquired, wrote nothing there but its Lease
// before it had settled, the span in which a cluster-wide operator may
// still write (scope.HeldSpans). Writes from an earlier Lease of user's, if
// any, are before acquired and not counted.
func holderSettled(t *testing.T, user, ns string, acquired time.Time) {
	t.Helper()
	var notLease []testenv.AuditEvent
	for _, ev := range writesBy(t, user, ns) {
		if ev.ObjectRef.Resource != "leases" {
			notLease = append(notLease, ev)
		}
	}
	if w := writesBetween(notLease, acquired, acquired.Add(scope.MinSettle)); len(w) > 0 {
		t.Errorf("%s wrote in %s within %v of acquiring its lease at %s, before it settled:\n%s",
			user, ns, scope.MinSettle, acquired.Format(time.RFC3339Nano), strings.Join(w, "\n"))
	}
}

func firstWriteAfter(evs []testenv.AuditEvent, t time.Time) (time.Time, bool) {
	for _, ev := range evs {
		if !ev.StageTimestamp.Time.Before(t) {
			return ev.StageTimestamp.Time, true
		}
	}
	return time.Time{}, false
}

// quiet waits until user has not written in ns for a second. The hand-over
// checks start from a quiet operator: a request already sent when the Lease
// appears cannot be called back (the benchmark measures that tail), so it
// would blur what these tests assert, that no new write starts.
func quiet(t *testing.T, user, ns string) {
	t.Helper()
	await.New(t).Eventually(func() bool {
		evs := writesBy(t, user, ns)
		// Longer than the component status re-check (2 s) and the graph's
		// progress-write coalescing (1 s), so no write is still on its way.
		return len(evs) > 0 && time.Since(evs[len(evs)-1].StageTimestamp.Time) > 3*time.Second
	}).Should(gomega.BeTrue(), user+" is quiet in "+ns)
}

func startOperator(t *testing.T, user string, args ...string) *testenv.Operator {
	t.Helper()
	op, err := env.NewOperatorAs(user, args, app.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	if err := op.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(op.Stop)
	return op
}

// A cluster-wide and a namespace-scoped operator share one API server. The
// cluster-wide one writes nothing in the scoped namespace while the marker
// Lease lives, and converges what changed there once the scoped operator
// dies (the Lease expires) or stops cleanly (the Lease is deleted).
func TestHybridHandover(t *testing.T) {
	const clusterUser, scopedUser = "cluster-wide-operator", "scoped-operator"
	a, b := env.Namespace(t, "hybrid-a"), env.Namespace(t, "hybrid-b")
	startOperator(t, clusterUser)
	createGraph(t, a)
	createGraph(t, b)
	await.New(t).Eventually(func() bool {
		_, _, okA := frontend(t, a)
		_, _, okB := frontend(t, b)
		return okA && okB
	}).Should(gomega.BeTrue(), "the cluster-wide operator runs both graphs")

	scopedArgs := []string{
		"--restrict-namespace=" + a, "--operator-version=v2.0.0-beta",
		"--namespace-lease-duration=" + hybridLease.String(), "--namespace-lease-renew-interval=500ms",
		// The scoped version renders differently, yet the hand-over
		// restarts nothing: what the other version rendered is kept until
		// a spec changes (controllers/adoption.go).
		"--natsAddr=nats://scoped:4222",
	}
	quiet(t, clusterUser, a)
	scoped := startOperator(t, scopedUser, scopedArgs...)
	var owned time.Time
	await.New(t).Eventually(func() bool {
		l, ok := markerLease(t, a)
		if ok {
			owned = l.Spec.AcquireTime.Time
		}
		return ok
	}).Should(gomega.BeTrue(), "the scoped operator holds its lease")
	scaleFrontend(t, a, 2)
	scaleFrontend(t, b, 2)
	await.New(t).Eventually(func() bool {
		ra, natsA, _ := frontend(t, a)
		rb, natsB, _ := frontend(t, b)
		return ra == 2 && rb == 2 && natsA == "" && natsB == ""
	}).Should(gomega.BeTrue(), "each operator scales the graph it owns")
	if _, nats, _ := frontend(t, a); nats != "" {
		t.Errorf("the hand-over re-rendered (restarted) the frontend: NATS_SERVER=%q", nats)
	}

	// The scoped operator dies: its Lease stays until it expires, and a
	// change made meanwhile waits for the cluster-wide operator.
	scoped.Kill()
	l, _ := markerLease(t, a)
	expiry, _ := scope.LeaseExpiry(l)
	scaleFrontend(t, a, 3)
	await.New(t).Eventually(func() bool {
		r, nats, _ := frontend(t, a)
		return r == 3 && nats == ""
	}).Should(gomega.BeTrue(), "the cluster-wide operator converges namespace a after the lease expired")
	clusterA := writesBy(t, clusterUser, a)
	if w, lapsed := writesWhileHeld(clusterA, scoped, a, owned, expiry); len(w) > 0 {
		t.Errorf("the cluster-wide operator wrote in %s while the lease lived (%s to %s):\n%s%s",
			a, owned.Format(time.RFC3339Nano), expiry.Format(time.RFC3339Nano), strings.Join(w, "\n"), lapsed)
	}
	holderSettled(t, scopedUser, a, owned)
	first, ok := firstWriteAfter(clusterA, expiry)
	if !ok {
		t.Fatal("no resumed write by the cluster-wide operator in the audit log")
	}
	t.Logf("lease expired at %s; first resumed write %v later", expiry.Format(time.RFC3339Nano), first.Sub(expiry))
	if len(writesBetween(writesBy(t, scopedUser, b), owned, time.Now())) > 0 {
		t.Error("the scoped operator wrote outside its namespace")
	}

	// A new scoped operator takes the namespace again, then stops
	// cleanly: its Lease goes at once and so does its claim.
	quiet(t, clusterUser, a)
	scoped = startOperator(t, scopedUser, scopedArgs...)
	var ownedAgain time.Time
	await.New(t).Eventually(func() bool {
		l, ok := markerLease(t, a)
		if ok && l.Spec.AcquireTime.After(expiry) {
			ownedAgain = l.Spec.AcquireTime.Time
			return true
		}
		return false
	}).Should(gomega.BeTrue(), "the new scoped operator holds the lease")
	scaleFrontend(t, a, 4)
	await.New(t).Eventually(func() bool {
		r, _, _ := frontend(t, a)
		return r == 4
	}).Should(gomega.BeTrue(), "the scoped operator acts on the change")
	scoped.Stop()
	if _, ok := markerLease(t, a); ok {
		t.Fatal("a clean stop must delete the lease")
	}
	var released time.Time
	for _, ev := range writesBy(t, scopedUser, a) {
		if ev.Verb == "delete" && ev.ObjectRef.Resource == "leases" {
			released = ev.StageTimestamp.Time
		}
	}
	scaleFrontend(t, a, 5)
	await.New(t).Eventually(func() bool {
		r, nats, _ := frontend(t, a)
		return r == 5 && nats == ""
	}).Should(gomega.BeTrue(), "the cluster-wide operator converges namespace a after the clean hand-back")
	clusterA = writesBy(t, clusterUser, a)
	if w, lapsed := writesWhileHeld(clusterA, scoped, a, ownedAgain, released); len(w) > 0 {
		t.Errorf("the cluster-wide operator wrote in %s while the second lease lived:\n%s%s", a, strings.Join(w, "\n"), lapsed)
	}
	holderSettled(t, scopedUser, a, ownedAgain)
	if scopedAfter := writesBetween(writesBy(t, scopedUser, a), released.Add(time.Nanosecond), time.Now()); len(scopedAfter) > 0 {
		t.Errorf("the scoped operator wrote after deleting its lease:\n%s", strings.Join(scopedAfter, "\n"))
	}
	first, _ = firstWriteAfter(clusterA, released)
	t.Logf("lease deleted at %s; first resumed write %v later", released.Format(time.RFC3339Nano), first.Sub(released))
}

// Two replicas of one install: only the leader reconciles, and when it dies
// the other takes over within the lease duration plus a retry.
func TestLeaderElectionFailover(t *testing.T) {
	ns := env.Namespace(t, "leader")
	args := []string{
		"--leader-elect", "--leader-election-id=dynamo-operator-test", "--leader-election-namespace=" + ns,
		"--leader-election-lease-duration=2s", "--leader-election-renew-deadline=1500ms",
		"--leader-election-retry-period=200ms",
	}
	ops := map[string]*testenv.Operator{
		"replica-1": startOperator(t, "replica-1", args...),
		"replica-2": startOperator(t, "replica-2", args...),
	}
	work := env.Namespace(t, "leader-work")
	createGraph(t, work)
	await.New(t).Eventually(func() bool { _, _, ok := frontend(t, work); return ok }).Should(gomega.BeTrue(), "the leader runs the graph")
	var leader string
	for user := range ops {
		if len(writesBy(t, user, work)) > 0 {
			if leader != "" {
				t.Fatal("both replicas reconciled")
			}
			leader = user
		}
	}
	if leader == "" {
		t.Fatal("no replica reconciled")
	}
	follower := "replica-1"
	if leader == follower {
		follower = "replica-2"
	}

	ops[leader].Kill()
	killed := time.Now()
	scaleFrontend(t, work, 2)
	await.New(t).Eventually(func() bool { r, _, _ := frontend(t, work); return r == 2 }).Should(gomega.BeTrue(), "the other replica takes over")
	first, ok := firstWriteAfter(writesBy(t, follower, work), killed)
	if !ok {
		t.Fatal("the follower did not write after the leader died")
	}
	// Received, not completed, after the kill: a write the leader sent
	// before it (already on the wire, as with a killed process) may
	// complete later.
	received := func(ev testenv.AuditEvent) time.Time { return ev.RequestReceivedTimestamp.Time }
	if after := writesIn(writesBy(t, leader, work), killed, time.Now(), received); len(after) > 0 {
		t.Errorf("the dead leader still wrote:\n%s", strings.Join(after, "\n"))
	}
	t.Logf("leader killed; the follower's first write %v later (lease 2s, retry 200ms)", first.Sub(killed))
}
