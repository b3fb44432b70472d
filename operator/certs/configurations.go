package certs

import (
	"context"
	"crypto/x509"
	"fmt"
	"reflect"
	"sync"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/operator/apply"
	"github.com/dynamoctl/dynamo-operator/operator/config"
)

// FieldOwner is the server-side apply field manager of the webhook
// configurations.
const FieldOwner = "dynamo-operator"

// CertManagerInjectAnnotation asks cert-manager's CA injector to fill
// caBundle from a Certificate, as <namespace>/<certificate>.
const CertManagerInjectAnnotation = "cert-manager.io/inject-ca-from"

// desiredConfigurations are the configurations as the mode wants them:
// with the bundle in auto mode, with the inject annotation in cert-manager
// mode, and without caBundle (left to whoever sets it) otherwise.
func (m *Manager) desiredConfigurations(bundle []byte) []client.Object {
	v, mu := m.o.Validating.DeepCopy(), m.o.Mutating.DeepCopy()
	switch m.o.Mode {
	case config.WebhookCertModeAuto:
		for i := range v.Webhooks {
			v.Webhooks[i].ClientConfig.CABundle = bundle
		}
		for i := range mu.Webhooks {
			mu.Webhooks[i].ClientConfig.CABundle = bundle
		}
	case config.WebhookCertModeCertManager:
		ref := m.o.Namespace + "/" + m.o.CertManagerCertificate
		for _, obj := range []client.Object{v, mu} {
			ann := obj.GetAnnotations()
			if ann == nil {
				ann = map[string]string{}
			}
			ann[CertManagerInjectAnnotation] = ref
			obj.SetAnnotations(ann)
		}
	}
	return []client.Object{v, mu}
}

// ensureConfigurations applies each configuration that differs from what it
// should be (a no-op pass writes nothing), hands the bundle to the injector
// of the CRDs whose conversion webhook is this operator's (crds.go), and
// records which CAs every configuration and those CRDs trust now.
func (m *Manager) ensureConfigurations(ctx context.Context, bundle []byte, now time.Time) ([][]byte, error) {
	var bundles [][]byte
	for _, desired := range m.desiredConfigurations(bundle) {
		live, err := m.ensureConfiguration(ctx, desired, bundle)
		if err != nil {
			return nil, err
		}
		bundles = append(bundles, configurationBundles(live)...)
	}
	m.injectCRDs(bundle)
	crdBundles, err := m.crdBundles(ctx)
	if err != nil {
		return nil, err
	}
	bundles = append(bundles, crdBundles...)
	m.recordTrust(bundles, now)
	return bundles, nil
}

// liveBundles are the CA bundles the API server calls this operator with,
// as they stand (a standby's view: it writes none of them).
func (m *Manager) liveBundles(ctx context.Context, bundle []byte) ([][]byte, error) {
	var bundles [][]byte
	for _, desired := range m.desiredConfigurations(bundle) {
		live := desired.DeepCopyObject().(client.Object)
		err := m.reader.Get(ctx, client.ObjectKeyFromObject(desired), live)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		bundles = append(bundles, configurationBundles(live)...)
	}
	crdBundles, err := m.crdBundles(ctx)
	if err != nil {
		return nil, err
	}
	return append(bundles, crdBundles...), nil
}

// issuerOf is the fingerprint of the CA among cas that signed cert, "" when
// none did.
func issuerOf(cert *x509.Certificate, cas []*x509.Certificate) string {
	for _, ca := range cas {
		if cert.CheckSignatureFrom(ca) == nil {
			return fingerprint(ca)
		}
	}
	return ""
}

