package apply_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/internal/builders"
	"github.com/dynamoctl/dynamo-operator/internal/testenv"
	"github.com/dynamoctl/dynamo-operator/operator/apply"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, func(e *testenv.Env) { env = e }))
}

func configMap(ns, value string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cm"},
		Data:       map[string]string{"key": value},
	}
}

// Apply writes only what would change, and does not write again what it
// wrote itself while the caller's cache has not caught up.
func TestApplyWritesOnlyWhatChanges(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t, t.Name())
	clock := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	a := &apply.Applier{Client: env.Client, FieldOwner: "test", Clock: clock}

	first := configMap(ns, "a")
	if outcome, err := a.Apply(ctx, first, nil); err != nil || outcome != apply.Applied {
		t.Fatalf("creating: %v %v", outcome, err)
	}
	if first.ResourceVersion == "" || first.Annotations[apply.HashAnnotation] == "" {
		t.Fatalf("desired must hold the stored object, got %+v", first.ObjectMeta)
	}

	// A cache that has not seen the create yet: no second write.
	again := configMap(ns, "a")
	if outcome, err := a.Apply(ctx, again, nil); err != nil || outcome != apply.Assumed {
		t.Fatalf("re-applying before the cache caught up: %v %v", outcome, err)
	}
	if again.ResourceVersion != first.ResourceVersion {
		t.Errorf("an assumed apply hands back the stored object")
	}

	// The cache caught up: unchanged, nothing written.
	live := &corev1.ConfigMap{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(first), live); err != nil {
		t.Fatal(err)
	}
	if outcome, err := a.Apply(ctx, configMap(ns, "a"), live); err != nil || outcome != apply.Unchanged {
		t.Fatalf("applying what is stored: %v %v", outcome, err)
	}

	// Someone else changed our field: drift is corrected.
	live.Data["key"] = "edited"
	if err := env.Client.Update(ctx, live); err != nil {
		t.Fatal(err)
	}
	fixed := configMap(ns, "a")
	if outcome, err := a.Apply(ctx, fixed, live); err != nil || outcome != apply.Applied || fixed.Data["key"] != "a" {
		t.Fatalf("correcting drift: %v %v %v", outcome, err, fixed.Data)
	}

	// Past the cache lag, the memory of our own writes is not trusted.
	changed := configMap(ns, "b")
	if outcome, err := a.Apply(ctx, changed, nil); err != nil || outcome != apply.Applied {
		t.Fatalf("a new configuration: %v %v", outcome, err)
	}
	clock.SetTime(clock.Now().Add(apply.CacheLag + time.Second))
	if outcome, err := a.Apply(ctx, configMap(ns, "b"), nil); err != nil || outcome != apply.Applied {
		t.Fatalf("after the cache lag an absent object is applied again: %v %v", outcome, err)
	}
}

// The memory of recent writes is bounded by age and by size: graphs created
// and deleted before a reconcile confirms their children must not grow it.
func TestApplyMemoryIsBounded(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t, t.Name())
	clock := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	a := &apply.Applier{Client: env.Client, FieldOwner: "test", Clock: clock, MaxRecent: 3}

	named := func(i int) *corev1.ConfigMap {
		cm := configMap(ns, "a")
		cm.Name = fmt.Sprintf("cm-%d", i)
		return cm
	}
	for i := 0; i < 5; i++ {
		clock.SetTime(clock.Now().Add(time.Millisecond))
		if outcome, err := a.Apply(ctx, named(i), nil); err != nil || outcome != apply.Applied {
			t.Fatalf("creating %d: %v %v", i, outcome, err)
		}
		if n := a.Remembered(); n > 3 {
			t.Fatalf("after %d writes %d are remembered, want at most MaxRecent 3", i+1, n)
		}
	}
	// The newest writes are the ones kept: cm-4 is still assumed, cm-0 was
	// dropped and is applied again (one redundant write, nothing lost).
	if outcome, err := a.Apply(ctx, named(4), nil); err != nil || outcome != apply.Assumed {
		t.Fatalf("the newest write is remembered: %v %v", outcome, err)
	}
	if outcome, err := a.Apply(ctx, named(0), nil); err != nil || outcome != apply.Applied {
		t.Fatalf("the oldest write was dropped: %v %v", outcome, err)
	}

	// Past the cache lag every earlier entry is swept by the next write.
	clock.SetTime(clock.Now().Add(apply.CacheLag))
	if outcome, err := a.Apply(ctx, named(9), nil); err != nil || outcome != apply.Applied {
		t.Fatalf("creating after the lag: %v %v", outcome, err)
	}
	if n := a.Remembered(); n != 1 {
		t.Errorf("after the cache lag %d writes are remembered, want only the newest", n)
	}
}

