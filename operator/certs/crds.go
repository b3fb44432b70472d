package certs

import (
	"bytes"
	"context"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/operator/config"
)

// The CRDs that convert by webhook name the one operator the API server
// calls to convert their objects: the one that installed them (see
// operator/crdinstall). In the auto mode that operator's CA is the one the
// API server must trust there, so the manager of the operator whose own
// webhook (Options.Conversion) a CRD names keeps its bundle in the CRD's
// spec.conversion.webhook.clientConfig.caBundle, restores it when edited
// and counts it in the trust a new CA waits for. Every other operator
// leaves the CRD alone. In the cert-manager and external modes the
// installer annotates the CRDs or sets the bundle itself.
//
// The bundle is written by applying the whole CRD as the installer renders
// it (Options.RenderCRD) under the installer's field manager, not the
// bundle alone under this package's: a release before conversion applies
// its CRDs (no spec.conversion) under that same manager on a downgrade,
// and server-side apply then removes every field that manager owned there.
// A bundle owned by another manager would stay, leaving a webhook without
// the Webhook strategy, which the API server refuses, and the older
// release's installer would fail. The whole CRD is parsed and applied only
// when the bundle differs: a CA rotation, an edit, or the first
// certificate of an install (the installer applies the Secret's CA with
// the CRDs from then on, crdinstall.AutoCABundle).

// watchesCRDs says whether this manager reads CRDs at all: only in the auto
// mode, and only when given their names (an install without rights on
// CRDs gives none).
func (m *Manager) watchesCRDs() bool {
	return m.o.Mode == config.WebhookCertModeAuto && len(m.o.CRDs) > 0 && m.o.Conversion != nil
}

// crdCacheOptions watch one CRD: RBAC limited to resourceNames allows a
// list and watch only with a field selector on the name, and a selector
// names one, so each CRD has a cache of its own. Their schemas are large
// (hundreds of kB): the cache keeps only what the manager reads.
func (m *Manager) crdCacheOptions(name string) cache.Options {
	return cache.Options{
		Scheme: m.scheme,
		ByObject: map[client.Object]cache.ByObject{
			&apiextensionsv1.CustomResourceDefinition{}: {Field: byName(name), Transform: func(obj any) (any, error) {
				if o, ok := obj.(client.Object); ok {
					return shrink(o), nil
				}
				return obj, nil
			}},
		},
	}
}

// shrink keeps of a CRD its metadata and spec.conversion; other objects
// are returned as they are.
func shrink(obj client.Object) client.Object {
	crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition)
	if !ok {
		return obj
	}
	out := &apiextensionsv1.CustomResourceDefinition{TypeMeta: crd.TypeMeta, ObjectMeta: *crd.ObjectMeta.DeepCopy()}
	out.ManagedFields = nil
	if crd.Spec.Conversion != nil {
		out.Spec.Conversion = crd.Spec.Conversion.DeepCopy()
	}
	return out
}

// The injector writes the CRDs on a goroutine of its own: a CRD write takes
// a second or more (the CRDs are ~2 MB, and the API server rebuilds what
// serves them), and the reconcile loop, which renews the serving
// certificate, must not wait for it. The loop reads the CRDs' bundles as
// they stand (crdBundles) for the trust a new CA waits for, so a CA the CRDs
// do not hold yet never signs.

// injectCRDs hands bundle to the injector.
func (m *Manager) injectCRDs(bundle []byte) {
	if m.crds == nil {
		return
	}
	b := append([]byte(nil), bundle...)
	m.crdWant.Store(&b)
	select {
	case m.crdPoke <- struct{}{}:
	default:
	}
}

// runCRDInjector injects the latest bundle handed to it whenever poked,
// retrying with backoff, and pokes the reconcile loop after a pass that
// wrote, so that it records the trust the write gives. A pass that wrote
// nothing pokes nothing: every reconcile hands its bundle over, and a poke
// back would make the two loops wake each other without end.
func (m *Manager) runCRDInjector(ctx context.Context) {
	backoff := time.Second
	for {
		select {
		case <-ctx.Done():
			return
		case <-m.crdPoke:
		}
		wrote := false
		for {
			applied, err := m.injectOnce(ctx)
			wrote = wrote || applied
			if err == nil || ctx.Err() != nil {
				break
			}
			m.log.Error(err, "Injecting the CA bundle into the CRDs' conversion webhook", "retryIn", backoff)
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 30*time.Second)
		}
		backoff = time.Second
		if wrote {
			m.Poke()
		}
	}
}