// ensureConfiguration makes one configuration what the mode wants and
// returns it as it stands.
func (m *Manager) ensureConfiguration(ctx context.Context, desired client.Object, bundle []byte) (client.Object, error) {
	want, err := toMap(desired)
	if err != nil {
		return nil, err
	}
	current := desired.DeepCopyObject().(client.Object)
	err = m.reader.Get(ctx, client.ObjectKeyFromObject(desired), current)
	switch {
	case apierrors.IsNotFound(err):
		current = nil
	case err != nil:
		return nil, err
	}
	if m.o.InstallerOwnsConfigurations {
		if current == nil {
			return nil, fmt.Errorf("%s %s not found: the installer owns it (--webhook-manage-configurations=false) and has not created it",
				desired.GetObjectKind().GroupVersionKind().Kind, desired.GetName())
		}
		if m.o.Mode != config.WebhookCertModeAuto {
			return current, nil // cert-manager or the installer keeps caBundle right
		}
		if want, err = caBundleOnly(current, bundle); err != nil {
			return nil, err
		}
	}
	live, applied, err := m.converge(ctx, m.applied, current, desired, FieldOwner, func() (map[string]any, error) { return want, nil },
		func(current client.Object) (bool, error) {
			have, err := toMap(current)
			return err == nil && apply.Contains(have, want), err
		})
	if applied {
		m.log.Info("Applied webhook configuration", "kind", desired.GetObjectKind().GroupVersionKind().Kind,
			"name", desired.GetName(), "mode", m.o.Mode)
	}
	return live, err
}

// converge applies what want returns, the fields this manager sets on the
// object typed names, as field manager owner, unless current (nil: none
// yet) holds them already or is still the version our last apply of it (in
// memo) replaced, and returns the object as it stands (typed like typed)
// and whether it applied. want is called only to apply: a CRD's is costly.
func (m *Manager) converge(ctx context.Context, memo *writes, current, typed client.Object, owner string, want func() (map[string]any, error),
	holds func(client.Object) (bool, error)) (client.Object, bool, error) {
	gvk := typed.GetObjectKind().GroupVersionKind()
	key := gvk.Kind + "/" + typed.GetName()
	// The cache may not show our own write yet; until it does, what we
	// wrote stands, and applying again would be a second, useless write.
	if w, ok := memo.current(key, current); ok {
		return w, false, nil
	}
	if current != nil {
		if ok, err := holds(current); err != nil || ok {
			return current, false, err
		}
	}
	obj, err := want()
	if err != nil {
		return nil, false, err
	}
	u := &unstructured.Unstructured{Object: obj}
	u.SetGroupVersionKind(gvk)
	if err := m.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u),
		client.FieldOwner(owner), client.ForceOwnership); err != nil {
		return nil, false, fmt.Errorf("applying %s %s: %w", u.GetKind(), u.GetName(), err)
	}
	stored := typed.DeepCopyObject().(client.Object)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, stored); err != nil {
		return nil, false, err
	}
	stored = shrink(stored)
	memo.record(key, current, stored)
	return stored, true, nil
}

// caBundleOnly is the part of a configuration the operator applies when the
// installer owns it: the name, and each of the live configuration's webhooks
// (by name, the list's merge key, in the live order) with the bundle. Fields
// owned by the installer stay its own.
func caBundleOnly(current client.Object, bundle []byte) (map[string]any, error) {
	have, err := toMap(current)
	if err != nil {
		return nil, err
	}
	liveHooks, _ := have["webhooks"].([]any)
	hooks := make([]any, 0, len(liveHooks))
	encoded, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&admissionregistrationv1.WebhookClientConfig{CABundle: bundle})
	if err != nil {
		return nil, err
	}
	for _, h := range liveHooks {
		hm, _ := h.(map[string]any)
		hooks = append(hooks, map[string]any{"name": hm["name"], "clientConfig": map[string]any{"caBundle": encoded["caBundle"]}})
	}
	return map[string]any{
		"metadata": map[string]any{"name": current.GetName()},
		"webhooks": hooks,
	}, nil
}

