package steps

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"strings"
	"sync"
	"time"

	"github.com/dynamoctl/dynamo-operator/internal/await"
	"github.com/dynamoctl/dynamo-operator/operator/certs"

	"github.com/cucumber/godog"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Steps about admission webhooks and their certificates.

// webhookWorld is the per-scenario state of these steps, kept beside world
// so that world stays as the other step files know it.
type webhookWorld struct {
	mu       sync.Mutex
	warnings []string

	// sender is the admission load of "I keep sending admission requests".
	sender       *admissionSender
	secretBefore []byte // tls.crt when a renewal was provoked
}

var webhookWorlds sync.Map // *world -> *webhookWorld

func (w *world) webhooks() *webhookWorld {
	v, _ := webhookWorlds.LoadOrStore(w, &webhookWorld{})
	return v.(*webhookWorld)
}

// Webhook configuration names of a cluster-wide operator (see
// operator/webhooks.Configurations).
var webhookConfigurations = []client.Object{
	&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "dynamo-operator-validating"}},
	&admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "dynamo-operator-mutating"}},
}

func registerWebhookSteps(sc *godog.ScenarioContext, w *world) {
	sc.Step(`^I try to patch the (\S+) `+quoted+` with:$`, w.tryPatch)
	sc.Step(`^I apply the manifest and keep the warnings:$`, w.applyKeepingWarnings)
	sc.Step(`^it is accepted with a warning containing `+quoted+`$`, unquote1(w.acceptedWithWarning))
	sc.Step(`^the (\S+) `+quoted+` has the annotation `+quoted+`$`, w.hasAnnotation)
	sc.Step(`^every webhook of the operator's configurations trusts the CA of its certificate Secret$`, w.certSecretStep(w.configurationsTrustSecret))
	sc.Step(`^I remove the CA bundle from the operator's webhook configurations$`, w.removeCABundle)
	sc.Step(`^every webhook of the operator's configurations eventually trusts the CA of its certificate Secret$`, w.certSecretStep(w.eventuallyTrustSecret))
	sc.Step(`^the serving certificate in the operator's certificate Secret is about to expire$`, w.certSecretStep(w.certificateAboutToExpire))
	sc.Step(`^the serving certificate in the operator's certificate Secret is eventually renewed for at least (\d+) minutes$`, func(ctx context.Context, minutes int) error {
		s := w.certSecret()
		return w.certificateRenewed(ctx, s.Name, s.Namespace, minutes)
	})
	sc.Step(`^I keep sending admission requests$`, w.keepSending)
	sc.Step(`^no admission request has failed$`, w.noAdmissionFailed)
	sc.After(func(ctx context.Context, _ *godog.Scenario, err error) (context.Context, error) {
		if ww, ok := webhookWorlds.LoadAndDelete(w); ok {
			ww.(*webhookWorld).halt()
		}
		return ctx, nil
	})
}

// tryPatch is patchWith for a patch that may be rejected: the rejection is
// kept for "it is rejected with a message containing".
func (w *world) tryPatch(ctx context.Context, kind, name string, doc *godog.DocString) error {
	_ = w.patchWith(ctx, kind, name, doc)
	return nil
}

type warningRecorder struct{ ww *webhookWorld }

func (r warningRecorder) HandleWarningHeader(_ int, _ string, text string) {
	r.ww.mu.Lock()
	defer r.ww.mu.Unlock()
	r.ww.warnings = append(r.ww.warnings, text)
}

func (w *world) applyKeepingWarnings(ctx context.Context, doc *godog.DocString) error {
	objs, err := ParseManifests([]byte(doc.Content))
	if err != nil {
		return fmt.Errorf("the manifest in the feature file does not parse: %w", err)
	}
	ww := w.webhooks()
	cfg := rest.CopyConfig(w.cluster.Config)
	cfg.WarningHandler = warningRecorder{ww}
	c, err := client.New(cfg, client.Options{Scheme: w.cluster.Client.Scheme(), Mapper: w.cluster.Client.RESTMapper()})
	if err != nil {
		return err
	}
	w.applied, w.lastErr = objs, nil
	for _, obj := range objs {
		live := obj.DeepCopy()
		if live.GetNamespace() == "" {
			live.SetNamespace(w.namespace)
		}
		if w.lastErr = c.Apply(ctx, client.ApplyConfigurationFromUnstructured(live), client.FieldOwner(FieldOwner), client.ForceOwnership); w.lastErr != nil {
			break
		}
	}
	return nil
}

