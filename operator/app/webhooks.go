package app

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/dynamoctl/dynamo-operator/operator/certs"
	"github.com/dynamoctl/dynamo-operator/operator/config"
	"github.com/dynamoctl/dynamo-operator/operator/crdinstall"
	"github.com/dynamoctl/dynamo-operator/operator/render"
	"github.com/dynamoctl/dynamo-operator/operator/scope"
	"github.com/dynamoctl/dynamo-operator/operator/webhooks"
)

// setupWebhooks registers the admission handlers on the manager's webhook
// server and the certificate manager that keeps the serving certificate and
// the webhook configurations right. Only called with webhooks enabled:
// asking the manager for its webhook server starts one.
//
// A cluster-wide operator's webhooks let objects in namespaces that a
// namespace-scoped operator owns through unjudged: that operator's own
// webhook, selected by namespace, judges them.
func setupWebhooks(mgr manager.Manager, o *config.Options, d Deps, gate *scope.Gate, drain *webhooks.Drain) error {
	if err := webhooks.Setup(mgr, webhooks.Options{
		OperatorVersion:   o.OperatorVersion,
		NamespaceExcluded: gate.Excluded,
		Drain:             drain,
		PodGroupServed:    podGroupServed(mgr.GetRESTMapper()),
	}); err != nil {
		return err
	}
	validating, mutating := webhooks.Configurations(webhooks.ConfigurationOptions{
		RestrictNamespace: o.RestrictNamespace,
		ServiceNamespace:  o.OperatorNamespace,
		ServiceName:       o.Webhook.ServiceName,
		URL:               o.Webhook.URL(),
	})
	crds, conversion, err := conversionOwnership(o)
	if err != nil {
		return err
	}
	_, err = certs.Setup(mgr, certs.Options{
		Mode:       o.Webhook.CertMode,
		Namespace:  o.OperatorNamespace,
		SecretName: o.Webhook.CertSecret,
		CertDir:    o.Webhook.CertDir,
		Hosts:      webhookHosts(o),
		Timing:     certs.Timing{CertValidity: o.Webhook.CertValidity, CAValidity: o.Webhook.CAValidity},
		Validating: validating,
		Mutating:   mutating,
		// The chart's Certificate is named like the Secret it fills.
		CertManagerCertificate: o.Webhook.CertSecret,
		Clock:                  d.Clock,
		// The chart owns them, so `helm uninstall` removes them.
		InstallerOwnsConfigurations: !o.Webhook.ManageConfigurations,
		CRDs:                        crds,
		Conversion:                  conversion,
		RenderCRD: func(name string, bundle []byte) (*unstructured.Unstructured, error) {
			conv := crdinstall.ConversionFor(o)
			conv.CABundle = bundle
			return conv.RenderConverted(name)
		},
		CRDFieldOwner: crdinstall.FieldOwner,
		// Only the leader writes the certificate and its CA bundles; a
		// standby serves the pair the leader keeps in the Secret.
		Leading: mgr.Elected(),
	})
	return err
}

// conversionOwnership is what the certificate manager needs to keep the
// CA injected into the CRDs whose conversion webhook is this operator's:
// the CRDs that convert by webhook (none with --webhook-inject-crds=false)
// and this operator's own clientConfig, as crdinstall writes it.
func conversionOwnership(o *config.Options) ([]string, *apiextensionsv1.WebhookClientConfig, error) {
	if !o.Webhook.InjectCRDs {
		return nil, nil, nil
	}
	names, err := crdinstall.ConvertedNames()
	if err != nil {
		return nil, nil, err
	}
	own, err := crdinstall.ConversionFor(o).ClientConfig()
	return names, own, err
}

// webhookHosts are the names the API server may call the webhook server by:
// the Service's DNS names and, for local runs, --webhook-url-host.
func webhookHosts(o *config.Options) []string {
	svc, ns := o.Webhook.ServiceName, o.OperatorNamespace
	hosts := []string{svc + "." + ns + ".svc", svc + "." + ns + ".svc.cluster.local", svc + "." + ns, svc}
	if o.Webhook.URLHost != "" {
		hosts = append([]string{o.Webhook.URLHost}, hosts...)
	}
	return hosts
}

// podGroupServed says whether the cluster serves the gang PodGroup API, as
// the component controller finds it (the same REST mapper, which looks a
// group version up again when it has not seen it).
func podGroupServed(mapper meta.RESTMapper) func() bool {
	gvk := render.PodGroupGVK
	return func() bool {
		_, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		return err == nil
	}
}
