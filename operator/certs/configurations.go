package certs

import (
	"context"
	"fmt"
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
// should be (a no-op pass writes nothing), keeps the bundle injected into
// the CRDs whose conversion webhook is this operator's (ensureCRDs), and
// records which CAs every one of them trusts.
func (m *Manager) ensureConfigurations(ctx context.Context, bundle []byte, now time.Time) error {
	var bundles [][]byte
	for _, desired := range m.desiredConfigurations(bundle) {
		live, err := m.ensureConfiguration(ctx, desired, bundle)
		if err != nil {
			return err
		}
		bundles = append(bundles, configurationBundles(live)...)
	}
	crdBundles, err := m.ensureCRDs(ctx, bundle)
	if err != nil {
		return err
	}
	m.recordTrust(append(bundles, crdBundles...), now)
	return nil
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
	live, applied, err := m.converge(ctx, current, desired, want, func(current client.Object) (bool, error) {
		have, err := toMap(current)
		return err == nil && apply.Contains(have, want), err
	})
	if applied {
		m.log.Info("Applied webhook configuration", "kind", desired.GetObjectKind().GroupVersionKind().Kind,
			"name", desired.GetName(), "mode", m.o.Mode)
	}
	return live, err
}

// converge applies want, the fields this manager sets on the object typed
// names, unless current (nil: none yet) holds them already or is still the
// version our last apply of it replaced, and returns the object as it
// stands (typed like typed) and whether it applied.
func (m *Manager) converge(ctx context.Context, current, typed client.Object, want map[string]any,
	holds func(client.Object) (bool, error)) (client.Object, bool, error) {
	gvk := typed.GetObjectKind().GroupVersionKind()
	key := gvk.Kind + "/" + typed.GetName()
	currentRV := ""
	if current != nil {
		currentRV = current.GetResourceVersion()
	}
	// The cache may not show our own write yet; until it does, what we
	// wrote stands, and applying again would be a second, useless write.
	if w, ok := m.applied[key]; ok && w.replacedRV == currentRV {
		return w.stored, false, nil
	}
	delete(m.applied, key)
	if current != nil {
		if ok, err := holds(current); err != nil || ok {
			return current, false, err
		}
	}
	u := &unstructured.Unstructured{Object: want}
	u.SetGroupVersionKind(gvk)
	if err := m.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u),
		client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		return nil, false, fmt.Errorf("applying %s %s: %w", u.GetKind(), u.GetName(), err)
	}
	stored := typed.DeepCopyObject().(client.Object)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, stored); err != nil {
		return nil, false, err
	}
	stored = shrink(stored)
	if stored.GetResourceVersion() != "" {
		m.applied[key] = appliedConfiguration{replacedRV: currentRV, stored: stored}
	}
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

// appliedConfiguration is a configuration this manager wrote, and the
// resourceVersion (empty: none) the cache showed before.
type appliedConfiguration struct {
	replacedRV string
	stored     client.Object
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
