package webhooks

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/render"
)

// The operator creates and maintains its own webhook configurations (with
// server-side apply, see operator/certs) instead of leaving them to the
// installer: their names, namespace selector and client configuration follow
// from the operator's flags, and in the auto certificate mode the CA bundle
// must follow the operator's certificate. ConfigurationOptions carry what
// they are derived from.
type ConfigurationOptions struct {
	// RestrictNamespace, for a namespace-scoped operator, suffixes the
	// configuration names with -<namespace> (several operators' webhooks
	// then coexist) and selects only that namespace.
	RestrictNamespace string
	// ServiceNamespace and ServiceName locate the Service in front of the
	// webhook server; it is called on port 443.
	ServiceNamespace string
	ServiceName      string
	// URL, when set (--webhook-url-host), is the base URL the API server
	// calls instead of the Service, for operators running outside the
	// cluster.
	URL string
}

const (
	baseValidatingName = "dynamo-operator-validating"
	baseMutatingName   = "dynamo-operator-mutating"
	// NamespaceNameLabel is set by the API server on every namespace.
	NamespaceNameLabel = "kubernetes.io/metadata.name"
)

// ValidatingConfigurationName is dynamo-operator-validating, suffixed with
// -<namespace> for a namespace-scoped operator.
func ValidatingConfigurationName(restrictNamespace string) string {
	return suffixed(baseValidatingName, restrictNamespace)
}

// MutatingConfigurationName is dynamo-operator-mutating, suffixed with
// -<namespace> for a namespace-scoped operator.
func MutatingConfigurationName(restrictNamespace string) string {
	return suffixed(baseMutatingName, restrictNamespace)
}

func suffixed(base, ns string) string {
	if ns == "" {
		return base
	}
	return base + "-" + ns
}

// NamespaceSelector selects the namespace of a namespace-scoped operator;
// nil (every namespace) for a cluster-wide one, whose handlers step aside
// in namespaces a namespace-scoped operator owns (Options.NamespaceExcluded).
func NamespaceSelector(restrictNamespace string) *metav1.LabelSelector {
	if restrictNamespace == "" {
		return nil
	}
	return &metav1.LabelSelector{MatchLabels: map[string]string{NamespaceNameLabel: restrictNamespace}}
}

// Configurations returns the desired webhook configurations without a CA
// bundle; the certificate mode decides who sets it.
func Configurations(o ConfigurationOptions) (*admissionregistrationv1.ValidatingWebhookConfiguration, *admissionregistrationv1.MutatingWebhookConfiguration) {
	labels := map[string]string{"app.kubernetes.io/name": "dynamo-operator", "app.kubernetes.io/managed-by": "dynamo-operator"}
	selector := NamespaceSelector(o.RestrictNamespace)
	validating := func(name, resource, path string) admissionregistrationv1.ValidatingWebhook {
		return admissionregistrationv1.ValidatingWebhook{
			Name:                    name,
			ClientConfig:            o.clientConfig(path),
			Rules:                   writeRules(resource),
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
			NamespaceSelector:       selector,
			TimeoutSeconds:          ptr.To[int32](10),
		}
	}
	v := &admissionregistrationv1.ValidatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: ValidatingConfigurationName(o.RestrictNamespace), Labels: labels},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{
			validating("validate.dynamographdeployments.nvidia.com", "dynamographdeployments", PathValidateGraph),
			validating("validate.dynamocomponentdeployments.nvidia.com", "dynamocomponentdeployments", PathValidateComponentDeployment),
			validating("validate.dynamomodels.nvidia.com", "dynamomodels", PathValidateModel),
			validating("validate.dynamocomponents.nvidia.com", "dynamocomponents", PathValidateComponent),
		},
	}
	m := &admissionregistrationv1.MutatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: MutatingConfigurationName(o.RestrictNamespace), Labels: labels},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:                    "default.dynamographdeployments.nvidia.com",
			ClientConfig:            o.clientConfig(PathMutateGraph),
			Rules:                   writeRules("dynamographdeployments"),
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
			NamespaceSelector:       selector,
			TimeoutSeconds:          ptr.To[int32](10),
			ReinvocationPolicy:      ptr.To(admissionregistrationv1.NeverReinvocationPolicy),
		}, podGroupWebhook(o.clientConfig(PathMutatePod), selector)},
	}
	return v, m
}

// clientConfig reaches the webhook server at path: by URL when o names
// one, else through its Service.
func (o ConfigurationOptions) clientConfig(path string) admissionregistrationv1.WebhookClientConfig {
	if o.URL != "" {
		return admissionregistrationv1.WebhookClientConfig{URL: ptr.To(o.URL + path)}
	}
	return admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
		Namespace: o.ServiceNamespace, Name: o.ServiceName, Path: ptr.To(path), Port: ptr.To[int32](443),
	}}
}

// writeRules send the creates and updates of resource of nvidia.com's
// served version to a webhook.
func writeRules(resource string) []admissionregistrationv1.RuleWithOperations {
	return []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		Rule: admissionregistrationv1.Rule{
			APIGroups:   []string{v1alpha1.GroupVersion.Group},
			APIVersions: []string{v1alpha1.GroupVersion.Version},
			Resources:   []string{resource},
			Scope:       ptr.To(admissionregistrationv1.NamespacedScope),
		},
	}}
}

// podGroupWebhook names a multinode group's pods' gang PodGroup
// (podGroupNamer). Only pods created from a multinode component's
// LeaderWorkerSet are sent (objectSelector), on CREATE, the only time the
// field can be set. It must never stand between the cluster and its pods:
// failurePolicy Ignore and a short timeout (a pod missed is placed on its
// own, as without gang scheduling). Reinvoked when a later webhook
// (LeaderWorkerSet's, which adds the group index label) changed the pod.
func podGroupWebhook(client admissionregistrationv1.WebhookClientConfig, namespaces *metav1.LabelSelector) admissionregistrationv1.MutatingWebhook {
	return admissionregistrationv1.MutatingWebhook{
		Name:         "podgroup.pods.nvidia.com",
		ClientConfig: client,
		Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
			Rule: admissionregistrationv1.Rule{
				APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"},
				Scope: ptr.To(admissionregistrationv1.NamespacedScope),
			},
		}},
		FailurePolicy:           ptr.To(admissionregistrationv1.Ignore),
		SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
		AdmissionReviewVersions: []string{"v1"},
		NamespaceSelector:       namespaces,
		ObjectSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: render.LabelMultinodeRole, Operator: metav1.LabelSelectorOpExists},
			{Key: render.LabelComponent, Operator: metav1.LabelSelectorOpExists},
		}},
		TimeoutSeconds:     ptr.To[int32](podGroupWebhookTimeout),
		ReinvocationPolicy: ptr.To(admissionregistrationv1.IfNeededReinvocationPolicy),
	}
}

// podGroupWebhookTimeout bounds what a pod's creation waits for the operator.
const podGroupWebhookTimeout = 3
