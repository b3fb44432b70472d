package storagemigration_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/internal/await"
	"github.com/dynamoctl/dynamo-operator/internal/testenv"
	"github.com/dynamoctl/dynamo-operator/operator/storagemigration"
)

// setConversion sets the CRD's conversion.
func setConversion(t *testing.T, name string, conversion *apiextensionsv1.CustomResourceConversion) {
	t.Helper()
	crd := getCRD(t, name)
	crd.Spec.Conversion = conversion
	if err := admin.Update(context.Background(), crd); err != nil {
		t.Fatal(err)
	}
}

// deadWebhook is a conversion webhook whose Service does not exist, as
// Dynamo's operator leaves its CRDs once uninstalled, or ours before its
// webhook serves: every read of an object in another version fails (500).
var deadWebhook = &apiextensionsv1.CustomResourceConversion{
	Strategy: apiextensionsv1.WebhookConverter,
	Webhook: &apiextensionsv1.WebhookConversion{
		ClientConfig: &apiextensionsv1.WebhookClientConfig{Service: &apiextensionsv1.ServiceReference{
			Namespace: "default", Name: "gone-webhook", Path: ptrTo("/convert"),
		}},
		ConversionReviewVersions: []string{"v1"},
	},
}

// waitBackingOff waits until the migrator sleeps out its backoff after
// what the metric passes_total{crd, result} counts.
func waitBackingOff(t *testing.T, clk *clocktesting.FakeClock, crd, result string) {
	t.Helper()
	await.New(t).Eventually(func() bool {
		n := testenv.MetricValue(t, "dynamo_operator_storage_migration_passes_total", map[string]string{"crd": crd, "result": result})
		return n > 0 && clk.HasWaiters()
	}).WithTimeout(time.Minute).Should(gomega.BeTrue(), "a pass "+result+" and the migrator backing off")
}

// A conversion webhook that does not answer is transient: the pass is
// retried with backoff and never reported as a failure (no event, no
// failed pass); once reads convert again, the migration completes.
func TestTransientErrorsAreRetriedNotReported(t *testing.T) {
	const plural = "gizmos"
	name := plural + "." + group
	installCRD(t, testCRD(plural, "v1beta1"))
	createObjects(t, plural, "v1beta1", "old", 3, env.Namespace(t, t.Name()))
	setStorage(t, name, "v1alpha1")
	setConversion(t, name, deadWebhook)

	log := &writeLog{}
	recorder := events.NewFakeRecorder(10)
	clk := fakeClock()
	m := &storagemigration.Migrator{Client: dynamicFor(t, log.wrap(env.Config)), CRDs: []string{name}, Clock: clk, Recorder: recorder, Log: testr.New(t)}
	finish := runUntilDone(t, m.Start)
	waitBackingOff(t, clk, name, "retried")
	if writes, _ := log.snapshot(); len(writes) > 0 {
		t.Errorf("writes while no object could be read: %v", writes)
	}
	if got := getCRD(t, name).Status.StoredVersions; !slices.Equal(got, []string{"v1beta1", "v1alpha1"}) {
		t.Errorf("storedVersions while objects could not be read = %v", got)
	}

	setConversion(t, name, &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter})
	finish(time.Minute, clk)
	if got := getCRD(t, name).Status.StoredVersions; !slices.Equal(got, []string{"v1alpha1"}) {
		t.Errorf("storedVersions = %v, want [v1alpha1]", got)
	}
	if n := testenv.MetricValue(t, "dynamo_operator_storage_migration_passes_total", map[string]string{"crd": name, "result": "failed"}); n != 0 {
		t.Errorf("%v passes reported failed for a transient error", n)
	}
	if e := <-recorder.Events; !strings.HasPrefix(e, "Normal StorageMigrated") {
		t.Errorf("first event %q, want only the migration's success", e)
	}
}

// A transient error on one object's write (here the connection failing,
// as a conversion webhook whose CA the API server does not trust yet fails
// it) ends the pass at that object: the object is counted retried, not
// failed, no failed pass or event is reported, and the next pass writes
// every object.
func TestAnObjectsTransientErrorEndsThePassUnreported(t *testing.T) {
	const plural = "gadgets"
	name := plural + "." + group
	installCRD(t, testCRD(plural, "v1beta1"))
	createObjects(t, plural, "v1beta1", "old", 3, env.Namespace(t, t.Name()))
	setStorage(t, name, "v1alpha1")

	cfg := rest.CopyConfig(env.Config)
	var refused atomic.Bool
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(req *http.Request) (*http.Response, error) {
			if req.Method == http.MethodPut && refused.CompareAndSwap(false, true) {
				return nil, errors.New("remote error: tls: bad certificate")
			}
			return rt.RoundTrip(req)
		})
	})
	recorder := events.NewFakeRecorder(10)
	clk := fakeClock()
	m := &storagemigration.Migrator{Client: dynamicFor(t, cfg), CRDs: []string{name}, Clock: clk, Recorder: recorder, Log: testr.New(t)}
	runUntilDone(t, m.Start)(time.Minute, clk)

	if got := getCRD(t, name).Status.StoredVersions; !slices.Equal(got, []string{"v1alpha1"}) {
		t.Errorf("storedVersions = %v, want [v1alpha1]", got)
	}
	for metric, want := range map[string]map[string]float64{
		"dynamo_operator_storage_migration_objects_total": {"retried": 1, "failed": 0, "rewritten": 3},
		"dynamo_operator_storage_migration_passes_total":  {"retried": 1, "failed": 0, "migrated": 1},
	} {
		for result, n := range want {
			if got := testenv.MetricValue(t, metric, map[string]string{"crd": name, "result": result}); got != n {
				t.Errorf("%s{result=%s} = %v, want %v", metric, result, got, n)
			}
		}
	}
	if e := <-recorder.Events; !strings.HasPrefix(e, "Normal StorageMigrated") {
		t.Errorf("first event %q, want only the migration's success", e)
	}
}

