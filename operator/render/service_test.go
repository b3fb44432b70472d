package render

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/dynamoctl/dynamo-operator/internal/builders"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

func TestService(t *testing.T) {
	http := corev1.ServicePort{Name: "http", Port: 8000, TargetPort: intstr.FromString("http"), Protocol: corev1.ProtocolTCP}
	system := corev1.ServicePort{Name: "system", Port: 9090, TargetPort: intstr.FromString("system"), Protocol: corev1.ProtocolTCP}
	cases := []struct {
		componentType v1alpha1.ComponentType
		want          []corev1.ServicePort
	}{
		{v1alpha1.ComponentTypeFrontend, []corev1.ServicePort{http, system}},
		{v1alpha1.ComponentTypeWorker, []corev1.ServicePort{system}},
		{v1alpha1.ComponentTypePlanner, []corev1.ServicePort{system}},
		{"", []corev1.ServicePort{system}},
	}
	for _, tc := range cases {
		t.Run(string(tc.componentType), func(t *testing.T) {
			dcd := builders.MakeGraphComponent("g", "Worker", "ns", builders.MakeService().Image(testImage).
				Type(tc.componentType).
				Label("svc", "l")).
				Label("team", "a").Obj()
			svc := Service(dcd)
			if svc.APIVersion != "v1" || svc.Kind != "Service" {
				t.Errorf("TypeMeta %+v", svc.TypeMeta)
			}
			if svc.Name != "g-worker" || svc.Namespace != "ns" {
				t.Errorf("name %s/%s", svc.Namespace, svc.Name)
			}
			if svc.Spec.Type != corev1.ServiceTypeClusterIP || svc.Spec.ClusterIP != "" {
				t.Errorf("type %q clusterIP %q", svc.Spec.Type, svc.Spec.ClusterIP)
			}
			if diff := cmp.Diff(tc.want, svc.Spec.Ports); diff != "" {
				t.Errorf("ports (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(map[string]string{LabelComponent: "g-worker"}, svc.Spec.Selector); diff != "" {
				t.Errorf("selector (-want +got):\n%s", diff)
			}
			d, err := Deployment(dcd, nil, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(d.Labels, svc.Labels); diff != "" {
				t.Errorf("labels, want the Deployment's (-want +got):\n%s", diff)
			}
			// Every target port names a port of the main container.
			main := findContainer(d.Spec.Template.Spec.Containers, MainContainerName)
			for _, p := range svc.Spec.Ports {
				found := false
				for _, cp := range main.Ports {
					found = found || (cp.Name == p.TargetPort.StrVal && cp.ContainerPort == p.Port)
				}
				if !found {
					t.Errorf("service port %s targets no container port", p.Name)
				}
			}
		})
	}
}

func TestModelService(t *testing.T) {
	if svc := ModelService(builders.MakeGraphComponent("g", "Worker", "ns", builders.MakeService().Type(v1alpha1.ComponentTypeWorker).Image(testImage)).Obj()); svc != nil {
		t.Errorf("model Service %+v without a modelRef", svc)
	}
	dcd := builders.MakeGraphComponent("g", "Worker", "ns", builders.MakeService().Type(v1alpha1.ComponentTypeWorker).Image(testImage).
		ModelRef("Qwen/Qwen3-0.6B")).Obj()
	svc := ModelService(dcd)
	if svc == nil {
		t.Fatal("no model Service")
	}
	if svc.APIVersion != "v1" || svc.Kind != "Service" {
		t.Errorf("TypeMeta %+v", svc.TypeMeta)
	}
	if svc.Name != "g-worker-model" || svc.Name != ModelServiceName(dcd.Name) || svc.Namespace != "ns" {
		t.Errorf("name %s/%s", svc.Namespace, svc.Name)
	}
	if svc.Spec.ClusterIP != corev1.ClusterIPNone {
		t.Errorf("clusterIP %q, want headless", svc.Spec.ClusterIP)
	}
	if svc.Spec.PublishNotReadyAddresses {
		t.Error("not-ready addresses are published")
	}
	wantLabels := Service(dcd).Labels
	wantLabels[LabelBaseModelHash] = BaseModelHash("Qwen/Qwen3-0.6B")
	if diff := cmp.Diff(wantLabels, svc.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{LabelComponent: "g-worker"}, svc.Spec.Selector); diff != "" {
		t.Errorf("selector (-want +got):\n%s", diff)
	}
	want := []corev1.ServicePort{{Name: "system", Port: 9090, TargetPort: intstr.FromString("system"), Protocol: corev1.ProtocolTCP}}
	if diff := cmp.Diff(want, svc.Spec.Ports); diff != "" {
		t.Errorf("ports (-want +got):\n%s", diff)
	}
}
