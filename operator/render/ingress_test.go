package render

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/utils/ptr"

	"github.com/dynamoctl/dynamo-operator/internal/builders"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

func TestIngressDisabled(t *testing.T) {
	for _, spec := range []*v1alpha1.IngressSpec{nil, {}, {Host: "h"}} {
		dcd := builders.MakeGraphComponent("g", "Worker", "ns", builders.MakeService().Type(v1alpha1.ComponentTypeWorker).Image(testImage).
			Ingress(spec)).Obj()
		if ing := Ingress(dcd); ing != nil {
			t.Errorf("Ingress %+v for %+v", ing, spec)
		}
	}
}

func TestIngressHost(t *testing.T) {
	cases := map[string]struct {
		spec v1alpha1.IngressSpec
		want string
	}{
		"component name": {v1alpha1.IngressSpec{}, "g-worker"},
		"host":           {v1alpha1.IngressSpec{Host: "llm.example.com"}, "llm.example.com"},
		"prefix and suffix around the component name": {v1alpha1.IngressSpec{HostPrefix: ptr.To("dev-"), HostSuffix: ptr.To(".example.com")}, "dev-g-worker.example.com"},
		"prefix and suffix around the host":           {v1alpha1.IngressSpec{Host: "llm", HostPrefix: ptr.To("dev-"), HostSuffix: ptr.To(".example.com")}, "dev-llm.example.com"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tc.spec.Enabled = true
			ing := Ingress(builders.MakeGraphComponent("g", "Worker", "ns", builders.MakeService().Type(v1alpha1.ComponentTypeWorker).Image(testImage).
				Ingress(&tc.spec)).Obj())
			if got := ing.Spec.Rules[0].Host; got != tc.want {
				t.Errorf("host %q, want %q", got, tc.want)
			}
		})
	}
}

func TestIngress(t *testing.T) {
	dcd := builders.MakeGraphComponent("g", "Worker", "ns", builders.MakeService().Image(testImage).
		Type(v1alpha1.ComponentTypeFrontend).
		Ingress(&v1alpha1.IngressSpec{
			Enabled:                    true,
			Host:                       "llm.example.com",
			TLS:                        &v1alpha1.IngressTLSSpec{SecretName: "llm-tls"},
			IngressControllerClassName: ptr.To("nginx"),
			Labels:                     map[string]string{"expose": "public", LabelManagedBy: "someone-else"},
			Annotations:                map[string]string{"nginx.ingress.kubernetes.io/proxy-body-size": "0", "shared": "ingress"},
		})).
		Annotations(map[string]string{"owner": "me", "shared": "dcd"}).Obj()
	ing := Ingress(dcd)
	if ing.APIVersion != "networking.k8s.io/v1" || ing.Kind != "Ingress" {
		t.Errorf("TypeMeta %+v", ing.TypeMeta)
	}
	if ing.Name != "g-worker" || ing.Namespace != "ns" {
		t.Errorf("name %s/%s", ing.Namespace, ing.Name)
	}
	if ing.Spec.IngressClassName == nil || *ing.Spec.IngressClassName != "nginx" {
		t.Errorf("class %v", ing.Spec.IngressClassName)
	}
	wantTLS := []networkingv1.IngressTLS{{Hosts: []string{"llm.example.com"}, SecretName: "llm-tls"}}
	if diff := cmp.Diff(wantTLS, ing.Spec.TLS); diff != "" {
		t.Errorf("tls (-want +got):\n%s", diff)
	}
	wantRules := []networkingv1.IngressRule{{
		Host: "llm.example.com",
		IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
			Paths: []networkingv1.HTTPIngressPath{{
				Path:     "/",
				PathType: ptr.To(networkingv1.PathTypePrefix),
				Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
					Name: "g-worker", Port: networkingv1.ServiceBackendPort{Name: "http"},
				}},
			}},
		}},
	}}
	if diff := cmp.Diff(wantRules, ing.Spec.Rules); diff != "" {
		t.Errorf("rules (-want +got):\n%s", diff)
	}
	wantLabels := map[string]string{
		LabelGraphName: "g", LabelComponent: "g-worker", LabelManagedBy: ManagedByValue, "expose": "public",
	}
	if diff := cmp.Diff(wantLabels, ing.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	wantAnnotations := map[string]string{"owner": "me", "shared": "ingress", "nginx.ingress.kubernetes.io/proxy-body-size": "0"}
	if diff := cmp.Diff(wantAnnotations, ing.Annotations); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
}

func TestIngressMinimal(t *testing.T) {
	ing := Ingress(builders.MakeGraphComponent("g", "Worker", "ns", builders.MakeService().Type(v1alpha1.ComponentTypeWorker).Image(testImage).
		Ingress(&v1alpha1.IngressSpec{Enabled: true, TLS: &v1alpha1.IngressTLSSpec{}, IngressControllerClassName: ptr.To("")})).Obj())
	if ing.Spec.TLS != nil {
		t.Errorf("tls %+v without a secret", ing.Spec.TLS)
	}
	if ing.Spec.IngressClassName != nil {
		t.Errorf("class %q set from an empty name", *ing.Spec.IngressClassName)
	}
	if ing.Annotations != nil {
		t.Errorf("annotations %v", ing.Annotations)
	}
}

// A component asking for a VirtualService with a gateway gets Istio's
// VirtualService as Dynamo renders it: its host, the gateway, every path to
// the component's Service on the HTTP port. Without useVirtualService, or
// without a gateway, there is none.
func TestVirtualService(t *testing.T) {
	spec := &v1alpha1.IngressSpec{Enabled: true, Host: "llm.example.com", UseVirtualService: true,
		VirtualServiceGateway: ptr.To("istio-system/gw")}
	dcd := builders.MakeGraphComponent("g", "Frontend", "ns", builders.MakeService().Type(v1alpha1.ComponentTypeFrontend).
		Image(testImage).Ingress(spec)).Obj()
	want := map[string]any{
		"apiVersion": "networking.istio.io/v1beta1",
		"kind":       "VirtualService",
		"metadata": map[string]any{"name": "g-frontend", "namespace": "ns", "labels": map[string]any{
			LabelComponent: "g-frontend", LabelGraphName: "g", LabelManagedBy: ManagedByValue,
		}},
		"spec": map[string]any{
			"hosts":    []any{"llm.example.com"},
			"gateways": []any{"istio-system/gw"},
			"http": []any{map[string]any{
				"match": []any{map[string]any{"uri": map[string]any{"prefix": "/"}}},
				"route": []any{map[string]any{"destination": map[string]any{
					"host": "g-frontend", "port": map[string]any{"number": int64(HTTPPort)},
				}}},
			}},
		},
	}
	if diff := cmp.Diff(want, VirtualService(dcd).Object); diff != "" {
		t.Errorf("VirtualService (-want +got):\n%s", diff)
	}
	for name, s := range map[string]*v1alpha1.IngressSpec{
		"no useVirtualService": {Enabled: true, VirtualServiceGateway: ptr.To("gw")},
		"no gateway":           {Enabled: true, UseVirtualService: true},
		"ingress disabled":     {UseVirtualService: true, VirtualServiceGateway: ptr.To("gw")},
	} {
		dcd := builders.MakeGraphComponent("g", "Frontend", "ns", builders.MakeService().Type(v1alpha1.ComponentTypeFrontend).
			Image(testImage).Ingress(s)).Obj()
		if vs := VirtualService(dcd); vs != nil {
			t.Errorf("%s: VirtualService %v", name, vs)
		}
	}
}
