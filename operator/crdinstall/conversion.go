package crdinstall

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"slices"
	"sync"

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
	// CABundle (PEM) is set by an installer that provides the serving
	// certificate (external mode). Empty leaves caBundle out of what is
	// applied, so the bundle the operator (auto) or cert-manager injects,
	// under its own field manager, stays.
	CABundle []byte
	// InjectCAFrom, <namespace>/<certificate>, annotates the CRDs for
	// cert-manager's CA injector (cert-manager mode).
	InjectCAFrom string
}

// ConversionFor is the Conversion of an operator configured with o: its
// own webhook (the Service, or --webhook-url-host and --webhook-port), and
// the trust its certificate mode gives (--webhook-ca-bundle in external
// mode, the cert-manager Certificate named like --webhook-cert-secret).
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
	names, err := convertedNames()
	return slices.Clone(names), err
}

var convertedNames = sync.OnceValues(func() ([]string, error) {
	all, err := Load()
	if err != nil {
		return nil, err
	}
	var names []string
	for _, u := range all {
		if ConvertsByWebhook(u) {
			names = append(names, u.GetName())
		}
	}
	return names, nil
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
