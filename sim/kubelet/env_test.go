package kubelet

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

// objects is an in-memory Objects: env resolution is pure logic over the
// objects it is given.
type objects struct {
	secrets    map[string]map[string][]byte
	configMaps map[string]map[string]string
}

func (o objects) Secret(_ context.Context, ns, name string) (*corev1.Secret, error) {
	d, ok := o.secrets[ns+"/"+name]
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, name)
	}
	return &corev1.Secret{Data: d}, nil
}

func (o objects) ConfigMap(_ context.Context, ns, name string) (*corev1.ConfigMap, error) {
	d, ok := o.configMaps[ns+"/"+name]
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, name)
	}
	return &corev1.ConfigMap{Data: d}, nil
}

func field(path string) *corev1.EnvVarSource {
	return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}
}

func TestResolveEnv(t *testing.T) {
	objs := objects{
		secrets:    map[string]map[string][]byte{"ns/creds": {"token": []byte("s3cret")}, "ns/bulk": {"B_ONE": []byte("1"), "bad key": []byte("x")}},
		configMaps: map[string]map[string]string{"ns/cfg": {"level": "debug", "A": "from-cm"}},
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "op-0", Namespace: "ns", UID: "u-1", Labels: map[string]string{"app": "op"}, Annotations: map[string]string{"note": "hi"}},
		Spec:       corev1.PodSpec{NodeName: "node-0", ServiceAccountName: "op"},
		Status:     corev1.PodStatus{PodIP: "10.244.0.7", HostIP: "10.245.0.1"},
	}
	c := &corev1.Container{
		Name: "manager",
		EnvFrom: []corev1.EnvFromSource{
			{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}},
			{Prefix: "P_", SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "bulk"}}},
			{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}, Optional: ptr.To(true)}},
		},
		Env: []corev1.EnvVar{
			{Name: "A", Value: "literal wins over envFrom"},
			{Name: "POD_NAME", ValueFrom: field("metadata.name")},
			{Name: "POD_NAMESPACE", ValueFrom: field("metadata.namespace")},
			{Name: "POD_UID", ValueFrom: field("metadata.uid")},
			{Name: "POD_IP", ValueFrom: field("status.podIP")},
			{Name: "NODE", ValueFrom: field("spec.nodeName")},
			{Name: "SA", ValueFrom: field("spec.serviceAccountName")},
			{Name: "APP", ValueFrom: field("metadata.labels['app']")},
			{Name: "NOTE", ValueFrom: field("metadata.annotations['note']")},
			{Name: "TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}, Key: "token"}}},
			{Name: "LEVEL", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Key: "level"}}},
			{Name: "MAYBE", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}, Key: "nope", Optional: ptr.To(true)}}},
			{Name: "ADDR", Value: "$(POD_IP):8081 $(UNDEFINED) $$(POD_IP)"},
		},
	}
	c.Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")}
	c.Env = append(c.Env, corev1.EnvVar{Name: "MEM", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}}})

	got, err := ResolveEnv(context.Background(), objs, pod, c, []corev1.EnvVar{{Name: "KUBERNETES_SERVICE_HOST", Value: "10.245.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"KUBERNETES_SERVICE_HOST=10.245.0.1",
		"A=literal wins over envFrom",
		"level=debug",
		"P_B_ONE=1",
		"POD_NAME=op-0", "POD_NAMESPACE=ns", "POD_UID=u-1", "POD_IP=10.244.0.7", "NODE=node-0", "SA=op",
		"APP=op", "NOTE=hi", "TOKEN=s3cret", "LEVEL=debug",
		"ADDR=10.244.0.7:8081 $(UNDEFINED) $(POD_IP)",
		"MEM=128",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("env (-want +got):\n%s", d)
	}
}

func TestResolveEnvErrorsNameTheField(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}
	cases := map[string]corev1.EnvVar{
		`spec.containers[m].env[T].valueFrom: secretKeyRef: secret "gone"`:                     {Name: "T", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "gone"}, Key: "k"}}},
		`spec.containers[m].env[C].valueFrom: configMapKeyRef: configmap "cfg" has no key "x"`: {Name: "C", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Key: "x"}}},
		`spec.containers[m].env[F].valueFrom: fieldRef: unsupported fieldPath "spec.bogus"`:    {Name: "F", ValueFrom: field("spec.bogus")},
	}
	objs := objects{configMaps: map[string]map[string]string{"ns/cfg": {}}}
	for want, e := range cases {
		_, err := ResolveEnv(context.Background(), objs, pod, &corev1.Container{Name: "m", Env: []corev1.EnvVar{e}}, nil)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("env %s: error %v, want it to contain %q", e.Name, err, want)
		}
	}
}

func TestImageMapping(t *testing.T) {
	m, err := ParseImageMapping("ghcr.io/dynamoctl/dynamo-operator:v1.2.0=/opt/op-v1.2.0")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(ImageMapping{Repo: "ghcr.io/dynamoctl/dynamo-operator", Tag: "v1.2.0", Path: "/opt/op-v1.2.0"}, m); d != "" {
		t.Errorf("mapping (-want +got):\n%s", d)
	}
	r := &Runner{Config: Config{Images: []ImageMapping{m, {Repo: "ghcr.io/dynamoctl/dynamo-operator", Path: "/bin/any"}, {Repo: "localhost:5000/op", Path: "/bin/local"}}}}
	for image, want := range map[string]string{
		"ghcr.io/dynamoctl/dynamo-operator:v1.2.0":       "/opt/op-v1.2.0",
		"ghcr.io/dynamoctl/dynamo-operator:v2.0.0-beta":  "/bin/any",
		"ghcr.io/dynamoctl/dynamo-operator@sha256:abc":   "/bin/any",
		"localhost:5000/op":                              "/bin/local",
		"localhost:5000/op:dev":                          "/bin/local",
		"nvcr.io/nvidia/ai-dynamo/vllm-runtime:0.4.0":    "",
		"ghcr.io/dynamoctl/dynamo-operator-other:v1.2.0": "",
	} {
		if got := r.Match(image); got != want {
			t.Errorf("Match(%s) = %q, want %q", image, got, want)
		}
	}
	if _, err := ParseImageMapping("no-equals"); err == nil {
		t.Error("a mapping without = is accepted")
	}
}
