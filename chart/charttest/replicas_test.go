package charttest

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/internal/await"
	"github.com/dynamoctl/dynamo-operator/internal/builders"
	"github.com/dynamoctl/dynamo-operator/internal/testenv"
	"github.com/dynamoctl/dynamo-operator/operator/webhooks"
)

// TestEveryReplicaServes: with two replicas, each run with the chart's
// flags, RBAC and certificate mode (auto), the replica that does not lead
// is Ready (its readiness is its webhook server's, not leadership) and
// answers admission and conversion requests itself, over TLS the webhook
// Service's name and the certificate Secret's CA verify. So the webhook
// Service keeps an endpoint while either replica restarts.
func TestEveryReplicaServes(t *testing.T) {
	ctx := context.Background()
	g := await.New(t)
	h := newHelm(t)
	ns := env.Namespace(t, "replicas")
	release := "ha"
	// Namespace-scoped: it coexists with the cluster-wide releases other
	// tests install, and leaves the CRDs' conversion webhook alone. No
	// pod backs the webhook Service here: writes through the API server
	// must not wait for it.
	sets := []string{"--set", "dynamo-operator.namespaceRestriction.enabled=true",
		"--set", "dynamo-operator.controllerManager.replicas=2", "--set", "dynamo-operator.webhook.failurePolicy=Ignore"}
	h.mustRun(append([]string{"install", release, chartDir(t), "--namespace", ns}, sets...)...)
	t.Cleanup(func() { h.mustRun("uninstall", release, "--namespace", ns, "--wait") })
	objs := h.template(release, ns, sets...)
	wantArgs(t, containerArgs(t, objs), "--leader-elect=true")

	type replica struct {
		op               *testenv.Operator
		health, webhooks int
	}
	log := &requestLog{}
	replicas := map[string]*replica{}
	for _, name := range []string{"replica-1", "replica-2"} {
		r := &replica{health: freePort(t), webhooks: freePort(t)}
		r.op = startChartOperator(t, objs, ns, log,
			"--health-probe-bind-address=127.0.0.1:"+strconv.Itoa(r.health), "--webhook-port="+strconv.Itoa(r.webhooks))
		replicas[name] = r
	}

	// One leads (it renews the election Lease), the other stands by.
	lease := "dynamo-operator-leader-" + ns
	var leader, standby string
	g.Eventually(func() error {
		leader, standby = "", ""
		for name, r := range replicas {
			if len(r.op.LeaseRenewals(ns, lease)) > 0 {
				leader = name
			} else {
				standby = name
			}
		}
		if leader == "" || standby == "" {
			return fmt.Errorf("leader %q, standby %q", leader, standby)
		}
		return nil
	}).Should(gomega.Succeed())

	// Both Ready, the standby included.
	for name, r := range replicas {
		g.Eventually(func() error { return ready(ctx, r.health) }).Should(gomega.Succeed(), "%s Ready", name)
	}

	// The standby serves with the certificate the Secret's CA signed.
	secret := &corev1.Secret{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: release + "-dynamo-operator-webhook-cert"}, secret); err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(secret.Data["ca.crt"]) {
		t.Fatalf("the certificate Secret holds no CA: %v", secret.Data)
	}
	https := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: pool, ServerName: release + "-dynamo-operator-webhook." + ns + ".svc", MinVersion: tls.VersionTLS12}}}
	base := "https://127.0.0.1:" + strconv.Itoa(replicas[standby].webhooks)

	graph := builders.MakeGraph("llm", ns).Service("Worker", builders.MakeService()).Obj()
	raw, err := json.Marshal(graph)
	if err != nil {
		t.Fatal(err)
	}
	admission := &admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{UID: types.UID("admission-1"), Operation: admissionv1.Create,
			Kind:      metav1.GroupVersionKind{Group: "nvidia.com", Version: "v1alpha1", Kind: "DynamoGraphDeployment"},
			Resource:  metav1.GroupVersionResource{Group: "nvidia.com", Version: "v1alpha1", Resource: "dynamographdeployments"},
			Namespace: ns, Name: graph.Name, Object: runtime.RawExtension{Raw: raw}},
	}
	if err := post(ctx, https, base+"/validate-nvidia-com-v1alpha1-dynamographdeployment", admission); err != nil {
		t.Fatalf("the standby's admission webhook: %v", err)
	}
	if r := admission.Response; r == nil || r.UID != "admission-1" || !r.Allowed {
		t.Errorf("the standby's admission response %+v, want the graph allowed", r)
	}

	conversion := &apiextensionsv1.ConversionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "ConversionReview"},
		Request: &apiextensionsv1.ConversionRequest{UID: types.UID("conversion-1"), DesiredAPIVersion: "nvidia.com/v1beta1",
			Objects: []runtime.RawExtension{{Raw: raw}}},
	}
	if err := post(ctx, https, base+webhooks.PathConvert, conversion); err != nil {
		t.Fatalf("the standby's conversion webhook: %v", err)
	}
	r := conversion.Response
	if r == nil || r.UID != "conversion-1" || r.Result.Status != metav1.StatusSuccess || len(r.ConvertedObjects) != 1 {
		t.Fatalf("the standby's conversion response %+v, want one object converted", r)
	}
	var converted metav1.TypeMeta
	if err := json.Unmarshal(r.ConvertedObjects[0].Raw, &converted); err != nil || converted.APIVersion != "nvidia.com/v1beta1" {
		t.Errorf("converted to %+v (%v), want nvidia.com/v1beta1", converted, err)
	}

	// It did all that standing by.
	if n := len(replicas[standby].op.LeaseRenewals(ns, lease)); n > 0 {
		t.Errorf("the standby renewed the election Lease %d times during the test", n)
	}
	if f := log.Forbidden(); len(f) > 0 {
		t.Errorf("a replica was refused with the chart's RBAC: %v", f)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	p, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// ready is nil when the health server on port answers /readyz with 200,
// as the kubelet's readiness probe asks.
func ready(ctx context.Context, port int) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://127.0.0.1:"+strconv.Itoa(port)+"/readyz", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("/readyz %d: %s", resp.StatusCode, body)
	}
	return nil
}

// post sends review as JSON to url, as the API server calls webhooks, and
// decodes the answer into it.
func post(ctx context.Context, c *http.Client, url string, review any) error {
	body, err := json.Marshal(review)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %d %s", url, resp.StatusCode, out)
	}
	return json.Unmarshal(out, review)
}
