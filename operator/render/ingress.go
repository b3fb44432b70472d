package render

import (
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

// Ingress renders the Ingress exposing a component's HTTP port; nil unless
// spec.ingress.enabled. The host is hostPrefix + (host or the component
// name) + hostSuffix, so a suffix such as ".example.com" gives every graph a
// distinct host without spelling each one out.
func Ingress(dcd *v1alpha1.DynamoComponentDeployment) *networkingv1.Ingress {
	spec := dcd.Spec.Ingress
	if spec == nil || !spec.Enabled {
		return nil
	}
	host := spec.Host
	if host == "" {
		host = dcd.Name
	}
	host = ptr.Deref(spec.HostPrefix, "") + host + ptr.Deref(spec.HostSuffix, "")

	var tls []networkingv1.IngressTLS
	if spec.TLS != nil && spec.TLS.SecretName != "" {
		tls = []networkingv1.IngressTLS{{Hosts: []string{host}, SecretName: spec.TLS.SecretName}}
	}
	var className *string
	if spec.IngressControllerClassName != nil && *spec.IngressControllerClassName != "" {
		className = ptr.To(*spec.IngressControllerClassName)
	}

	// The operator's labels win: the managed-by label scopes its cache, and
	// an ingress label overriding it would hide the Ingress from the operator.
	labels := merged(workloadLabels(dcd), spec.Labels, map[string]string{
		LabelComponent: dcd.Name,
		LabelManagedBy: ManagedByValue,
	})
	if g := dcd.Labels[LabelGraphName]; g != "" {
		labels[LabelGraphName] = g
	}

	return &networkingv1.Ingress{
		TypeMeta: metav1.TypeMeta{APIVersion: networkingv1.SchemeGroupVersion.String(), Kind: "Ingress"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        dcd.Name,
			Namespace:   dcd.Namespace,
			Labels:      labels,
			Annotations: merged(workloadAnnotations(dcd), spec.Annotations),
		},
		Spec: networkingv1.IngressSpec{
			IngressClassName: className,
			TLS:              tls,
			Rules: []networkingv1.IngressRule{{
				Host: host,
				IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
					Paths: []networkingv1.HTTPIngressPath{{
						Path:     "/",
						PathType: ptr.To(networkingv1.PathTypePrefix),
						Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
							Name: dcd.Name,
							Port: networkingv1.ServiceBackendPort{Name: HTTPPortName},
						}},
					}},
				}},
			}},
		},
	}
}