func (w *world) acceptedWithWarning(_ context.Context, text string) error {
	if err := w.accepted(); err != nil {
		return err
	}
	ww := w.webhooks()
	ww.mu.Lock()
	defer ww.mu.Unlock()
	for _, m := range ww.warnings {
		if strings.Contains(m, text) {
			return nil
		}
	}
	return fmt.Errorf("no warning contains %q; warnings: %q", text, ww.warnings)
}

func (w *world) hasAnnotation(ctx context.Context, kind, name, key string) error {
	obj, err := w.object(kind, name)
	if err != nil {
		return err
	}
	if err := w.cluster.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		return err
	}
	if v := obj.GetAnnotations()[key]; v == "" {
		return fmt.Errorf("%s %q has no annotation %s; annotations: %v", kind, name, key, obj.GetAnnotations())
	}
	return nil
}

func (w *world) secret(ctx context.Context, ns, name string) (*corev1.Secret, error) {
	s := &corev1.Secret{}
	if err := w.cluster.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, s); err != nil {
		return nil, fmt.Errorf("reading the Secret %s/%s: %w", ns, name, err)
	}
	return s, nil
}

// configurationBundles lists, per webhook of the operator's
// configurations, its caBundle.
func (w *world) configurationBundles(ctx context.Context) (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, proto := range webhookConfigurations {
		obj := proto.DeepCopyObject().(client.Object)
		if err := w.cluster.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return nil, err
		}
		switch c := obj.(type) {
		case *admissionregistrationv1.ValidatingWebhookConfiguration:
			for _, wh := range c.Webhooks {
				out[c.Name+"/"+wh.Name] = wh.ClientConfig.CABundle
			}
		case *admissionregistrationv1.MutatingWebhookConfiguration:
			for _, wh := range c.Webhooks {
				out[c.Name+"/"+wh.Name] = wh.ClientConfig.CABundle
			}
		}
	}
	return out, nil
}

// configurationsTrustSecret: the serving certificate of the Secret verifies
// against every webhook's caBundle, i.e. the API server can call it.
// certSecret is the operator's webhook certificate Secret: the chart's
// where the suite runs on the chart-installed operator, else the in-process
// operator's.
func (w *world) certSecret() types.NamespacedName {
	if w.cluster.WebhookCertSecret.Name != "" {
		return w.cluster.WebhookCertSecret
	}
	return types.NamespacedName{Namespace: "dynamo", Name: "dynamo-operator-webhook-cert"}
}

func (w *world) certSecretStep(f func(ctx context.Context, name, ns string) error) func(context.Context) error {
	return func(ctx context.Context) error {
		s := w.certSecret()
		return f(ctx, s.Name, s.Namespace)
	}
}

func (w *world) configurationsTrustSecret(ctx context.Context, name, ns string) error {
	s, err := w.secret(ctx, ns, name)
	if err != nil {
		return err
	}
	serving, err := firstCert(s.Data[corev1.TLSCertKey])
	if err != nil {
		return fmt.Errorf("the Secret's tls.crt: %w", err)
	}
	bundles, err := w.configurationBundles(ctx)
	if err != nil {
		return err
	}
	if len(bundles) == 0 {
		return fmt.Errorf("the operator's configurations have no webhooks")
	}
	for webhook, bundle := range bundles {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(bundle) {
			return fmt.Errorf("webhook %s has no CA bundle", webhook)
		}
		if _, err := serving.Verify(x509.VerifyOptions{Roots: pool}); err != nil {
			return fmt.Errorf("webhook %s does not trust the serving certificate: %w", webhook, err)
		}
	}
	return nil
}

func (w *world) eventuallyTrustSecret(ctx context.Context, name, ns string) error {
	return w.eventually(ctx, "every webhook trusting the CA of the Secret "+ns+"/"+name, func() error { return w.configurationsTrustSecret(ctx, name, ns) })
}

func (w *world) removeCABundle(ctx context.Context) error {
	for _, proto := range webhookConfigurations {
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error { return w.removeCABundleOf(ctx, proto) }); err != nil {
			return err
		}
	}
	return nil
}

func (w *world) removeCABundleOf(ctx context.Context, proto client.Object) error {
	obj := proto.DeepCopyObject().(client.Object)
	if err := w.cluster.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		return err
	}
	switch c := obj.(type) {
	case *admissionregistrationv1.ValidatingWebhookConfiguration:
		for i := range c.Webhooks {
			c.Webhooks[i].ClientConfig.CABundle = nil
		}
	case *admissionregistrationv1.MutatingWebhookConfiguration:
		for i := range c.Webhooks {
			c.Webhooks[i].ClientConfig.CABundle = nil
		}
	}
	// An update, as kubectl edit would send.
	return w.cluster.Client.Update(ctx, obj)
}

