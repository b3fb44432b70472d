package certs

import (
	"bytes"
	"context"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
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

// ensureCRDs keeps bundle in the conversion webhook of each CRD this
// operator serves conversion for, and returns their bundles as they stand.
// A CRD not installed (yet) or naming another operator is skipped.
func (m *Manager) ensureCRDs(ctx context.Context, bundle []byte) ([][]byte, error) {
	var out [][]byte
	for _, name := range m.o.CRDs {
		reader, ok := m.crds[name]
		if !ok {
			continue // not watched: not in the auto mode
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		err := reader.Get(ctx, client.ObjectKey{Name: name}, crd)
		if apierrors.IsNotFound(err) || (err == nil && !m.servesConversion(crd)) {
			continue
		}
		if err != nil {
			return nil, err
		}
		typed := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: name}}
		typed.APIVersion, typed.Kind = apiextensionsv1.SchemeGroupVersion.String(), "CustomResourceDefinition"
		want, err := conversionBundleOnly(name, bundle)
		if err != nil {
			return nil, err
		}
		live, applied, err := m.converge(ctx, crd, typed, want, func(current client.Object) (bool, error) {
			return bytes.Equal(conversionBundle(current), bundle), nil
		})
		if err != nil {
			return nil, err
		}
		if applied {
			m.log.Info("Injected the CA bundle into the CRD's conversion webhook", "crd", name)
		}
		out = append(out, conversionBundle(live))
	}
	return out, nil
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

// conversionBundleOnly is what the manager applies to a CRD: the bundle
// alone, so the installer keeps every other field.
func conversionBundleOnly(name string, bundle []byte) (map[string]any, error) {
	encoded, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&apiextensionsv1.WebhookClientConfig{CABundle: bundle})
	if err != nil {
		return nil, err
	}
	return map[string]any{
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{"conversion": map[string]any{"webhook": map[string]any{
			"clientConfig": map[string]any{"caBundle": encoded["caBundle"]},
		}}},
	}, nil
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
