package rules

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/dynamoctl/dynamo-operator/internal/builders"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

// wantErrs checks that errs hold exactly the wanted "path: detail fragment"
// pairs, in any order.
func wantErrs(t *testing.T, errs field.ErrorList, want ...string) {
	t.Helper()
	if len(errs) != len(want) {
		t.Fatalf("got %d errors, want %d:\n%v", len(errs), len(want), errs)
	}
	for _, w := range want {
		found := false
		for _, e := range errs {
			if strings.Contains(e.Error(), w) {
				found = true
			}
		}
		if !found {
			t.Errorf("no error contains %q in:\n%v", w, errs)
		}
	}
}

func TestGraphChildNames(t *testing.T) {
	long := strings.Repeat("a", 60)
	wantErrs(t, graphChildNames(builders.MakeGraph("llm", "ns").
		Service("Frontend", builders.MakeEmptyService()).
		Service("VllmWorker", builders.MakeEmptyService()).
		Obj()))
	wantErrs(t, graphChildNames(builders.MakeGraph("llm", "ns").Service(long, builders.MakeEmptyService()).Obj()),
		"spec.services."+long+": Invalid value: \"llm-"+long+"\": the component name <graph>-<lowercased service> is also its Service's name: must be no more than 63 characters")
	wantErrs(t, graphChildNames(builders.MakeGraph("llm", "ns").Service("my_worker", builders.MakeEmptyService()).Obj()), "spec.services.my_worker: Invalid value")
	wantErrs(t, graphChildNames(builders.MakeGraph("llm", "ns").
		Service("Worker", builders.MakeEmptyService()).
		Service("worker", builders.MakeEmptyService()).
		Obj()), "has the same component name as service")
	wantErrs(t, graphChildNames(builders.MakeGraph("1llm", "ns").Service("w", builders.MakeEmptyService()).Obj()), "DNS-1035")
	wantErrs(t, graphChildNames(builders.MakeGraph(strings.Repeat("b", 57), "ns").
		Service("w", builders.MakeEmptyService().ModelRef("m")).
		Obj()),
		"spec.services.w.modelRef")
}

func TestComponentChildNames(t *testing.T) {
	dcd := func(name string, model bool) *v1alpha1.DynamoComponentDeployment {
		s := builders.MakeEmptyService()
		if model {
			s.ModelRef("m")
		}
		return builders.MakeComponent(name, "", s).Obj()
	}
	wantErrs(t, componentChildNames(dcd("decode", true)))
	wantErrs(t, componentChildNames(dcd("my.decode", false)), "metadata.name: Invalid value: \"my.decode\": the component's Deployment and Service take its name, which must be a DNS-1035 label")
	wantErrs(t, componentChildNames(dcd(strings.Repeat("d", 60), true)), "<name>-model")
	wantErrs(t, componentChildNames(dcd(strings.Repeat("d", 60), false)))
}

func TestServiceResources(t *testing.T) {
	p := field.NewPath("spec", "services").Child("W")
	ok := builders.MakeEmptyService().Resources(&v1alpha1.Resources{Limits: &v1alpha1.ResourceItem{CPU: "10", Memory: "20Gi", GPU: "1"}}).Obj()
	wantErrs(t, serviceResources(ok, p))
	bad := builders.MakeEmptyService().Resources(&v1alpha1.Resources{
		Requests: &v1alpha1.ResourceItem{CPU: "lots", Custom: map[string]string{"ephemeral-storage": "2 Gi"}},
		Limits:   &v1alpha1.ResourceItem{GPU: "1.5"},
	}).Obj()
	wantErrs(t, serviceResources(bad, p),
		"spec.services.W.resources.requests.cpu", "spec.services.W.resources.requests.custom[ephemeral-storage]",
		"spec.services.W.resources.limits.gpu: Invalid value: \"1.5\": must be a non-negative integer")
}

func TestServiceResourceNames(t *testing.T) {
	p := field.NewPath("spec")
	ok := builders.MakeEmptyService().Resources(&v1alpha1.Resources{Limits: &v1alpha1.ResourceItem{GPUType: "amd.com/gpu", Custom: map[string]string{"ephemeral-storage": "1Gi"}}}).Obj()
	wantErrs(t, serviceResourceNames(ok, p))
	bad := builders.MakeEmptyService().Resources(&v1alpha1.Resources{Limits: &v1alpha1.ResourceItem{GPUType: "nvidia gpu", Custom: map[string]string{"/x": "1"}}}).Obj()
	wantErrs(t, serviceResourceNames(bad, p), "spec.resources.limits.gpuType", "spec.resources.limits.custom[/x]")
}

