package certs_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/internal/await"
	"github.com/dynamoctl/dynamo-operator/internal/builders"
	"github.com/dynamoctl/dynamo-operator/internal/testenv"
	"github.com/dynamoctl/dynamo-operator/operator/app"
	"github.com/dynamoctl/dynamo-operator/operator/certs"
	"github.com/dynamoctl/dynamo-operator/operator/crdinstall"
)

// frozenCRD is the CRD whose conversion webhook bundle freezeCRDBundle
// keeps from changing.
const frozenCRD = "dynamographdeployments.nvidia.com"

// freezeCRDBundle makes the API server refuse any change of the CRD's
// conversion webhook caBundle until the returned func is called: a CRD
// the operator cannot update, while its webhook configurations it can.
func freezeCRDBundle(t *testing.T) (thaw func()) {
	t.Helper()
	bundle := func(o string) string {
		cc := o + ".spec.conversion.webhook.clientConfig"
		return "(has(" + o + ".spec.conversion) && has(" + o + ".spec.conversion.webhook) && has(" + cc + ") && has(" + cc + ".caBundle) ? " + cc + ".caBundle : b'')"
	}
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "freeze-crd-bundle"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				ResourceNames: []string{frozenCRD},
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
					Rule: admissionregistrationv1.Rule{APIGroups: []string{"apiextensions.k8s.io"}, APIVersions: []string{"v1"},
						Resources: []string{"customresourcedefinitions"}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{Expression: bundle("object") + " == " + bundle("oldObject"), Message: "frozen"}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "freeze-crd-bundle"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: policy.Name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}},
	}
	for _, obj := range []client.Object{policy, binding} {
		if err := env.Client.Create(context.Background(), obj); err != nil {
			t.Fatal(err)
		}
	}
	thaw = func() {
		for _, obj := range []client.Object{binding, policy} {
			_ = env.Client.Delete(context.Background(), obj)
		}
	}
	t.Cleanup(thaw)
	// The API server takes the policy up from its watch: frozen once a
	// dry-run change is refused.
	await.New(t).Eventually(func() error {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := env.Client.Get(context.Background(), client.ObjectKey{Name: frozenCRD}, crd); err != nil {
			return err
		}
		crd.Spec.Conversion.Webhook.ClientConfig.CABundle = newTestCA(t).certPEM
		err := env.Client.Update(context.Background(), crd, client.DryRunAll)
		if err == nil || !strings.Contains(err.Error(), "frozen") {
			return errNotFrozen
		}
		return nil
	}).Should(gomega.Succeed())
	return thaw
}

var errWatching = errors.New("the freeze's window is still open")

var errNotFrozen = &annotationError{frozenCRD, "not frozen yet"}

