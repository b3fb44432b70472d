package webhooks

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1beta1"
)

// betaGraph is a v1beta1 graph whose worker's main container is not its
// first, with a container beside it, and a compilation cache.
const betaGraph = `
apiVersion: nvidia.com/v1beta1
kind: DynamoGraphDeployment
metadata: {name: llm}
spec:
  env: [{name: A, value: "1"}]
  components:
  - name: Frontend
    type: frontend
  - name: VllmWorker
    type: prefill
    sharedMemorySize: 8Gi
    compilationCache: {pvcName: cache, mountPath: /cache}
    experimental: {failover: {}}
    podTemplate:
      metadata: {labels: {team: a}}
      spec:
        nodeSelector: {pool: gpu}
        containers:
        - name: proxy
          image: proxy:1
        - name: main
          image: vllm:1
          env: [{name: B, value: "2"}, {name: C, value: "3"}]
          envFrom: [{secretRef: {name: hf-token}}]
          resources: {limits: {nvidia.com/gpu: "1"}}
          livenessProbe: {httpGet: {path: /live, port: 9090}}
`

func TestBetaGraphPaths(t *testing.T) {
	beta := &v1beta1.DynamoGraphDeployment{}
	if err := yaml.UnmarshalStrict([]byte(betaGraph), beta); err != nil {
		t.Fatal(err)
	}
	alpha := &v1alpha1.DynamoGraphDeployment{}
	if err := beta.ConvertTo(alpha); err != nil {
		t.Fatal(err)
	}
	const worker = "spec.components[1]"
	const main = worker + ".podTemplate.spec.containers[1]"
	cases := map[string]string{
		"metadata.name":                                             "metadata.name",
		"spec.backendFramework":                                     "spec.backendFramework",
		"spec.envs[0].name":                                         "spec.env[0].name",
		"spec.services":                                             "spec.components",
		"spec.services.Frontend":                                    "spec.components[0]",
		"spec.services[Frontend].replicas":                          "spec.components[0].replicas",
		"spec.services.VllmWorker.componentType":                    worker + ".type",
		"spec.services.VllmWorker.subComponentType":                 worker + ".type",
		"spec.services.VllmWorker.sharedMemory.size":                worker + ".sharedMemorySize",
		"spec.services.VllmWorker.failover":                         worker + ".experimental.failover",
		"spec.services.VllmWorker.resources.limits.gpu":             main + ".resources.limits.gpu",
		"spec.services.VllmWorker.envs[1].value":                    main + ".env[1].value",
		"spec.services.VllmWorker.envFromSecret":                    main + ".envFrom[0]",
		"spec.services.VllmWorker.livenessProbe":                    main + ".livenessProbe",
		"spec.services.VllmWorker.volumeMounts[0].name":             worker + ".compilationCache",
		"spec.services.VllmWorker.extraPodMetadata":                 worker + ".podTemplate.metadata",
		"spec.services.VllmWorker.extraPodSpec.mainContainer.image": main + ".image",
		"spec.services.VllmWorker.extraPodSpec.containers[0].image": worker + ".podTemplate.spec.containers[0].image",
		"spec.services.VllmWorker.extraPodSpec.nodeSelector":        worker + ".podTemplate.spec.nodeSelector",
		"spec.services.VllmWorker.multinode.nodeCount":              worker + ".multinode.nodeCount",
		"spec.services.Unknown.replicas":                            "spec.services.Unknown.replicas",
		"spec.pvcs[0].name":                                         worker + ".compilationCache.pvcName",
		"spec.pvcs[0]":                                              worker + ".compilationCache",
		"spec.pvcs[1].name":                                         "spec.pvcs[1].name",
	}
	for alphaPath, want := range cases {
		t.Run(alphaPath, func(t *testing.T) {
			got := betaGraphErrors(alpha, field.ErrorList{field.Invalid(fieldPath(alphaPath), "x", "rule")})
			if diff := cmp.Diff(want, got[0].Field); diff != "" {
				t.Errorf("v1beta1 path of %s (-want +got):\n%s", alphaPath, diff)
			}
		})
	}
}

func TestBetaComponentPaths(t *testing.T) {
	beta := &v1beta1.DynamoComponentDeployment{}
	beta.Name = "llm-vllmworker"
	beta.Spec.ComponentName = "VllmWorker"
	beta.Spec.PodTemplate = &corev1PodTemplateWithMain
	alpha := &v1alpha1.DynamoComponentDeployment{}
	if err := beta.ConvertTo(alpha); err != nil {
		t.Fatal(err)
	}
	cases := map[string]string{
		"spec.envs[0]":  "spec.podTemplate.spec.containers[0].env[0]",
		"spec.replicas": "spec.replicas",
		"spec.extraPodSpec.mainContainer.command": "spec.podTemplate.spec.containers[0].command",
		"metadata.name": "metadata.name",
	}
	for alphaPath, want := range cases {
		t.Run(alphaPath, func(t *testing.T) {
			got := betaComponentErrors(alpha, field.ErrorList{field.Required(fieldPath(alphaPath), "rule")})
			if diff := cmp.Diff(want, got[0].Field); diff != "" {
				t.Errorf("v1beta1 path of %s (-want +got):\n%s", alphaPath, diff)
			}
		})
	}
}

// fieldPath is a *field.Path whose String() is s.
func fieldPath(s string) *field.Path { return field.NewPath(s) }

var corev1PodTemplateWithMain = corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
	Name: v1beta1.MainContainerName, Image: "vllm:1", Command: []string{"python3"},
	Env: []corev1.EnvVar{{Name: "A", Value: "1"}},
}}}}
