package render

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/dynamoctl/dynamo-operator/internal/builders"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

// An endpoint picker configured from a ConfigMap of the user's mounts that
// ConfigMap's key at the one path the picker reads, and the operator
// renders no ConfigMap of its own; an epp component without eppConfig
// stays generic.
func TestEPPConfigFromAConfigMapOfTheUsers(t *testing.T) {
	ref := &v1alpha1.EPPConfig{ConfigMapRef: &corev1.ConfigMapKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: "mine"}, Key: "picker.yaml"}}
	dcd := builders.MakeComponent("qwen-epp", "ns", builders.MakeEmptyService().Type(v1alpha1.ComponentTypeEPP).
		Image("epp").EPPConfig(ref)).InGraph("qwen").Obj()
	if cm, err := EPPConfigMap(dcd); cm != nil || err != nil {
		t.Errorf("EPPConfigMap = %v, %v; want none", cm, err)
	}
	d, err := Deployment(dcd, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := corev1.Volume{Name: eppConfigVolume, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: "mine"},
		Items:                []corev1.KeyToPath{{Key: "picker.yaml", Path: EPPConfigKey}},
	}}}
	var got *corev1.Volume
	for i, v := range d.Spec.Template.Spec.Volumes {
		if v.Name == eppConfigVolume {
			got = &d.Spec.Template.Spec.Volumes[i]
		}
	}
	if got == nil {
		t.Fatalf("no volume %s in %v", eppConfigVolume, d.Spec.Template.Spec.Volumes)
	}
	if diff := cmp.Diff(want, *got); diff != "" {
		t.Errorf("config volume (-want +got):\n%s", diff)
	}

	generic := builders.MakeComponent("qwen-epp", "ns", builders.MakeEmptyService().Type(v1alpha1.ComponentTypeEPP).
		Image("epp")).InGraph("qwen").Obj()
	d, err = Deployment(generic, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if main := d.Spec.Template.Spec.Containers[0]; main.Args != nil || main.LivenessProbe != nil {
		t.Errorf("an epp component without eppConfig got the picker's args %v or probe %v", main.Args, main.LivenessProbe)
	}
}