// A new CA never signs while a CRD whose conversion webhook is the
// operator's does not trust it, though the webhook configurations do: with
// the CRD's bundle frozen through the time the CA rotates, the served
// certificate always verifies against the CRD's bundle, and the rotation
// completes once the CRD can take the new bundle. (A manager that counted
// the configurations' bundles alone fails here at the new CA's grace.)
func TestNewCAWaitsUntilTheCRDsTrustIt(t *testing.T) {
	testenv.Long(t)
	// The next CA enters the bundle at 45 s (CAValidity - CertValidity -
	// 2 grace) and may sign 7.5 s later; the freeze lasts to 62 s. Lifetimes
	// this long leave a loaded CI machine running -race 45 s to start the
	// operator and route conversion to it before the window opens.
	const certValidity, caValidity, frozenUntil = 30 * time.Second, 90 * time.Second, 62 * time.Second
	const secret = "crd-trust-cert"
	args := append(env.WebhookArgs(t), "--webhook-cert-secret="+secret,
		"--webhook-cert-validity="+certValidity.String(), "--webhook-ca-validity="+caValidity.String())
	op, err := env.NewOperator(args, app.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := op.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		op.Stop()
		deleteConfigurations(t)
		_ = env.Client.Delete(context.Background(), builders.MakeSecret(secret, testenv.OperatorNamespace).Obj())
	})
	port := webhookPort(t, args)
	env.RouteConversion(t, crdinstall.Conversion{URL: "https://127.0.0.1:" + port})
	eventuallyCRDBundles(t, "the operator's CA", func() []byte { return storedCA(t, secret) })
	// The window counts from the CA's own issue (its NotAfter less its
	// validity), not from the operator's start: on a loaded machine the start
	// can take much of the window, and the next CA comes on the CA's clock.
	issued := start
	if cas, _ := certs.ParseCertificates(storedCA(t, secret)); len(cas) == 1 {
		issued = cas[0].NotAfter.Add(-caValidity)
	}
	thaw := freezeCRDBundle(t)

	frozen := crdBundle(t, frozenCRD)
	pending := false // a next CA waited in the Secret during the freeze
	// A loaded machine may add the next CA late: watch on while none came,
	// short of the frozen CA's own expiry.
	watching := func() bool {
		return time.Since(issued) < frozenUntil || (!pending && time.Since(issued) < caValidity-3*time.Second)
	}
	// Polled until the window ends; a certificate the frozen bundle does not
	// verify stops the watch and fails the test.
	await.New(t).Eventually(func() error {
		if !watching() {
			return nil
		}
		if _, err := dialVerified(port, frozen); err != nil {
			return gomega.StopTrying(fmt.Sprintf("at %s the operator serves a certificate the CRD's bundle does not verify",
				time.Since(start).Round(time.Millisecond))).Wrap(err)
		}
		if cas, _ := certs.ParseCertificates(storedCA(t, secret)); len(cas) > 1 {
			pending = true
		}
		return errWatching
	}).WithTimeout(caValidity).WithPolling(100*time.Millisecond).Should(gomega.Succeed(), "the freeze's window ends")
	if !pending {
		t.Fatal("no new CA came during the freeze: the test proves nothing")
	}
	thaw()
	// The CRD takes the new bundle, then the new CA signs.
	await.New(t).Eventually(func() error {
		_, err := dialVerified(port, frozen)
		return err
	}).Should(gomega.MatchError(gomega.ContainSubstring("unknown authority")), "the new CA signs once the CRD can trust it")
	if _, err := dialVerified(port, crdBundle(t, frozenCRD)); err != nil {
		t.Errorf("the CRD's bundle does not verify the certificate the new CA signed: %v", err)
	}
}

// A replica is not ready while the API server would refuse to call it: a
// first install's `helm install --wait` must not return while the CRDs do
// not trust the operator's new CA, or the first v1beta1 graph's create is
// refused ("x509: certificate signed by unknown authority"). With the CRD's
// bundle frozen, the operator makes its CA and injects the webhook
// configurations, and stays not ready; once the CRD can take the CA, it is.
func TestNotReadyUntilTheCRDsTrustTheCA(t *testing.T) {
	const secret = "ready-trust-cert"
	health, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	args := append(env.WebhookArgs(t), "--webhook-cert-secret="+secret,
		"--health-probe-bind-address=127.0.0.1:"+strconv.Itoa(health))
	env.RouteConversion(t, crdinstall.Conversion{URL: "https://127.0.0.1:" + webhookPort(t, args)})
	thaw := freezeCRDBundle(t)
	t.Cleanup(func() { // after the operator stops
		deleteConfigurations(t)
		_ = env.Client.Delete(context.Background(), builders.MakeSecret(secret, testenv.OperatorNamespace).Obj())
	})
	env.StartOperator(context.Background(), t, args...)
	readyz := func() error {
		resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(health) + "/readyz")
		if err != nil {
			return err
		}
		defer func() { _ = resp.Body.Close() }()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/readyz %d: %s", resp.StatusCode, body)
		}
		return nil
	}

	// The operator acts: its CA is in the Secret and in the validating
	// configuration, and it serves a certificate that CA signed.
	g := await.New(t)
	g.Eventually(func(g gomega.Gomega) {
		ca := storedCA(t, secret)
		g.Expect(ca).NotTo(gomega.BeEmpty())
		vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(configurations()[0]), vwc)).To(gomega.Succeed())
		g.Expect(vwc.Webhooks).NotTo(gomega.BeEmpty())
		g.Expect(vwc.Webhooks[0].ClientConfig.CABundle).To(gomega.Equal(ca))
		_, err := dialVerified(webhookPort(t, args), ca)
		g.Expect(err).NotTo(gomega.HaveOccurred())
	}).Should(gomega.Succeed(), "the operator made its CA, injected the configurations and serves")
	if bytes.Equal(crdBundle(t, frozenCRD), storedCA(t, secret)) {
		t.Fatal("the frozen CRD holds the operator's CA: the test proves nothing")
	}
	g.Consistently(readyz).ShouldNot(gomega.Succeed(), "not ready while the CRD does not trust the CA")

	thaw()
	eventuallyCRDBundles(t, "the operator's CA", func() []byte { return storedCA(t, secret) })
	g.Eventually(readyz).Should(gomega.Succeed(), "ready once every bundle trusts the CA")
}
