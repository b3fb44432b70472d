package certs_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/internal/await"
	"github.com/dynamoctl/dynamo-operator/internal/builders"
	"github.com/dynamoctl/dynamo-operator/internal/testenv"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1beta1"
	"github.com/dynamoctl/dynamo-operator/operator/certs"
	"github.com/dynamoctl/dynamo-operator/operator/crdinstall"
)

// convertedCRDs are the CRDs whose conversion webhook the operator serves.
func convertedCRDs(t *testing.T) []string {
	t.Helper()
	names, err := crdinstall.ConvertedNames()
	if err != nil || len(names) != 2 {
		t.Fatalf("CRDs converted by webhook: %v, %v; want the graph's and the component's", names, err)
	}
	return names
}

func crdBundle(t *testing.T, name string) []byte {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, crd); err != nil {
		t.Fatal(err)
	}
	return crd.Spec.Conversion.Webhook.ClientConfig.CABundle
}

// storedCA is the CA bundle the auto mode keeps in its Secret.
func storedCA(t *testing.T, secret string) []byte {
	t.Helper()
	s := &corev1.Secret{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: testenv.OperatorNamespace, Name: secret}, s); err != nil {
		return nil
	}
	return s.Data[certs.KeyCABundle]
}

// startAuto runs an operator in the auto mode with a Secret of the test's
// own, deleted afterwards: a later test's operator must not take up this
// one's certificates.
func startAuto(t *testing.T, secret string) (*testenv.Operator, string) {
	t.Helper()
	t.Cleanup(func() {
		_ = env.Client.Delete(context.Background(), builders.MakeSecret(secret, testenv.OperatorNamespace).Obj())
	})
	return startInMode(t, "auto", secret)
}

// eventuallyCRDBundles waits until every converted CRD's bundle is want()
// (non-empty).
func eventuallyCRDBundles(t *testing.T, what string, want func() []byte) {
	t.Helper()
	await.New(t).Eventually(func(g gomega.Gomega) {
		w := want()
		g.Expect(w).NotTo(gomega.BeEmpty())
		for _, name := range convertedCRDs(t) {
			g.Expect(crdBundle(t, name)).To(gomega.Equal(w), "the bundle of %s", name)
		}
	}).
		WithTimeout(45*time.Second).       // CRD writes take seconds on a loaded machine
		WithPolling(250*time.Millisecond). // each read is ~1 MB of schema
		Should(gomega.Succeed(), "the CRDs' conversion webhook bundles are %s", what)
}

// The auto mode injects its CA into the CRDs whose conversion webhook
// names the operator, restores it when edited, writes nothing when nothing
// changed, and leaves CRDs that name another webhook alone.
func TestCRDBundleInjectedRestoredAndLeftToOthers(t *testing.T) {
	testenv.Long(t)
	op, port := startAuto(t, "crd-cert")
	env.RouteConversion(t, crdinstall.Conversion{URL: "https://127.0.0.1:" + port})
	eventuallyCRDBundles(t, "the operator's CA", func() []byte { return storedCA(t, "crd-cert") })

	name := convertedCRDs(t)[0]
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, crd); err != nil {
		t.Fatal(err)
	}
	passes := testenv.MetricValue(t, "dynamo_operator_webhook_certificate_passes_total", nil)
	crd.Spec.Conversion.Webhook.ClientConfig.CABundle = newTestCA(t).certPEM // a user's edit
	if err := env.Client.Update(context.Background(), crd, client.FieldOwner("someone")); err != nil {
		t.Fatal(err)
	}
	eventuallyCRDBundles(t, "restored", func() []byte { return storedCA(t, "crd-cert") })

	mark := op.Writes()
	time.Sleep(2 * time.Second)
	for _, w := range op.WritesSince(mark) {
		if strings.Contains(w, "customresourcedefinitions") {
			t.Errorf("the operator wrote a CRD with nothing to change: %s", w)
		}
	}
	// The edit, the restore and the restore's own watch event each wake
	// the certificate loop once or twice; then it sleeps. A loop that
	// hands the CRD injector its bundle and is woken back by an injector
	// pass that wrote nothing runs hundreds of passes a second.
	if n := testenv.MetricValue(t, "dynamo_operator_webhook_certificate_passes_total", nil) - passes; n > 10 {
		t.Errorf("the certificate loop ran %v passes for one edit of a CRD's bundle and 2 s of nothing; want at most 10", n)
	}

	// Conversion routed to another webhook with its own bundle: the
	// operator must not put its CA there.
	other := env.Conversion()
	if err := env.ApplyCRDs(context.Background(), other); err != nil {
		t.Fatal(err)
	}
	eventuallyCRDBundles(t, "the other webhook's", func() []byte { return other.CABundle })
	time.Sleep(2 * time.Second)
	eventuallyCRDBundles(t, "still the other webhook's", func() []byte { return other.CABundle })
}

