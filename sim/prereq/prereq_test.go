package prereq

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

func TestFor(t *testing.T) {
	const doc = `
apiVersion: nvidia.com/v1alpha1
kind: DynamoGraphDeployment
metadata: {name: g}
spec:
  envs:
  - name: HF_TOKEN
    valueFrom: {secretKeyRef: {name: hf-token-secret, key: HF_TOKEN}}
  services:
    Worker:
      envFromSecret: hf-token-secret
      extraPodSpec:
        volumes:
        - name: cfg
          configMap: {name: nvidia-config}
        - name: opt
          secret: {secretName: maybe, optional: true}
        - name: certs
          secret: {secretName: tls}
        mainContainer:
          env:
          - name: AWS_ACCESS_KEY_ID
            valueFrom: {secretKeyRef: {name: minio-secret, key: AWS_ACCESS_KEY_ID}}
          - name: AWS_SECRET_ACCESS_KEY
            valueFrom: {secretKeyRef: {name: minio-secret, key: AWS_SECRET_ACCESS_KEY}}
`
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatal(err)
	}
	tls := &unstructured.Unstructured{}
	tls.SetKind("Secret")
	tls.SetName("tls")
	secret := func(name string, keys ...string) client.Object {
		s := &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, StringData: map[string]string{}}
		for _, k := range keys {
			s.StringData[k] = Placeholder
		}
		return s
	}
	want := []client.Object{
		secret("hf-token-secret", "HF_TOKEN"),
		secret("minio-secret", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"),
		&corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: "nvidia-config", Namespace: "ns"}, Data: map[string]string{"config": Placeholder}},
	}
	// tls is in the manifest itself; the optional Secret is not needed.
	if diff := cmp.Diff(want, For([]*unstructured.Unstructured{u, tls}, "ns")); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestForAndClaimsOfV1beta1(t *testing.T) {
	const doc = `
apiVersion: nvidia.com/v1beta1
kind: DynamoGraphDeployment
metadata: {name: g}
spec:
  components:
  - name: Worker
    type: worker
    compilationCache: {pvcName: compilation-cache}
    podTemplate:
      spec:
        containers:
        - name: main
          envFrom:
          - secretRef: {name: hf-token-secret}
          - configMapRef: {name: engine-args, optional: true}
        - name: engine
          env:
          - name: TOKEN
            valueFrom: {secretKeyRef: {name: ngc, key: NGC_API_KEY}}
        volumes:
        - name: lora
          persistentVolumeClaim: {claimName: lora-cache}
        - name: models
          persistentVolumeClaim: {claimName: models}
        - name: cfg
          configMap: {name: nvidia-config}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: models}
`
	objs := parse(t, doc)
	var got []string
	for _, o := range For(objs, "ns") {
		got = append(got, o.GetObjectKind().GroupVersionKind().Kind+"/"+o.GetName())
	}
	want := []string{"Secret/hf-token-secret", "Secret/ngc", "ConfigMap/nvidia-config"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("For (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"compilation-cache", "lora-cache"}, Claims(objs)); diff != "" {
		t.Errorf("Claims (-want +got):\n%s", diff)
	}
}

func TestClaimsOfV1alpha1(t *testing.T) {
	const doc = `
apiVersion: nvidia.com/v1alpha1
kind: DynamoGraphDeployment
metadata: {name: g}
spec:
  pvcs:
  - name: model-cache
  - name: created
    create: true
  services:
    Worker:
      pvc: {name: service-claim}
      volumeMounts:
      - name: model-cache
`
	if diff := cmp.Diff([]string{"model-cache", "service-claim"}, Claims(parse(t, doc))); diff != "" {
		t.Errorf("Claims (-want +got):\n%s", diff)
	}
}

func parse(t *testing.T, stream string) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, doc := range strings.Split(stream, "\n---\n") {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatal(err)
		}
		out = append(out, u)
	}
	return out
}