func TestServiceVolumeMounts(t *testing.T) {
	p := field.NewPath("spec", "services").Child("W")
	s := builders.MakeEmptyService().VolumeMount("models", "/models").VolumeMount("cache", "").Obj()
	wantErrs(t, serviceVolumeMounts(s, []v1alpha1.GraphPVC{{Name: "models"}}, p),
		"spec.services.W.volumeMounts[1].name: Invalid value: \"cache\": not found in the graph's spec.pvcs")
	wantErrs(t, serviceVolumeMounts(s, []v1alpha1.GraphPVC{{Name: "models"}, {Name: "cache"}}, p))
}

func TestServiceExtraPodSpec(t *testing.T) {
	p := field.NewPath("spec")
	s := builders.MakeEmptyService().ExtraPodSpec(&v1alpha1.ExtraPodSpec{MainContainer: &corev1.Container{Image: "vllm:1", Args: []string{"--x"}}}).Obj()
	wantErrs(t, serviceExtraPodSpec(s, p))
	wantErrs(t, serviceExtraPodSpec(builders.MakeEmptyService().Obj(), p))
}

func TestServiceSharedMemory(t *testing.T) {
	p := field.NewPath("spec")
	zero := resource.MustParse("0")
	wantErrs(t, serviceSharedMemory(builders.MakeEmptyService().SharedMemory(&v1alpha1.SharedMemorySpec{Size: &zero}).Obj(), p), "spec.sharedMemory.size")
	wantErrs(t, serviceSharedMemory(builders.MakeEmptyService().SharedMemory(&v1alpha1.SharedMemorySpec{Size: &zero, Disabled: true}).Obj(), p))
	size := resource.MustParse("16Gi")
	wantErrs(t, serviceSharedMemory(builders.MakeEmptyService().SharedMemory(&v1alpha1.SharedMemorySpec{Size: &size}).Obj(), p))
}

func TestServiceMetadataAndGraphMetadata(t *testing.T) {
	p := field.NewPath("spec", "services").Child("W")
	ok := builders.MakeEmptyService().Label("team", "a").Annotation("x/y", "anything at all").Obj()
	wantErrs(t, serviceMetadata(ok, p))
	bad := builders.MakeEmptyService().Label("team", "not a value").ExtraPodMetadata(&v1alpha1.ExtraPodMetadata{Annotations: map[string]string{"bad key!": "v"}}).Ingress(&v1alpha1.IngressSpec{Labels: map[string]string{"-x": "y"}}).Obj()
	wantErrs(t, serviceMetadata(bad, p), "spec.services.W.labels", "spec.services.W.extraPodMetadata.annotations",
		"spec.services.W.ingress.labels")
	wantErrs(t, graphMetadata(&v1alpha1.DynamoGraphDeploymentSpec{Labels: map[string]string{"a": strings.Repeat("v", 64)}}),
		"spec.labels")
}

func TestServiceReferences(t *testing.T) {
	p := field.NewPath("spec")
	ok := builders.MakeEmptyService().EnvFromSecret("hf-token-secret").PVC(&v1alpha1.ServicePVC{Name: ptr.To("models")}).Obj()
	wantErrs(t, serviceReferences(ok, p))
	bad := builders.MakeEmptyService().EnvFromSecret("HF_TOKEN").PVC(&v1alpha1.ServicePVC{Name: ptr.To("Models")}).Ingress(&v1alpha1.IngressSpec{TLS: &v1alpha1.IngressTLSSpec{SecretName: "tls secret"}}).FrontendSidecar(&v1alpha1.FrontendSidecar{EnvFromSecret: ptr.To("a_b")}).Obj()
	wantErrs(t, serviceReferences(bad, p), "spec.envFromSecret", "spec.pvc.name", "spec.ingress.tls.secretName",
		"spec.frontendSidecar.envFromSecret")
}