// injectOnce keeps the bundle handed last in the conversion webhook of
// each CRD this operator serves conversion for, and reports whether it
// wrote any.
func (m *Manager) injectOnce(ctx context.Context) (wrote bool, err error) {
	want := m.crdWant.Load()
	if want == nil {
		return false, nil
	}
	bundle := *want
	for _, name := range m.o.CRDs {
		crd, ok, err := m.ownedCRD(ctx, name)
		if err != nil {
			return wrote, err
		}
		if !ok {
			continue
		}
		typed := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: name}}
		typed.APIVersion, typed.Kind = apiextensionsv1.SchemeGroupVersion.String(), "CustomResourceDefinition"
		render := func() (map[string]any, error) {
			u, err := m.o.RenderCRD(name, bundle)
			if err != nil {
				return nil, err
			}
			return u.Object, nil
		}
		_, applied, err := m.converge(ctx, m.crdApplied, crd, typed, m.o.CRDFieldOwner, render, func(current client.Object) (bool, error) {
			return bytes.Equal(conversionBundle(current), bundle), nil
		})
		if err != nil {
			return wrote, err
		}
		if applied {
			wrote = true
			m.log.Info("Injected the CA bundle into the CRD's conversion webhook", "crd", name)
		}
	}
	return wrote, nil
}

// crdBundles are the conversion webhook bundles of the CRDs this operator
// serves conversion for, as they stand: from the cache, or as the injector
// wrote one the cache does not show yet.
func (m *Manager) crdBundles(ctx context.Context) ([][]byte, error) {
	var out [][]byte
	for _, name := range m.o.CRDs {
		crd, ok, err := m.ownedCRD(ctx, name)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		live := client.Object(crd)
		if w, ok := m.crdApplied.peek("CustomResourceDefinition/"+name, crd); ok {
			live = w
		}
		out = append(out, conversionBundle(live))
	}
	return out, nil
}

// ownedCRD reads the CRD from its cache; ok is false when it is not
// watched (not the auto mode), not installed (yet), or names another
// operator's webhook.
func (m *Manager) ownedCRD(ctx context.Context, name string) (*apiextensionsv1.CustomResourceDefinition, bool, error) {
	reader, watched := m.crds[name]
	if !watched {
		return nil, false, nil
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	err := reader.Get(ctx, client.ObjectKey{Name: name}, crd)
	if apierrors.IsNotFound(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return crd, m.servesConversion(crd), nil
}

// servesConversion says whether crd converts by webhook and its
// clientConfig names this operator's webhook: its URL, or its Service (the
// path and port are the installer's to choose).
func (m *Manager) servesConversion(crd *apiextensionsv1.CustomResourceDefinition) bool {
	c := crd.Spec.Conversion
	if c == nil || c.Strategy != apiextensionsv1.WebhookConverter || c.Webhook == nil || c.Webhook.ClientConfig == nil {
		return false
	}
	have, own := c.Webhook.ClientConfig, m.o.Conversion
	if own.URL != nil {
		return have.URL != nil && *have.URL == *own.URL
	}
	return own.Service != nil && have.Service != nil &&
		have.Service.Namespace == own.Service.Namespace && have.Service.Name == own.Service.Name
}

// conversionBundle is a CRD's conversion webhook caBundle, or nil.
func conversionBundle(obj client.Object) []byte {
	crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition)
	if !ok || crd.Spec.Conversion == nil || crd.Spec.Conversion.Webhook == nil || crd.Spec.Conversion.Webhook.ClientConfig == nil {
		return nil
	}
	return crd.Spec.Conversion.Webhook.ClientConfig.CABundle
}

// startCRDCaches starts a cache per CRD (crdCacheOptions), calling poke on
// every change, and waits until each has synced.
func (m *Manager) startCRDCaches(ctx context.Context, poke func(any)) (map[string]client.Reader, error) {
	readers := map[string]client.Reader{}
	for _, name := range m.o.CRDs {
		c, err := startCache(ctx, m.cfg, m.crdCacheOptions(name), poke, &apiextensionsv1.CustomResourceDefinition{})
		if err != nil {
			return nil, fmt.Errorf("watching CustomResourceDefinition %s: %w", name, err)
		}
		readers[name] = c
	}
	return readers, nil
}
