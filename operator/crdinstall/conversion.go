package crdinstall

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/operator/certs"
	"github.com/dynamoctl/dynamo-operator/operator/config"
	"github.com/dynamoctl/dynamo-operator/operator/webhooks"
)

// Conversion says which operator the API server calls to convert the
// objects of the CRDs that convert by webhook, and how it comes to trust
// it. The operator that installs the CRDs names itself: the chart's init
// container its release's webhook Service, a process-mode installer the
// operator's URL.
type Conversion struct {
	// ServiceNamespace and ServiceName locate the webhook Service, called on
	// port 443, when URL is empty.
	ServiceNamespace, ServiceName string
	// URL is the base URL (https://host:port) of a webhook server outside
	// the cluster.
	URL string
	// CABundle (PEM) is the conversion webhook's caBundle: the installer's
	// own (external mode), or the auto mode's CA (AutoCABundle; the
	// operator's certificate manager renders the CRDs with its current
	// one). Empty applies none: before the auto mode's first certificate,
	// and in cert-manager mode, whose injector sets it.
	CABundle []byte
	// InjectCAFrom, <namespace>/<certificate>, annotates the CRDs for
	// cert-manager's CA injector (cert-manager mode).
	InjectCAFrom string
}

// ConversionFor is the Conversion of an operator configured with o: its
// own webhook (the Service, or --webhook-url-host and --webhook-port), and
// the trust its certificate mode gives (--webhook-ca-bundle in external
// mode, the cert-manager Certificate named like --webhook-cert-secret). The
// auto mode's bundle is read from the cluster (AutoCABundle).
func ConversionFor(o *config.Options) Conversion {
	c := Conversion{URL: o.Webhook.URL()}
	if c.URL == "" {
		c.ServiceNamespace, c.ServiceName = o.OperatorNamespace, o.Webhook.ServiceName
	}
	switch o.Webhook.CertMode {
	case config.WebhookCertModeExternal:
		c.CABundle = o.Webhook.CABundle
	case config.WebhookCertModeCertManager:
		// The chart's Certificate is named like the Secret it fills.
		c.InjectCAFrom = o.OperatorNamespace + "/" + o.Webhook.CertSecret
	}
	return c
}

// InstallerConversion is what the chart's init container applies with:
// ConversionFor(o) and, in the auto mode, the CA its certificate Secret
// holds (AutoCABundle), so that its apply, which owns the bundle, keeps the
// one the operator put there. r must know core/v1.
func InstallerConversion(ctx context.Context, r client.Reader, o *config.Options) (Conversion, error) {
	c := ConversionFor(o)
	if o.Webhook.CertMode != config.WebhookCertModeAuto {
		return c, nil
	}
	var err error
	c.CABundle, err = AutoCABundle(ctx, r, o.OperatorNamespace, o.Webhook.CertSecret)
	return c, err
}

// ClientConfig is the conversion webhook's clientConfig, caBundle aside.
func (c Conversion) ClientConfig() (*apiextensionsv1.WebhookClientConfig, error) {
	path := webhooks.PathConvert
	switch {
	case c.URL != "":
		u := c.URL + path
		return &apiextensionsv1.WebhookClientConfig{URL: &u}, nil
	case c.ServiceNamespace != "" && c.ServiceName != "":
		port := int32(443)
		return &apiextensionsv1.WebhookClientConfig{Service: &apiextensionsv1.ServiceReference{
			Namespace: c.ServiceNamespace, Name: c.ServiceName, Path: &path, Port: &port,
		}}, nil
	default:
		return nil, errors.New("no conversion webhook: give a Service (namespace and name) or a URL")
	}
}

// Render is crd as the installer applies it: a copy whose conversion
// webhook, if it converts by webhook, is c (rewrite). The installer and the
// auto mode's certificate manager both apply what it renders, under the
// one field manager FieldOwner.
func (c Conversion) Render(crd *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	u := crd.DeepCopy()
	if err := c.rewrite(u); err != nil {
		return nil, fmt.Errorf("CustomResourceDefinition %s: %w", u.GetName(), err)
	}
	return u, nil
}

// RenderConverted is the embedded CRD name, one that converts by webhook
// (ConvertedNames), as Render makes it. It decodes the CRD's JSON kept from
// the one parse of the embedded YAML per process (parsing ~2 MB of YAML
// takes seconds, and a certificate manager renders at each CA change).
func (c Conversion) RenderConverted(name string) (*unstructured.Unstructured, error) {
	conv, err := converted()
	if err != nil {
		return nil, err
	}
	data, ok := conv.json[name]
	if !ok {
		return nil, fmt.Errorf("no embedded CustomResourceDefinition %s that converts by webhook", name)
	}
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal(data, &u.Object); err != nil {
		return nil, err
	}
	if err := c.rewrite(u); err != nil {
		return nil, fmt.Errorf("CustomResourceDefinition %s: %w", name, err)
	}
	return u, nil
}