// migratorRole is the RBAC the migration needs, as the chart grants it:
// the CRD read and its status patched by name, the kind listed and
// updated cluster-wide (update limited to names here, to refuse one).
func migratorRole(crd, plural string, updatable []string) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "storage-migration-" + plural},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}, ResourceNames: []string{crd}, Verbs: []string{"get"}},
			{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions/status"}, ResourceNames: []string{crd}, Verbs: []string{"patch"}},
			{APIGroups: []string{group}, Resources: []string{plural}, Verbs: []string{"get", "list"}},
			{APIGroups: []string{group}, Resources: []string{plural}, ResourceNames: updatable, Verbs: []string{"update"}},
		},
	}
}

// bindTo binds role to user and returns a configuration authenticating as
// user.
func bindTo(t *testing.T, role *rbacv1.ClusterRole, user string) *rest.Config {
	t.Helper()
	ctx := context.Background()
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: user}},
	}
	for _, o := range []client.Object{role, binding} {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), o) })
	}
	// The API server authorizes from its own cache of roles and bindings: a
	// migrator started before that cache has them would be forbidden.
	first := role.Rules[0]
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: user, Groups: []string{"system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Group: first.APIGroups[0], Resource: first.Resources[0], Name: first.ResourceNames[0], Verb: first.Verbs[0],
		},
	}}
	await.New(t).Eventually(func() (bool, error) {
		r := review.DeepCopy()
		err := env.Client.Create(ctx, r)
		return r.Status.Allowed, err
	}).WithTimeout(await.Long).Should(gomega.BeTrue(), "%s allowed by the role %s", user, role.Name)
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
	return cfg
}

// An object whose rewrite is refused for good (here forbidden) is reported
// (a Warning event, a failed object and pass), the others are rewritten,
// and storedVersions is kept until it too is rewritten.
func TestRefusedObjectHoldsStoredVersions(t *testing.T) {
	ctx := context.Background()
	const plural = "sprockets"
	name := plural + "." + group
	installCRD(t, testCRD(plural, "v1beta1"))
	ns := env.Namespace(t, t.Name())
	createObjects(t, plural, "v1beta1", "old", 3, ns)
	setStorage(t, name, "v1alpha1")
	before := listAll(t, plural, "v1alpha1")
	role := migratorRole(name, plural, []string{"old-1", "old-2"})
	cfg := bindTo(t, role, "storage-migrator")

	recorder := events.NewFakeRecorder(10)
	clk := fakeClock()
	m := &storagemigration.Migrator{Client: dynamicFor(t, cfg), CRDs: []string{name}, Clock: clk, Recorder: recorder, Log: testr.New(t)}
	finish := runUntilDone(t, m.Start)
	waitBackingOff(t, clk, name, "failed")
	if e := <-recorder.Events; !strings.HasPrefix(e, "Warning StorageMigrationFailed") || !strings.Contains(e, ns+"/old-0") {
		t.Errorf("event %q, want a Warning naming %s/old-0", e, ns)
	}
	after := listAll(t, plural, "v1alpha1")
	for key, b := range before {
		if rewritten := after[key].GetResourceVersion() != b.GetResourceVersion(); rewritten != !strings.HasSuffix(key, "/old-0") {
			t.Errorf("%s rewritten: %v", key, rewritten)
		}
	}
	if got := getCRD(t, name).Status.StoredVersions; !slices.Equal(got, []string{"v1beta1", "v1alpha1"}) {
		t.Errorf("storedVersions with an object not rewritten = %v", got)
	}

	// Its owner (here the admin) lets it be written: the next pass completes.
	role.Rules[3].ResourceNames = append(role.Rules[3].ResourceNames, "old-0")
	if err := env.Client.Update(ctx, role); err != nil {
		t.Fatal(err)
	}
	finish(time.Minute, clk)
	if got := getCRD(t, name).Status.StoredVersions; !slices.Equal(got, []string{"v1alpha1"}) {
		t.Errorf("storedVersions = %v, want [v1alpha1]", got)
	}
}