// writes remembers the objects this manager wrote, by kind/name, with the
// resourceVersion (empty: none) the cache showed before each: until the
// cache shows a newer one, the written object is the truth. Safe for the
// reconcile loop and the CRD injector at once.
type writes struct {
	mu sync.Mutex
	m  map[string]appliedConfiguration
}

type appliedConfiguration struct {
	replacedRV string
	stored     client.Object
}

// current returns what was written of key, if cached (nil: none) is still
// the version that write replaced; otherwise it forgets the write.
func (w *writes) current(key string, cached client.Object) (client.Object, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	a, ok := w.m[key]
	if ok && a.replacedRV == resourceVersion(cached) {
		return a.stored, true
	}
	delete(w.m, key)
	return nil, false
}

// peek is current without forgetting: for a reader other than the writer.
func (w *writes) peek(key string, cached client.Object) (client.Object, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	a, ok := w.m[key]
	if ok && a.replacedRV == resourceVersion(cached) {
		return a.stored, true
	}
	return nil, false
}

func (w *writes) record(key string, replaced, stored client.Object) {
	if stored.GetResourceVersion() == "" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.m[key] = appliedConfiguration{replacedRV: resourceVersion(replaced), stored: stored}
}

func resourceVersion(obj client.Object) string {
	if obj == nil || reflect.ValueOf(obj).IsNil() {
		return ""
	}
	return obj.GetResourceVersion()
}

// configurationBundles are the CA bundles of a webhook configuration's
// webhooks.
func configurationBundles(obj client.Object) [][]byte {
	var bundles [][]byte
	switch c := obj.(type) {
	case *admissionregistrationv1.ValidatingWebhookConfiguration:
		for _, w := range c.Webhooks {
			bundles = append(bundles, w.ClientConfig.CABundle)
		}
	case *admissionregistrationv1.MutatingWebhookConfiguration:
		for _, w := range c.Webhooks {
			bundles = append(bundles, w.ClientConfig.CABundle)
		}
	}
	return bundles
}

// recordTrust notes, per CA fingerprint, since when every one of bundles
// (each webhook's of every configuration, each conversion webhook's of the
// CRDs this operator serves) has trusted it.
func (m *Manager) recordTrust(bundles [][]byte, now time.Time) {
	count := map[string]int{}
	parsed := map[string][]string{} // bundle -> fingerprints
	for _, b := range bundles {
		fps, ok := parsed[string(b)]
		if !ok {
			fps = fingerprints(b)
			parsed[string(b)] = fps
		}
		for _, fp := range fps {
			count[fp]++
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for fp := range m.trusted {
		if count[fp] != len(bundles) {
			delete(m.trusted, fp)
		}
	}
	for fp, n := range count {
		if _, ok := m.trusted[fp]; !ok && n == len(bundles) && len(bundles) > 0 {
			m.trusted[fp] = now
		}
	}
}

// fingerprints are the distinct fingerprints of the CAs in a PEM bundle.
func fingerprints(bundle []byte) []string {
	cas, _ := ParseCertificates(bundle)
	var fps []string
	seen := map[string]bool{}
	for _, c := range cas {
		if fp := fingerprint(c); !seen[fp] {
			seen[fp] = true
			fps = append(fps, fp)
		}
	}
	return fps
}

func (m *Manager) trustedSince(fp string) (time.Time, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.trusted[fp]
	return t, ok
}

// toMap is obj as JSON-like data without what the API server sets (creation
// time, status) and without type meta, which typed objects read from a cache
// lack, to compare with a live object.
func toMap(obj client.Object) (map[string]any, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	pruneNulls(m)
	delete(m, "apiVersion")
	delete(m, "kind")
	if md, ok := m["metadata"].(map[string]any); ok {
		delete(md, "creationTimestamp")
	}
	delete(m, "status")
	return m, nil
}

func pruneNulls(v any) {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if e == nil {
				delete(t, k)
			} else {
				pruneNulls(e)
			}
		}
	case []any:
		for _, e := range t {
			pruneNulls(e)
		}
	}
}
