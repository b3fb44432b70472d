package steps

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dynamoctl/dynamo-operator/internal/testenv"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/render"
)

// Beside the repository: the manifests Dynamo's users run (v1alpha1) and
// Dynamo's current ones (v1beta1).
const (
	alphaCompatDir = "../../../shared/compat"
	betaCompatDir  = "../../../shared/compat-v1beta1"
)

// renderedDeployments renders each service of the graphs of a manifest
// file that runs as a Deployment, by service name.
func renderedDeployments(t *testing.T, file string) (*v1alpha1.DynamoGraphDeployment, map[string]*appsv1.Deployment) {
	t.Helper()
	w := &world{cluster: &Cluster{}}
	objs, err := w.readManifestFile(file)
	if err != nil {
		t.Fatal(err)
	}
	dgds, err := graphsOf(testenv.NewScheme(), objs)
	if err != nil || len(dgds) != 1 {
		t.Fatalf("%s: %d graphs, %v", file, len(dgds), err)
	}
	dgd := dgds[0]
	dcds, err := render.Components(dgd)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*appsv1.Deployment{}
	for name, svc := range dgd.Spec.Services {
		if svc.Multinode != nil && svc.Multinode.NodeCount > 1 {
			continue
		}
		for _, dcd := range dcds {
			if dcd.Name != render.ComponentName(dgd.Name, name) {
				continue
			}
			if out[name], err = render.Deployment(dcd, dgd.Spec.PVCs, render.Options{}); err != nil {
				t.Fatalf("%s: service %s: %v", file, name, err)
			}
		}
	}
	return dgd, out
}

// The compat scenario's checks hold of what the operator renders for every
// graph of Dynamo's manifests, in either version.
func TestCompatGraphsRenderAsWritten(t *testing.T) {
	for _, dir := range []string{alphaCompatDir, betaCompatDir} {
		files, err := manifestFiles(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			objs, err := (&world{cluster: &Cluster{}}).readManifestFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if dgds, _ := graphsOf(testenv.NewScheme(), objs); len(dgds) != 1 {
				continue
			}
			dgd, deployments := renderedDeployments(t, f)
			for name, deploy := range deployments {
				if problems := deploymentMatchesService(dgd, dgd.Spec.Services[name], deploy); len(problems) > 0 {
					t.Errorf("%s: service %s: %s", f, name, strings.Join(problems, "; "))
				}
			}
		}
	}
}

// A pod template that lost what the user wrote of any container, or let
// the operator's defaults win, is caught.
func TestDeploymentMatchesServiceCatchesWhatWasLost(t *testing.T) {
	const (
		openEngine = betaCompatDir + "/examples/backends/trtllm/deploy/v1beta1/openengine-agg.yaml"
		vllm       = betaCompatDir + "/examples/backends/vllm/deploy/v1beta1/agg.yaml"
	)
	type change struct {
		file, service string
		change        func(pod *corev1.PodSpec, main *corev1.Container)
		want          string
	}
	for name, c := range map[string]change{
		"the engine container's image": {openEngine, "OpenEngineWorker", func(pod *corev1.PodSpec, _ *corev1.Container) {
			containerNamed(pod.Containers, "engine").Image = "other:1"
		}, "container engine: image"},
		"the engine container's GPU": {openEngine, "OpenEngineWorker", func(pod *corev1.PodSpec, _ *corev1.Container) {
			delete(containerNamed(pod.Containers, "engine").Resources.Limits, "nvidia.com/gpu")
		}, "container engine: limits[nvidia.com/gpu]"},
		"the engine container": {openEngine, "OpenEngineWorker", func(pod *corev1.PodSpec, main *corev1.Container) {
			pod.Containers = []corev1.Container{*main}
		}, "no container engine"},
		"the main container's args": {openEngine, "OpenEngineWorker", func(_ *corev1.PodSpec, main *corev1.Container) {
			main.Args = append(main.Args, "--extra")
		}, "container main: args"},
		"the env main's template wrote": {openEngine, "OpenEngineWorker", func(_ *corev1.PodSpec, main *corev1.Container) {
			main.Env = nil
		}, "container main: env DYN_SYSTEM_PORT"},
		"the Secret main's envFrom names": {vllm, "VllmDecodeWorker", func(_ *corev1.PodSpec, main *corev1.Container) {
			main.EnvFrom = nil
		}, "container main: envFrom"},
		"the main container's GPU": {vllm, "VllmDecodeWorker", func(_ *corev1.PodSpec, main *corev1.Container) {
			main.Resources.Limits["nvidia.com/gpu"] = resource.MustParse("2")
		}, "limits[nvidia.com/gpu] \"2\", wrote \"1\""},
	} {
		t.Run(name, func(t *testing.T) {
			dgd, deployments := renderedDeployments(t, c.file)
			deploy := deployments[c.service]
			pod := &deploy.Spec.Template.Spec
			c.change(pod, containerNamed(pod.Containers, render.MainContainerName))
			problems := strings.Join(deploymentMatchesService(dgd, dgd.Spec.Services[c.service], deploy), "; ")
			if !strings.Contains(problems, c.want) {
				t.Errorf("problems %q, want one containing %q", problems, c.want)
			}
		})
	}
}

func TestMissingClaimNamed(t *testing.T) {
	msg := `OpenEngineWorker (0 of 1 replicas available; pod w-1 cannot be scheduled: 0/6 nodes are available: persistentvolumeclaim "lora-cache" not found.)`
	for claims, want := range map[string]bool{"lora-cache": true, "lora": false, "": false, "models,lora-cache": true} {
		if got := missingClaimNamed(msg, strings.Split(claims, ",")); got != want {
			t.Errorf("claims %q: got %v, want %v", claims, got, want)
		}
	}
}
