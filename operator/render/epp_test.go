package render

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

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

// inlineEPPConfig is an eppConfig.config of one plugin.
func inlineEPPConfig(pluginType string) *v1alpha1.EPPConfig {
	return &v1alpha1.EPPConfig{Config: &runtime.RawExtension{Raw: []byte(`{"plugins":[{"type":"` + pluginType + `"}]}`)}}
}

// The InferencePool of a graph's picker is Dynamo's: the graph's workers of
// the picker's runtime namespace on their HTTP port, picked by the picker's
// Service on 9002; a runtime namespace too long for a label selects the
// graph's workers by the graph's label instead. No picker, no pool.
func TestInferencePool(t *testing.T) {
	pool := func(selector map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "inference.networking.k8s.io/v1",
			"kind":       "InferencePool",
			"metadata": map[string]any{
				"name":      "qwen-pool",
				"namespace": "ns",
				"labels": map[string]any{
					LabelGraphName:     "qwen",
					LabelComponent:     "qwen-epp",
					LabelComponentType: "epp",
					LabelManagedBy:     ManagedByValue,
				},
			},
			"spec": map[string]any{
				"selector":    map[string]any{"matchLabels": selector},
				"targetPorts": []any{map[string]any{"number": int64(8000)}},
				"endpointPickerRef": map[string]any{
					"kind": "Service",
					"name": "qwen-epp",
					"port": map[string]any{"number": int64(9002)},
				},
			},
		}}
	}
	picker := func(s *builders.ServiceWrapper) *v1alpha1.DynamoComponentDeployment {
		return builders.MakeGraphComponent("qwen", "Epp", "ns", s.Type(v1alpha1.ComponentTypeEPP).Image("epp")).Obj()
	}
	long := strings.Repeat("n", 60)
	for name, tc := range map[string]struct {
		picker *v1alpha1.DynamoComponentDeployment
		want   *unstructured.Unstructured
	}{
		"the graph's runtime namespace": {
			picker: picker(builders.MakeEmptyService().EPPConfig(inlineEPPConfig("picker"))),
			want:   pool(map[string]any{LabelComponentType: "worker", LabelDynamoNamespace: "ns-qwen"}),
		},
		"a runtime namespace of the picker's": {
			picker: picker(builders.MakeEmptyService().EPPConfig(inlineEPPConfig("picker")).DynamoNamespace("shared")),
			want:   pool(map[string]any{LabelComponentType: "worker", LabelDynamoNamespace: "shared"}),
		},
		"a runtime namespace too long for a label": {
			picker: picker(builders.MakeEmptyService().EPPConfig(inlineEPPConfig("picker")).DynamoNamespace(long + "-qwen")),
			want:   pool(map[string]any{LabelComponentType: "worker", LabelGraphName: "qwen"}),
		},
		"no picker": {},
	} {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, InferencePool(tc.picker)); diff != "" {
				t.Errorf("InferencePool (-want +got):\n%s", diff)
			}
		})
	}
}

// The picker of a graph is its epp component with eppConfig, the first by
// service name; an epp component without eppConfig is none.
func TestEndpointPicker(t *testing.T) {
	component := func(service string, s *builders.ServiceWrapper) *v1alpha1.DynamoComponentDeployment {
		return builders.MakeGraphComponent("g", service, "ns", s.Image("img")).Obj()
	}
	worker := component("Worker", builders.MakeEmptyService().Type(v1alpha1.ComponentTypeWorker))
	generic := component("Alpha", builders.MakeEmptyService().Type(v1alpha1.ComponentTypeEPP))
	first := component("Epp", builders.MakeEmptyService().Type(v1alpha1.ComponentTypeEPP).EPPConfig(inlineEPPConfig("a")))
	second := component("Picker", builders.MakeEmptyService().Type(v1alpha1.ComponentTypeEPP).EPPConfig(inlineEPPConfig("b")))
	for name, tc := range map[string]struct {
		components []*v1alpha1.DynamoComponentDeployment
		want       *v1alpha1.DynamoComponentDeployment
	}{
		"none":                      {components: []*v1alpha1.DynamoComponentDeployment{worker, generic}},
		"one":                       {components: []*v1alpha1.DynamoComponentDeployment{worker, first}, want: first},
		"the first by service name": {components: []*v1alpha1.DynamoComponentDeployment{second, generic, first}, want: first},
	} {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, EndpointPicker(tc.components)); diff != "" {
				t.Errorf("EndpointPicker (-want +got):\n%s", diff)
			}
		})
	}
}

// A picker configured inline carries a digest of the configuration the
// operator writes on its pod template, so that a new configuration rolls
// it; the same configuration, however written, the same digest. A
// configMapRef's ConfigMap is the user's: no digest.
func TestEPPConfigHashOnThePodTemplate(t *testing.T) {
	template := func(e *v1alpha1.EPPConfig) map[string]string {
		t.Helper()
		dcd := builders.MakeGraphComponent("qwen", "Epp", "ns", builders.MakeEmptyService().Type(v1alpha1.ComponentTypeEPP).
			Image("epp").EPPConfig(e)).Obj()
		d, err := Deployment(dcd, nil, Options{})
		if err != nil {
			t.Fatal(err)
		}
		return d.Spec.Template.Annotations
	}
	digest := func(e *v1alpha1.EPPConfig) string {
		t.Helper()
		dcd := builders.MakeGraphComponent("qwen", "Epp", "ns", builders.MakeEmptyService().Type(v1alpha1.ComponentTypeEPP).
			Image("epp").EPPConfig(e)).Obj()
		cm, err := EPPConfigMap(dcd)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256([]byte(cm.Data[EPPConfigKey]))
		return hex.EncodeToString(sum[:])[:16]
	}
	reordered := &v1alpha1.EPPConfig{Config: &runtime.RawExtension{Raw: []byte("plugins:\n- type: a\n")}}
	ref := &v1alpha1.EPPConfig{ConfigMapRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "mine"}}}
	for name, tc := range map[string]struct {
		config *v1alpha1.EPPConfig
		want   map[string]string
	}{
		"inline":               {config: inlineEPPConfig("a"), want: map[string]string{AnnotationEPPConfigHash: digest(inlineEPPConfig("a"))}},
		"inline, in YAML":      {config: reordered, want: map[string]string{AnnotationEPPConfigHash: digest(inlineEPPConfig("a"))}},
		"another inline":       {config: inlineEPPConfig("b"), want: map[string]string{AnnotationEPPConfigHash: digest(inlineEPPConfig("b"))}},
		"a ConfigMap of users": {config: ref},
	} {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, template(tc.config)); diff != "" {
				t.Errorf("pod template annotations (-want +got):\n%s", diff)
			}
		})
	}
	if digest(inlineEPPConfig("a")) == digest(inlineEPPConfig("b")) {
		t.Error("two configurations, one digest")
	}
}