// When no conversion endpoint answers, v1alpha1 (stored, and what the
// operator reads and writes) keeps working; v1beta1 requests fail with the
// API server's conversion error naming the webhook.
func TestNoConversionEndpoint(t *testing.T) {
	testenv.Long(t)
	op, port := startAuto(t, "no-conversion-cert")
	url := "https://127.0.0.1:" + port
	env.RouteConversion(t, crdinstall.Conversion{URL: url})
	eventuallyCRDBundles(t, "the operator's CA", func() []byte { return storedCA(t, "no-conversion-cert") })
	ns := env.Namespace(t, "no-conversion")
	waitForWebhook(t, ns)
	beta := builders.MakeBetaGraph("beta", ns).Component(builders.MakeBetaComponent("Frontend")).Obj()
	await.New(t).Eventually(func() error { return env.Client.Create(context.Background(), beta) }).Should(gomega.Succeed())

	op.Stop()
	// The admission webhooks are the same operator's: out of the way, so
	// that what is seen is conversion alone.
	deleteConfigurations(t)
	key := client.ObjectKeyFromObject(beta)
	if err := env.Client.Get(context.Background(), key, &v1alpha1.DynamoGraphDeployment{}); err != nil {
		t.Errorf("v1alpha1 get with no conversion endpoint: %v", err)
	}
	alpha := builders.MakeGraph("alpha", ns).Service("Frontend", builders.MakeEmptyService()).Obj()
	if err := env.Client.Create(context.Background(), alpha); err != nil {
		t.Errorf("v1alpha1 create with no conversion endpoint: %v", err)
	}
	err := env.Client.Get(context.Background(), key, &v1beta1.DynamoGraphDeployment{})
	want := fmt.Sprintf(`conversion webhook for nvidia.com/v1alpha1, Kind=DynamoGraphDeployment failed: Post "%s/convert?timeout=`, url)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("v1beta1 get with no conversion endpoint: got %v, want an error containing %q", err, want)
	}
	t.Logf("what a v1beta1 client sees: %v", err)
}

// The installer's server-side apply (crdinstall) never takes the bundle
// the operator or cert-manager injected, whoever re-applies the CRDs;
// cert-manager mode asks for injection with the annotation, and external
// mode applies the installer's bundle.
func TestInstallerLeavesTheInjectedBundle(t *testing.T) {
	testenv.Long(t)
	name := convertedCRDs(t)[0]
	own := crdinstall.Conversion{URL: "https://127.0.0.1:1"}
	t.Cleanup(func() {
		if err := env.ApplyCRDs(context.Background(), env.Conversion()); err != nil {
			t.Error(err)
		}
	})
	apply := func(c crdinstall.Conversion) {
		t.Helper()
		if err := env.ApplyCRDs(context.Background(), c); err != nil {
			t.Fatal(err)
		}
	}
	apply(own)
	injected := newTestCA(t).certPEM
	patch := client.RawPatch("application/merge-patch+json",
		[]byte(fmt.Sprintf(`{"spec":{"conversion":{"webhook":{"clientConfig":{"caBundle":%q}}}}}`, base64.StdEncoding.EncodeToString(injected))))
	if err := env.Client.Patch(context.Background(), &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: name}},
		patch, client.FieldOwner(certs.FieldOwner)); err != nil {
		t.Fatal(err)
	}
	apply(own)
	if got := crdBundle(t, name); !bytes.Equal(got, injected) {
		t.Errorf("re-applying the CRDs changed the injected bundle to %q", got)
	}

	apply(crdinstall.Conversion{URL: own.URL, InjectCAFrom: "dynamo-system/cert"})
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, crd); err != nil {
		t.Fatal(err)
	}
	if got := crd.Annotations[certs.CertManagerInjectAnnotation]; got != "dynamo-system/cert" {
		t.Errorf("cert-manager mode: %s is %q", certs.CertManagerInjectAnnotation, got)
	}

	external := newTestCA(t).certPEM
	apply(crdinstall.Conversion{URL: own.URL, CABundle: external})
	if got := crdBundle(t, name); !bytes.Equal(got, external) {
		t.Errorf("external mode: the bundle is %q, want the installer's", got)
	}
}

// A CRD whose conversion Service another field manager set (kubectl, a
// replace) is switched to a URL, and back, without an invalid state.
func TestInstallerSwitchesAnotherManagersEndpoint(t *testing.T) {
	testenv.Long(t)
	name := convertedCRDs(t)[0]
	t.Cleanup(func() {
		if err := env.ApplyCRDs(context.Background(), env.Conversion()); err != nil {
			t.Error(err)
		}
	})
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, crd); err != nil {
		t.Fatal(err)
	}
	port := int32(443)
	crd.Spec.Conversion.Webhook.ClientConfig = &apiextensionsv1.WebhookClientConfig{
		Service: &apiextensionsv1.ServiceReference{Namespace: "elsewhere", Name: "someone", Port: &port}}
	if err := env.Client.Update(context.Background(), crd, client.FieldOwner("kubectl")); err != nil {
		t.Fatal(err)
	}
	for _, conv := range []crdinstall.Conversion{{URL: "https://127.0.0.1:1"}, {ServiceNamespace: "dynamo-system", ServiceName: "dp-webhook"}} {
		if err := env.ApplyCRDs(context.Background(), conv); err != nil {
			t.Fatalf("applying %+v over another manager's endpoint: %v", conv, err)
		}
		want, _ := conv.ClientConfig()
		if err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, crd); err != nil {
			t.Fatal(err)
		}
		got := crd.Spec.Conversion.Webhook.ClientConfig
		got.CABundle = nil
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("clientConfig (-want +got):\n%s", d)
		}
	}
}