// certificateAboutToExpire replaces the Secret's serving certificate with
// one of the same CA and names that expires in a minute, as if its time had
// come, without waiting for it.
func (w *world) certificateAboutToExpire(ctx context.Context, name, ns string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error { return w.shortenCertificate(ctx, name, ns) })
}

func (w *world) shortenCertificate(ctx context.Context, name, ns string) error {
	s, err := w.secret(ctx, ns, name)
	if err != nil {
		return err
	}
	serving, err := firstCert(s.Data[corev1.TLSCertKey])
	if err != nil {
		return err
	}
	caKey, err := certs.ParsePrivateKey(s.Data["ca.key"])
	if err != nil {
		return fmt.Errorf("the Secret's ca.key: %w", err)
	}
	var ca *x509.Certificate
	cas, _ := certs.ParseCertificates(s.Data["ca.crt"])
	for _, c := range cas {
		if serving.CheckSignatureFrom(c) == nil {
			ca = c
		}
	}
	if ca == nil {
		return fmt.Errorf("no CA of ca.crt signed the serving certificate")
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: serving.Subject.CommonName},
		DNSNames:     serving.DNSNames,
		IPAddresses:  serving.IPAddresses,
		NotBefore:    time.Now().Add(-time.Minute),
		NotAfter:     time.Now().Add(time.Minute),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, key.Public(), caKey)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	s.Data[corev1.TLSCertKey] = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	s.Data[corev1.TLSPrivateKeyKey] = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	w.webhooks().secretBefore = s.Data[corev1.TLSCertKey]
	return w.cluster.Client.Update(ctx, s)
}

func (w *world) certificateRenewed(ctx context.Context, name, ns string, minutes int) error {
	return w.eventually(ctx, fmt.Sprintf("the certificate in %s/%s renewed for at least %d minutes", ns, name, minutes), func() error {
		s, err := w.secret(ctx, ns, name)
		if err != nil {
			return err
		}
		c, err := firstCert(s.Data[corev1.TLSCertKey])
		if err != nil {
			return err
		}
		if left := time.Until(c.NotAfter); left < time.Duration(minutes)*time.Minute {
			return fmt.Errorf("the serving certificate expires in %s", left.Round(time.Second))
		}
		return nil
	})
}

// admissionProbe is a valid one-service graph to send as a dry-run create
// through the webhooks: admitted, it comes back defaulted.
func admissionProbe(name, namespace string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "nvidia.com/v1alpha1", "kind": "DynamoGraphDeployment",
		"metadata": map[string]any{"name": name, "namespace": namespace},
		"spec":     map[string]any{"services": map[string]any{"Frontend": map[string]any{"componentType": "frontend"}}},
	}}
}

// keepSending sends a dry-run create of a valid graph every 50ms, through
// the mutating and validating webhooks, until noAdmissionFailed.
func (w *world) keepSending(context.Context) error {
	ww := w.webhooks()
	graph := admissionProbe("admission-probe", w.namespace)
	ww.sender = startAdmissionSender(w.cluster.Client, 50*time.Millisecond,
		func(int) *unstructured.Unstructured { return graph.DeepCopy() },
		func(obj *unstructured.Unstructured) error {
			// The defaulting webhook ran too.
			if r, _, _ := unstructured.NestedInt64(obj.Object, "spec", "services", "Frontend", "replicas"); r != 1 {
				return fmt.Errorf("not defaulted: %v", obj.Object["spec"])
			}
			return nil
		})
	return nil
}

func (ww *webhookWorld) halt() {
	if ww.sender != nil {
		ww.sender.halt()
	}
}

func (w *world) noAdmissionFailed(ctx context.Context) error {
	ww := w.webhooks()
	a := ww.sender
	if a == nil {
		return fmt.Errorf("no admission requests are being sent")
	}
	// Keep sending for a second at least, so that requests straddle the
	// change the scenario made. Up to 5 s: fewer requests sent by then are
	// judged below as they are.
	_ = await.Until(ctx, "20 admission requests sent", func() error {
		if n := a.sent.Load(); n < 20 {
			return fmt.Errorf("%d sent", n)
		}
		return nil
	}, await.Within(5*time.Second), await.Every(10*time.Millisecond))
	a.halt()
	ww.sender = nil
	sent, failed := a.sent.Load(), a.failed.Load()
	fmt.Printf("admissions sent=%d failed=%d\n", sent, failed)
	if sent == 0 {
		return fmt.Errorf("no admission request was sent")
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d admission requests failed, first: %v", failed, sent, a.Failures()[0])
	}
	return nil
}

func firstCert(data []byte) (*x509.Certificate, error) {
	all, err := certs.ParseCertificates(data)
	if err != nil {
		return nil, err
	}
	return all[0], nil
}