// AutoCABundle is the CA bundle (ca.crt) of the auto mode's certificate
// Secret, nil while the Secret or its CA does not exist yet (a first
// install: the operator injects it once it made one). The chart's init
// container applies it with the CRDs, so that a restarted pod's apply,
// under the manager that owns the bundle, never drops the one the API
// server trusts.
func AutoCABundle(ctx context.Context, r client.Reader, namespace, secret string) ([]byte, error) {
	s := &corev1.Secret{}
	err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: secret}, s)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the CA of the certificate Secret %s/%s: %w", namespace, secret, err)
	}
	return s.Data[certs.KeyCABundle], nil
}

// rewrite points u's conversion webhook, if it converts by webhook, at c:
// the generated CRDs carry a placeholder clientConfig.
func (c Conversion) rewrite(u *unstructured.Unstructured) error {
	if !ConvertsByWebhook(u) {
		return nil
	}
	cc, err := c.ClientConfig()
	if err != nil {
		return err
	}
	m := map[string]any{}
	if cc.URL != nil {
		m["url"] = *cc.URL
	} else {
		s := cc.Service
		m["service"] = map[string]any{"namespace": s.Namespace, "name": s.Name, "path": *s.Path, "port": int64(*s.Port)}
	}
	if len(c.CABundle) > 0 {
		m["caBundle"] = base64.StdEncoding.EncodeToString(c.CABundle)
	}
	if err := unstructured.SetNestedMap(u.Object, m, "spec", "conversion", "webhook", "clientConfig"); err != nil {
		return err
	}
	if err := unstructured.SetNestedStringSlice(u.Object, []string{"v1"}, "spec", "conversion", "webhook", "conversionReviewVersions"); err != nil {
		return err
	}
	if c.InjectCAFrom != "" {
		ann := u.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann[certs.CertManagerInjectAnnotation] = c.InjectCAFrom
		u.SetAnnotations(ann)
	}
	return nil
}

// ConvertsByWebhook says whether u's spec.conversion.strategy is Webhook.
func ConvertsByWebhook(u *unstructured.Unstructured) bool {
	s, _, _ := unstructured.NestedString(u.Object, "spec", "conversion", "strategy")
	return s == string(apiextensionsv1.WebhookConverter)
}

// ConvertedNames are the names of the embedded CRDs that convert by
// webhook: those whose conversion webhook the operator that installs them
// serves and, in the auto cert mode, keeps its CA injected into. Parsed
// once: every operator a test process starts asks.
func ConvertedNames() ([]string, error) {
	conv, err := converted()
	return slices.Clone(conv.names), err
}

// convertedCRDs are the embedded CRDs that convert by webhook: their names,
// sorted, and each one's JSON (about 0.3 MB each; RenderConverted).
type convertedCRDs struct {
	names []string
	json  map[string][]byte
}

var converted = sync.OnceValues(func() (convertedCRDs, error) {
	all, err := Load()
	if err != nil {
		return convertedCRDs{}, err
	}
	out := convertedCRDs{json: map[string][]byte{}}
	for _, u := range all {
		if !ConvertsByWebhook(u) {
			continue
		}
		data, err := json.Marshal(u.Object)
		if err != nil {
			return convertedCRDs{}, err
		}
		out.names = append(out.names, u.GetName())
		out.json[u.GetName()] = data
	}
	return out, nil
})

// switchEndpoint clears the live CRD's conversion Service when u names a
// URL, or its URL when u names a Service: when another field manager set
// it (kubectl, a replace), server-side apply cannot remove it, and a
// clientConfig with both is invalid. One merge patch sets the new endpoint
// and clears the old, so no state between is invalid.
func switchEndpoint(ctx context.Context, c client.Client, u *unstructured.Unstructured) error {
	want, ok, _ := unstructured.NestedMap(u.Object, "spec", "conversion", "webhook", "clientConfig")
	if !ok {
		return nil
	}
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(u.GroupVersionKind())
	if err := c.Get(ctx, client.ObjectKey{Name: u.GetName()}, live); apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		return err
	}
	have, _, _ := unstructured.NestedMap(live.Object, "spec", "conversion", "webhook", "clientConfig")
	stale := "service"
	if _, ok := want["service"]; ok {
		stale = "url"
	}
	if _, ok := have[stale]; !ok {
		return nil
	}
	cc := map[string]any{stale: nil}
	for _, k := range []string{"url", "service"} {
		if v, ok := want[k]; ok {
			cc[k] = v
		}
	}
	patch := map[string]any{"spec": map[string]any{"conversion": map[string]any{"webhook": map[string]any{"clientConfig": cc}}}}
	data, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	return c.Patch(ctx, live, client.RawPatch(types.MergePatchType, data), client.FieldOwner(FieldOwner))
}