func TestServiceDeprecations(t *testing.T) {
	p := field.NewPath("spec", "services").Child("W")
	if w := serviceDeprecations(builders.MakeEmptyService().Obj(), p); len(w) != 0 {
		t.Errorf("warnings without autoscaling: %v", w)
	}
	w := serviceDeprecations(builders.MakeEmptyService().Autoscaling(&v1alpha1.Autoscaling{Enabled: true}).Obj(), p)
	if len(w) != 1 || !strings.HasPrefix(w[0], "spec.services.W.autoscaling: deprecated") {
		t.Errorf("warnings = %v", w)
	}
}

func TestGraphClaims(t *testing.T) {
	wantErrs(t, graphClaims(&v1alpha1.DynamoGraphDeploymentSpec{PVCs: []v1alpha1.GraphPVC{{Name: "models"}, {Name: "Bad_Name"}}}),
		"spec.pvcs[1].name")
}

func TestComponentRef(t *testing.T) {
	p := field.NewPath("spec", "dynamoComponent")
	wantErrs(t, componentRef("", p))
	wantErrs(t, componentRef("frontend:jh2o6dqzpsgfued4", p))
	wantErrs(t, componentRef("Frontend", p), "spec.dynamoComponent: Invalid value: \"Frontend\": must be <name>:<version>")
}

func TestComponentBuild(t *testing.T) {
	ok := &v1alpha1.DynamoComponentSpec{DockerConfigJSONSecretName: "regcred", ImageBuildTimeout: &metav1.Duration{Duration: time.Hour}}
	wantErrs(t, componentBuild(ok))
	bad := &v1alpha1.DynamoComponentSpec{
		DockerConfigJSONSecretName: "Reg Cred",
		ImagePullSecrets:           []corev1.LocalObjectReference{{Name: "ok"}, {Name: ""}},
		ImageBuildTimeout:          &metav1.Duration{Duration: -time.Minute},
	}
	wantErrs(t, componentBuild(bad), "spec.dockerConfigJsonSecretName", "spec.imagePullSecrets[1].name", "spec.imageBuildTimeout")
}

func TestGraphImmutable(t *testing.T) {
	old := builders.MakeGraph("llm", "ns").
		Service("W", builders.MakeEmptyService()).
		Service("P", builders.MakeEmptyService().Multinode(2)).
		Service("Gone", builders.MakeEmptyService()).
		Obj()
	old.Spec.BackendFramework = v1alpha1.BackendFrameworkVLLM
	same := old.DeepCopy()
	same.Spec.Services["P"].Multinode.NodeCount = 4 // node count may change
	delete(same.Spec.Services, "Gone")
	same.Spec.Services["New"] = builders.MakeEmptyService().Multinode(2).Obj()
	wantErrs(t, graphImmutable(old, same))

	cur := old.DeepCopy()
	cur.Spec.BackendFramework = v1alpha1.BackendFrameworkSGLang
	cur.Spec.Services["W"].Multinode = &v1alpha1.MultinodeSpec{NodeCount: 2}
	cur.Spec.Services["P"].Multinode = nil
	wantErrs(t, graphImmutable(old, cur),
		`spec.backendFramework: Invalid value: "sglang": field is immutable; delete and recreate the DynamoGraphDeployment to change it`,
		"spec.services.W.multinode: Invalid value: field is immutable: the service was single-node and would become multinode",
		"spec.services.P.multinode")
}

func TestComponentImmutable(t *testing.T) {
	old := builders.MakeComponent("", "", builders.MakeEmptyService()).DynamoComponent("a:1").Obj()
	wantErrs(t, componentImmutable(old, old.DeepCopy()))
	cur := old.DeepCopy()
	cur.Spec.DynamoComponent = "a:2"
	cur.Spec.BackendFramework = v1alpha1.BackendFrameworkTRTLLM
	cur.Spec.Multinode = &v1alpha1.MultinodeSpec{NodeCount: 2}
	wantErrs(t, componentImmutable(old, cur), "spec.dynamoComponent", "spec.backendFramework", "spec.multinode")
}