// ApplyKept writes a kept object only when it lacks a desired field, not
// because desired (live's own content) hashes differently from what the
// renderer that wrote it recorded.
func TestApplyKeptWritesOnlyMissingFields(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t, t.Name())
	other := &apply.Applier{Client: env.Client, FieldOwner: "other-version"}
	written := configMap(ns, "a")
	if _, err := other.Apply(ctx, written, nil); err != nil {
		t.Fatal(err)
	}
	live := &corev1.ConfigMap{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(written), live); err != nil {
		t.Fatal(err)
	}

	a := &apply.Applier{Client: env.Client, FieldOwner: "test"}
	// The content kept as it is, with a label the other renderer wrote:
	// a different configuration (another hash), every field already there.
	kept := configMap(ns, "a")
	kept.Labels = map[string]string{"kept": "yes"}
	live.Labels = map[string]string{"kept": "yes"}
	if err := env.Client.Update(ctx, live); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(written), live); err != nil {
		t.Fatal(err)
	}
	if outcome, err := a.ApplyKept(ctx, kept, live); err != nil || outcome != apply.Unchanged {
		t.Fatalf("kept content already stored: %v %v", outcome, err)
	}
	if kept.ResourceVersion != live.ResourceVersion {
		t.Errorf("ApplyKept hands back the stored object: resourceVersion %q, want %q", kept.ResourceVersion, live.ResourceVersion)
	}
	after := &corev1.ConfigMap{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(written), after); err != nil {
		t.Fatal(err)
	}
	if after.ResourceVersion != live.ResourceVersion {
		t.Fatalf("ApplyKept wrote content that was already stored (resourceVersion %s -> %s)", live.ResourceVersion, after.ResourceVersion)
	}

	// A field the kept object lacks (a new owner, label, replicas) is written.
	labelled := configMap(ns, "a")
	labelled.Labels = map[string]string{"kept": "yes", "owner": "new"}
	if outcome, err := a.ApplyKept(ctx, labelled, after); err != nil || outcome != apply.Applied {
		t.Fatalf("a missing label: %v %v", outcome, err)
	}
	if labelled.Labels["owner"] != "new" || labelled.Annotations[apply.HashAnnotation] == "" {
		t.Errorf("the applied object must be handed back, got %+v", labelled.ObjectMeta)
	}
}

