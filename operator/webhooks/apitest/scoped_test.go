package apitest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"strings"
	"testing"

	"github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/internal/await"
	"github.com/dynamoctl/dynamo-operator/operator/app"
	"github.com/dynamoctl/dynamo-operator/operator/webhooks"
)

// A namespace-scoped operator's webhook configurations are named after its
// namespace and select only it, so they coexist with a cluster-wide
// operator's; its webhook judges objects there.
func TestNamespaceScopedOperatorHasItsOwnConfigurations(t *testing.T) {
	operator(t) // the cluster-wide operator runs too
	ns := env.Namespace(t, "scoped")
	args := append(env.WebhookArgs(t), "--restrict-namespace="+ns, "--webhook-cert-secret=webhook-cert-"+ns)
	local, err := env.NewOperator(args, app.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	if err := local.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: webhooks.ValidatingConfigurationName(ns)}}
	mwc := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: webhooks.MutatingConfigurationName(ns)}}
	t.Cleanup(func() {
		local.Stop()
		// Nothing else would serve them once the operator is gone.
		for _, obj := range []client.Object{vwc, mwc} {
			if err := env.Client.Delete(context.Background(), obj); err != nil && !apierrors.IsNotFound(err) {
				t.Error(err)
			}
		}
	})

	if !strings.HasSuffix(vwc.Name, "-"+ns) || !strings.HasSuffix(mwc.Name, "-"+ns) {
		t.Fatalf("names %s, %s lack the namespace suffix", vwc.Name, mwc.Name)
	}
	await.New(t).Eventually(func(g gomega.Gomega) {
		g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(vwc), vwc)).To(gomega.Succeed())
		g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(mwc), mwc)).To(gomega.Succeed())
		g.Expect(vwc.Webhooks).NotTo(gomega.BeEmpty())
		g.Expect(vwc.Webhooks[0].ClientConfig.CABundle).NotTo(gomega.BeEmpty())
	}).Should(gomega.Succeed(), "the namespace-scoped configurations appear with a CA bundle")
	for _, sel := range []*metav1.LabelSelector{vwc.Webhooks[0].NamespaceSelector, mwc.Webhooks[0].NamespaceSelector} {
		if sel == nil || len(sel.MatchLabels) != 1 || sel.MatchLabels["kubernetes.io/metadata.name"] != ns {
			t.Errorf("namespaceSelector %v, want kubernetes.io/metadata.name=%s", sel, ns)
		}
	}
	// The API server can call the local webhook server: what it serves
	// verifies against the bundle of the local configuration.
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(vwc.Webhooks[0].ClientConfig.CABundle)
	addr := "127.0.0.1:" + port(args)
	if url := vwc.Webhooks[0].ClientConfig.URL; url == nil || !strings.HasPrefix(*url, "https://"+addr+"/") {
		t.Errorf("the local configuration calls %v, want https://%s/...", url, addr)
	}
	conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"})
	if err != nil {
		t.Errorf("the local webhook server is not trusted by its configuration: %v", err)
	} else {
		_ = conn.Close()
	}
	// The cluster-wide configuration is still there, unchanged in name.
	cluster := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Name: webhooks.ValidatingConfigurationName("")}, cluster); err != nil {
		t.Errorf("the cluster-wide configuration: %v", err)
	}

	// Both configurations match the namespace; the cluster-wide operator
	// lets it through once it has seen the local operator's Lease
	// (TestClusterWideWebhooksLetScopedNamespacesThrough), so the denial
	// is the local webhook's.
	await.New(t).Eventually(func() error {
		return env.Client.Create(context.Background(), badGraph(ns), client.DryRunAll)
	}).Should(gomega.MatchError(gomega.ContainSubstring("denied the request")), "a webhook judges the graph in the operator's namespace")
}

func port(args []string) string {
	for _, a := range args {
		if p, ok := strings.CutPrefix(a, "--webhook-port="); ok {
			return p
		}
	}
	return ""
}