func TestModelImmutable(t *testing.T) {
	old := builders.MakeModel("", "", "a", "Qwen/Qwen3-0.6B").Type("").Obj()
	cur := old.DeepCopy()
	cur.Spec.ModelType = v1alpha1.ModelTypeBase // the default, spelled out
	cur.Spec.ModelName = "b"
	wantErrs(t, modelImmutable(old, cur))
	cur.Spec.ModelType = v1alpha1.ModelTypeLoRA
	cur.Spec.BaseModelName = "Qwen/Qwen3-8B"
	wantErrs(t, modelImmutable(old, cur), "spec.modelType", "spec.baseModelName: Invalid value: \"Qwen/Qwen3-8B\": field is immutable")
}

func TestValidateGraphReportsEveryViolationAtOnce(t *testing.T) {
	dgd := builders.MakeGraph("llm", "ns").
		Service("my_worker", builders.MakeEmptyService()).
		Service("W", builders.MakeEmptyService().EnvFromSecret("HF_TOKEN").Resources(&v1alpha1.Resources{Limits: &v1alpha1.ResourceItem{GPU: "one"}}).VolumeMount("nope", "").Autoscaling(&v1alpha1.Autoscaling{})).
		Obj()
	dgd.Spec.Labels = map[string]string{"bad key!": "v"}
	errs, warnings := ValidateGraph(dgd)
	wantErrs(t, errs, "spec.services.my_worker", "spec.services.W.envFromSecret", "spec.services.W.resources.limits.gpu",
		"spec.services.W.volumeMounts[0].name", "spec.labels")
	if len(warnings) != 1 {
		t.Errorf("warnings = %v", warnings)
	}
}

func TestUpdatesRatchetOldViolations(t *testing.T) {
	old := builders.MakeGraph("llm", "ns").Service("W", builders.MakeEmptyService().EnvFromSecret("HF_TOKEN")).Obj()
	cur := old.DeepCopy()
	cur.Labels = map[string]string{"new": "label"}
	if errs, _ := ValidateGraphUpdate(old, cur); len(errs) != 0 {
		t.Errorf("an old violation blocked an unrelated update: %v", errs)
	}
	cur.Spec.Services["W"].Resources = &v1alpha1.Resources{Limits: &v1alpha1.ResourceItem{CPU: "x"}}
	errs, _ := ValidateGraphUpdate(old, cur)
	wantErrs(t, errs, "spec.services.W.resources.limits.cpu")
}

func TestServiceGenericTypeWarns(t *testing.T) {
	p := field.NewPath("spec", "services").Key("Main")
	for _, known := range append(v1alpha1.ComponentTypes, "") {
		if w := serviceGenericType(builders.MakeEmptyService().Type(known).Obj(), p); len(w) != 0 {
			t.Errorf("componentType %q warns: %v", known, w)
		}
	}
	w := serviceGenericType(builders.MakeEmptyService().Type("main").Obj(), p)
	if len(w) != 1 || !strings.Contains(w[0], "spec.services[Main].componentType") || !strings.Contains(w[0], "generic component") {
		t.Errorf("warnings %q", w)
	}
}

func TestGraphTopology(t *testing.T) {
	svc := func() *builders.ServiceWrapper { return builders.MakeEmptyService() }
	tests := map[string]struct {
		graph *v1alpha1.DynamoGraphDeployment
		want  []string
	}{
		"none":                    {graph: builders.MakeGraph("g", "ns").Service("W", svc()).Obj()},
		"the graph's level only":  {graph: builders.MakeGraph("g", "ns").Topology("t", "rack").Service("W", svc()).Obj()},
		"the graph's and its own": {graph: builders.MakeGraph("g", "ns").Topology("t", "rack").Service("W", svc().PackDomain("host")).Obj()},
		"every service its own":   {graph: builders.MakeGraph("g", "ns").Topology("t", "").Service("W", svc().PackDomain("host")).Obj()},
		"a service's without the graph's": {
			graph: builders.MakeGraph("g", "ns").Service("W", svc().PackDomain("host")).Obj(),
			want:  []string{"spec.topologyConstraint: Required value: a service's topologyConstraint (W) needs the graph's, with its topologyProfile"},
		},
		"the graph's without packDomain, a service without its own": {
			graph: builders.MakeGraph("g", "ns").Topology("t", "").Service("A", svc().PackDomain("host")).Service("B", svc()).Obj(),
			want:  []string{"spec.services.B.topologyConstraint: Required value: spec.topologyConstraint sets no packDomain"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) { wantErrs(t, graphTopology(&tc.graph.Spec), tc.want...) })
	}
}