// A desired object already found held by a version of live is not compared
// again with that version; any change a comparison would see makes it
// compare again. For a Deployment, a status write is not such a change.
func TestApplyRemembersWhatItVerified(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t, t.Name())
	clock := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	a := &apply.Applier{Client: env.Client, FieldOwner: "test", Clock: clock}
	get := func(obj client.Object) client.Object {
		t.Helper()
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			t.Fatal(err)
		}
		return obj
	}
	expect := func(what string, want apply.Outcome, wantChecks int64, desired, live client.Object) {
		t.Helper()
		outcome, err := a.Apply(ctx, desired, live)
		if err != nil || outcome != want {
			t.Fatalf("%s: %v %v, want %v", what, outcome, err, want)
		}
		if got := a.FullChecks(); got != wantChecks {
			t.Fatalf("%s: %d whole comparisons so far, want %d", what, got, wantChecks)
		}
	}

	// A ConfigMap: any write to it is a new version.
	if _, err := a.Apply(ctx, configMap(ns, "a"), nil); err != nil {
		t.Fatal(err)
	}
	cm := get(configMap(ns, "")).(*corev1.ConfigMap)
	expect("the first comparison", apply.Unchanged, 1, configMap(ns, "a"), cm.DeepCopy())
	held := configMap(ns, "a")
	expect("the same desired and live", apply.Unchanged, 1, held, cm.DeepCopy())
	if held.ResourceVersion != cm.ResourceVersion || held.Data["key"] != "a" || held.Kind != "ConfigMap" {
		t.Errorf("a remembered verification hands back the stored object, got %+v", held)
	}
	expect("another desired object", apply.Applied, 1, configMap(ns, "b"), cm.DeepCopy())
	cm = get(configMap(ns, "")).(*corev1.ConfigMap)
	cm.Data["key"] = "edited"
	if err := env.Client.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	clock.SetTime(clock.Now().Add(apply.CacheLag))
	expect("an edited ConfigMap", apply.Applied, 2, configMap(ns, "b"), get(configMap(ns, "")))

	// A Deployment: its status writes are no change to compare again for.
	// desired is the Deployment the test applies, built anew for each call.
	desired := func() *appsv1.Deployment {
		return builders.MakeDeployment("d", ns).Label("team", "a").Selector(map[string]string{"app": "d"}).Container("main", "v1").Obj()
	}
	if _, err := a.Apply(ctx, desired(), nil); err != nil {
		t.Fatal(err)
	}
	expect("the first comparison of the Deployment", apply.Unchanged, 3, desired(), get(&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "d"}}))
	live := get(&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "d"}}).(*appsv1.Deployment)
	live.Status.Replicas, live.Status.ObservedGeneration = 1, live.Generation
	if err := env.Client.Status().Update(ctx, live); err != nil {
		t.Fatal(err)
	}
	statusWritten := get(&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "d"}}).(*appsv1.Deployment)
	if statusWritten.Status.Replicas != 1 {
		t.Fatal("the status write did not happen")
	}
	held2 := desired()
	expect("after a status write", apply.Unchanged, 3, held2, statusWritten.DeepCopy())
	if held2.Status.Replicas != 1 {
		t.Errorf("a remembered verification hands back the stored status, got %+v", held2.Status)
	}
	// A label of ours removed: metadata, no new generation, compared again.
	unlabelled := statusWritten.DeepCopy()
	delete(unlabelled.Labels, "team")
	if err := env.Client.Update(ctx, unlabelled); err != nil {
		t.Fatal(err)
	}
	expect("a label removed", apply.Applied, 4, desired(), get(&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "d"}}))
	// Restored, it is the very version verified before.
	clock.SetTime(clock.Now().Add(apply.CacheLag))
	edited := get(&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "d"}}).(*appsv1.Deployment)
	expect("the restored Deployment", apply.Unchanged, 4, desired(), edited.DeepCopy())
	// The template edited: a new generation, compared again.
	edited.Spec.Template.Spec.Containers[0].Image = "by-hand"
	if err := env.Client.Update(ctx, edited); err != nil {
		t.Fatal(err)
	}
	expect("an edited template", apply.Applied, 5, desired(), get(&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "d"}}))
}

// The memory of verifications is bounded by size, and by age: the children
// of a deleted graph go with the garbage collector, never through Forget.
func TestApplyVerifiedIsBounded(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t, t.Name())
	clock := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	a := &apply.Applier{Client: env.Client, FieldOwner: "test", Clock: clock, MaxVerified: 2}
	verify := func(name string) (apply.Outcome, error) {
		cm := configMap(ns, "a")
		cm.Name = name
		live := &corev1.ConfigMap{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cm), live); err != nil {
			return 0, err
		}
		return a.Apply(ctx, cm, live)
	}
	for i := 0; i < 4; i++ {
		cm := configMap(ns, "a")
		cm.Name = fmt.Sprintf("cm-%d", i)
		if _, err := a.Apply(ctx, cm, nil); err != nil {
			t.Fatal(err)
		}
		if outcome, err := verify(cm.Name); err != nil || outcome != apply.Unchanged {
			t.Fatalf("verifying %s: %v %v", cm.Name, outcome, err)
		}
		if n, want := a.Verified(), min(i+1, 2); n != want {
			t.Fatalf("after %d verifications %d are remembered, want %d", i+1, n, want)
		}
	}
	// The newest is remembered: verifying it again compares nothing.
	checks := a.FullChecks()
	if outcome, err := verify("cm-3"); err != nil || outcome != apply.Unchanged || a.FullChecks() != checks {
		t.Fatalf("the newest verification is not remembered: %v %v, %d whole comparisons after %d", outcome, err, a.FullChecks(), checks)
	}
	// Unused past its lifetime, an entry goes when the next is recorded.
	clock.SetTime(clock.Now().Add(10*time.Minute + time.Second))
	if outcome, err := verify("cm-0"); err != nil || outcome != apply.Unchanged {
		t.Fatalf("verifying cm-0 again: %v %v", outcome, err)
	}
	if n := a.Verified(); n != 1 {
		t.Fatalf("%d verifications remembered after the others went unused for 10 minutes, want 1", n)
	}
}
