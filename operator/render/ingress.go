package render

import (
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
	host := ingressHost(dcd)

	var tls []networkingv1.IngressTLS
	if spec.TLS != nil && spec.TLS.SecretName != "" {
		tls = []networkingv1.IngressTLS{{Hosts: []string{host}, SecretName: spec.TLS.SecretName}}
	}
	var className *string
	if spec.IngressControllerClassName != nil && *spec.IngressControllerClassName != "" {
		className = ptr.To(*spec.IngressControllerClassName)
	}

	labels := ingressLabels(dcd)

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

// ingressHost is the host a component is exposed at: hostPrefix + (host
// or the component name) + hostSuffix.
func ingressHost(dcd *v1alpha1.DynamoComponentDeployment) string {
	spec := dcd.Spec.Ingress
	host := spec.Host
	if host == "" {
		host = dcd.Name
	}
	return ptr.Deref(spec.HostPrefix, "") + host + ptr.Deref(spec.HostSuffix, "")
}

// ingressLabels label the Ingress or VirtualService of a component. The
// operator's labels win: the managed-by label scopes its cache, and an
// ingress label overriding it would hide the object from the operator.
func ingressLabels(dcd *v1alpha1.DynamoComponentDeployment) map[string]string {
	labels := merged(workloadLabels(dcd), dcd.Spec.Ingress.Labels, map[string]string{
		LabelComponent: dcd.Name,
		LabelManagedBy: ManagedByValue,
	})
	if g := dcd.Labels[LabelGraphName]; g != "" {
		labels[LabelGraphName] = g
	}
	return labels
}

// VirtualServiceGVK is Istio's VirtualService, as Dynamo's operator writes it.
var VirtualServiceGVK = schema.GroupVersionKind{Group: "networking.istio.io", Version: "v1beta1", Kind: "VirtualService"}

// WantsVirtualService says whether the component asks to be exposed through
// an Istio VirtualService instead of an Ingress.
func WantsVirtualService(dcd *v1alpha1.DynamoComponentDeployment) bool {
	i := dcd.Spec.Ingress
	return i != nil && i.Enabled && i.UseVirtualService
}

// VirtualService renders the Istio VirtualService exposing a component's
// HTTP port through the gateway ingress.virtualServiceGateway names, for
// the host its Ingress would have (ingressHost); nil unless the component
// asks for one with a gateway, as in Dynamo. TLS is the gateway's.
func VirtualService(dcd *v1alpha1.DynamoComponentDeployment) *unstructured.Unstructured {
	spec := dcd.Spec.Ingress
	if !WantsVirtualService(dcd) || spec.VirtualServiceGateway == nil || *spec.VirtualServiceGateway == "" {
		return nil
	}
	labels := map[string]any{}
	for k, v := range ingressLabels(dcd) {
		labels[k] = v
	}
	metadata := map[string]any{"name": dcd.Name, "namespace": dcd.Namespace, "labels": labels}
	if a := merged(workloadAnnotations(dcd), spec.Annotations); len(a) > 0 {
		annotations := map[string]any{}
		for k, v := range a {
			annotations[k] = v
		}
		metadata["annotations"] = annotations
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": VirtualServiceGVK.GroupVersion().String(),
		"kind":       VirtualServiceGVK.Kind,
		"metadata":   metadata,
		"spec": map[string]any{
			"hosts":    []any{ingressHost(dcd)},
			"gateways": []any{*spec.VirtualServiceGateway},
			"http": []any{map[string]any{
				"match": []any{map[string]any{"uri": map[string]any{"prefix": "/"}}},
				"route": []any{map[string]any{"destination": map[string]any{
					"host": dcd.Name,
					"port": map[string]any{"number": int64(HTTPPort)},
				}}},
			}},
		},
	}}
}
