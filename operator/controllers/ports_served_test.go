package controllers

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// A kept workload is exposed with the ports its pods serve: a port aimed at
// a name no container declares (one this renderer's pods would add) is left
// out; numbered targets stay.
func TestPortsServed(t *testing.T) {
	port := func(name string, target intstr.IntOrString) corev1.ServicePort {
		return corev1.ServicePort{Name: name, TargetPort: target}
	}
	spec := &corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "sidecar", Ports: []corev1.ContainerPort{{Name: "metrics"}}}},
		Containers:     []corev1.Container{{Name: "main", Ports: []corev1.ContainerPort{{Name: "system"}, {Name: "http"}}}},
	}
	cases := map[string]struct {
		ports, want []corev1.ServicePort
	}{
		"every target served": {
			ports: []corev1.ServicePort{port("http", intstr.FromString("http")), port("system", intstr.FromString("system"))},
			want:  []corev1.ServicePort{port("http", intstr.FromString("http")), port("system", intstr.FromString("system"))},
		},
		"a new named target is left out": {
			ports: []corev1.ServicePort{port("grpc", intstr.FromString("grpc")), port("system", intstr.FromString("system"))},
			want:  []corev1.ServicePort{port("system", intstr.FromString("system"))},
		},
		"a sidecar's port and a number stay": {
			ports: []corev1.ServicePort{port("metrics", intstr.FromString("metrics")), port("raw", intstr.FromInt32(9002))},
			want:  []corev1.ServicePort{port("metrics", intstr.FromString("metrics")), port("raw", intstr.FromInt32(9002))},
		},
	}
	for name, c := range cases {
		if diff := cmp.Diff(c.want, portsServed(c.ports, spec)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
}
