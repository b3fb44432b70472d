package certs_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/internal/await"
	"github.com/dynamoctl/dynamo-operator/internal/builders"
	"github.com/dynamoctl/dynamo-operator/internal/testenv"
	"github.com/dynamoctl/dynamo-operator/operator/certs"
	"github.com/dynamoctl/dynamo-operator/operator/webhooks"
)

// startInMode runs an operator in a certificate mode with the given Secret;
// the webhook configurations are deleted afterwards, so that each test
// starts from none.
func startInMode(t *testing.T, mode, secret string) (*testenv.Operator, string) {
	t.Helper()
	args := append(env.WebhookArgs(t), "--webhook-cert-mode="+mode, "--webhook-cert-secret="+secret)
	t.Cleanup(func() { deleteConfigurations(t) }) // after the operator stops
	return env.StartOperator(context.Background(), t, args...), webhookPort(t, args)
}

func deleteConfigurations(t *testing.T) {
	for _, obj := range configurations() {
		if err := env.Client.Delete(context.Background(), obj); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting %s: %v", obj.GetName(), err)
		}
	}
}

func configurations() []client.Object {
	return []client.Object{
		&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: webhooks.ValidatingConfigurationName("")}},
		&admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: webhooks.MutatingConfigurationName("")}},
	}
}

func createSecret(t *testing.T, name string, data map[string][]byte) {
	t.Helper()
	if err := env.EnsureNamespace(context.Background(), testenv.OperatorNamespace); err != nil {
		t.Fatal(err)
	}
	s := builders.MakeSecret(name, testenv.OperatorNamespace).TLS(data).Obj()
	if err := env.Client.Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), s) })
}

// eventuallyConfigurations waits until both configurations exist and check
// holds for each, returning them.
func eventuallyConfigurations(t *testing.T, check func(client.Object) error) []client.Object {
	t.Helper()
	var objs []client.Object
	await.New(t).Eventually(func() error {
		objs = configurations()
		for _, obj := range objs {
			if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
				return err
			}
			if err := check(obj); err != nil {
				return err
			}
		}
		return nil
	}).Should(gomega.Succeed(), "both webhook configurations exist and hold")
	return objs
}

func bundles(obj client.Object) [][]byte {
	var out [][]byte
	switch c := obj.(type) {
	case *admissionregistrationv1.ValidatingWebhookConfiguration:
		for _, w := range c.Webhooks {
			out = append(out, w.ClientConfig.CABundle)
		}
	case *admissionregistrationv1.MutatingWebhookConfiguration:
		for _, w := range c.Webhooks {
			out = append(out, w.ClientConfig.CABundle)
		}
	}
	return out
}

// setBundle stands in for the installer or cert-manager's CA injector.
func setBundle(t *testing.T, bundle []byte) {
	t.Helper()
	for _, obj := range configurations() {
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
			t.Fatal(err)
		}
		switch c := obj.(type) {
		case *admissionregistrationv1.ValidatingWebhookConfiguration:
			for i := range c.Webhooks {
				c.Webhooks[i].ClientConfig.CABundle = bundle
			}
		case *admissionregistrationv1.MutatingWebhookConfiguration:
			for i := range c.Webhooks {
				c.Webhooks[i].ClientConfig.CABundle = bundle
			}
		}
		if err := env.Client.Update(context.Background(), obj, client.FieldOwner("installer")); err != nil {
			t.Fatal(err)
		}
	}
}

func servedSerial(t *testing.T, port string, ca []byte) string {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", "127.0.0.1:"+port,
		&tls.Config{RootCAs: pool, ServerName: "127.0.0.1"})
	if err != nil {
		return "dial: " + err.Error()
	}
	defer func() { _ = conn.Close() }()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber.String()
}

func eventuallyServes(t *testing.T, port string, ca []byte, serial string) {
	t.Helper()
	await.New(t).Eventually(func() string { return servedSerial(t, port, ca) }).
		Should(gomega.Equal(serial), "the serial of the certificate the webhook server serves")
}

// In external mode the operator serves the Secret it is given, creates its
// configurations without a CA bundle and never touches the bundle the
// installer sets.
func TestExternalModeServesTheGivenSecretAndLeavesTheBundle(t *testing.T) {
	ca := newTestCA(t)
	certPEM, keyPEM, serial := ca.serving(t)
	createSecret(t, "external-cert", map[string][]byte{corev1.TLSCertKey: certPEM, corev1.TLSPrivateKeyKey: keyPEM})
	op, port := startInMode(t, "external", "external-cert")

	eventuallyConfigurations(t, func(obj client.Object) error {
		for _, b := range bundles(obj) {
			if len(b) != 0 {
				t.Errorf("%s: the operator set a CA bundle in external mode", obj.GetName())
			}
		}
		return nil
	})
	eventuallyServes(t, port, ca.certPEM, serial)
	setBundle(t, ca.certPEM)
	ns := env.Namespace(t, "external")
	waitForWebhook(t, ns)

	mark := op.Writes()
	time.Sleep(2 * time.Second)
	for _, obj := range eventuallyConfigurations(t, func(client.Object) error { return nil }) {
		for _, b := range bundles(obj) {
			if string(b) != string(ca.certPEM) {
				t.Errorf("%s: the installer's CA bundle was changed", obj.GetName())
			}
		}
	}
	for _, w := range op.WritesSince(mark) {
		if strings.Contains(w, "webhookconfigurations") || strings.Contains(w, "/secrets") {
			t.Errorf("the operator wrote in external mode with nothing to change: %s", w)
		}
	}
}

// In cert-manager mode the configurations ask cert-manager to inject the CA
// of the Certificate; a certificate cert-manager renews is served without
// a restart.
func TestCertManagerModeAnnotatesAndServesRenewals(t *testing.T) {
	ca := newTestCA(t)
	certPEM, keyPEM, serial := ca.serving(t)
	createSecret(t, "cm-cert", map[string][]byte{"ca.crt": ca.certPEM, corev1.TLSCertKey: certPEM, corev1.TLSPrivateKeyKey: keyPEM})
	_, port := startInMode(t, "cert-manager", "cm-cert")

	eventuallyConfigurations(t, func(obj client.Object) error {
		if got := obj.GetAnnotations()[certs.CertManagerInjectAnnotation]; got != testenv.OperatorNamespace+"/cm-cert" {
			return &annotationError{obj.GetName(), got}
		}
		for _, b := range bundles(obj) {
			if len(b) != 0 {
				t.Errorf("%s: the operator set a CA bundle in cert-manager mode", obj.GetName())
			}
		}
		return nil
	})
	eventuallyServes(t, port, ca.certPEM, serial)
	setBundle(t, ca.certPEM) // what cert-manager's CA injector does
	waitForWebhook(t, env.Namespace(t, "cert-manager"))

	// cert-manager renews: the new pair is served, no restart.
	renewedCert, renewedKey, renewedSerial := ca.serving(t)
	s := &corev1.Secret{}
	if err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: testenv.OperatorNamespace, Name: "cm-cert"}, s); err != nil {
		t.Fatal(err)
	}
	s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey] = renewedCert, renewedKey
	if err := env.Client.Update(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	eventuallyServes(t, port, ca.certPEM, renewedSerial)
	waitForWebhook(t, env.Namespace(t, "cert-manager-renewed"))
}

type annotationError struct{ name, got string }

func (e *annotationError) Error() string {
	return e.name + ": " + certs.CertManagerInjectAnnotation + " is " + e.got
}
