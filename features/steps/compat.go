package steps

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/render"
)

// everyGraphRunsAsWritten applies every DynamoGraphDeployment manifest under
// dir, each file in a namespace of its own, and checks that each service's
// Deployment carries the image, command, args, GPU limit and env the user
// wrote, and that the graph becomes Ready.
func (w *world) everyGraphRunsAsWritten(ctx context.Context, dir string) error {
	files, err := manifestFiles(w.resolve(dir))
	if err != nil {
		return err
	}
	var problems []string
	graphs := 0
	for _, f := range files {
		objs, err := w.readManifestFile(f)
		if err != nil {
			return err
		}
		var dgds []*v1alpha1.DynamoGraphDeployment
		for _, o := range objs {
			if o.GetKind() != "DynamoGraphDeployment" {
				continue
			}
			dgd := &v1alpha1.DynamoGraphDeployment{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, dgd); err != nil {
				return fmt.Errorf("%s: %w", f, err)
			}
			dgds = append(dgds, dgd)
		}
		if len(dgds) == 0 {
			continue
		}
		graphs += len(dgds)
		rel, _ := filepath.Rel(w.resolve(dir), f)
		for _, p := range w.checkGraphFile(ctx, rel, objs, dgds) {
			problems = append(problems, rel+": "+p)
		}
	}
	if graphs == 0 {
		return fmt.Errorf("no DynamoGraphDeployment manifests under %s", dir)
	}
	if len(problems) > 0 {
		return fmt.Errorf("%d problems in %d graphs:\n%s", len(problems), graphs, strings.Join(problems, "\n"))
	}
	return nil
}

func (w *world) checkGraphFile(ctx context.Context, rel string, objs []*unstructured.Unstructured, dgds []*v1alpha1.DynamoGraphDeployment) []string {
	return w.inNamespaceOfItsOwn(ctx, "compat-"+strings.TrimSuffix(filepath.Base(rel), ".yaml"), func() []string {
		return w.checkGraphs(ctx, objs, dgds)
	})
}

// inNamespaceOfItsOwn runs f with a fresh namespace, named after prefix,
// as the scenario's, and deletes it after.
func (w *world) inNamespaceOfItsOwn(ctx context.Context, prefix string, f func() []string) []string {
	ns, err := w.cluster.CreateNamespace(ctx, prefix)
	if err != nil {
		return []string{err.Error()}
	}
	defer w.cluster.DeleteNamespace(context.Background(), ns)
	scenarioNS := w.namespace
	w.namespace = ns
	defer func() { w.namespace = scenarioNS }()
	return f()
}

func (w *world) checkGraphs(ctx context.Context, objs []*unstructured.Unstructured, dgds []*v1alpha1.DynamoGraphDeployment) []string {
	// The Secrets and ConfigMaps the graph's docs have users create first
	// (placeholders): a kubelet starts no pod without them.
	if err := w.createPrereqs(ctx, objs); err != nil {
		return []string{err.Error()}
	}
	if err := w.apply(ctx, objs); err != nil {
		return []string{"rejected: " + err.Error()}
	}
	var problems []string
	for _, dgd := range dgds {
		for _, name := range sortedKeys(dgd.Spec.Services) {
			deployName := render.ComponentName(dgd.Name, name)
			if svc := dgd.Spec.Services[name]; svc.Multinode != nil && svc.Multinode.NodeCount > 1 {
				for _, p := range w.leaderWorkerSetMatchesService(ctx, dgd, svc, deployName) {
					problems = append(problems, fmt.Sprintf("service %s: %s", name, p))
				}
				continue
			}
			if err := w.eventuallyExists(ctx, "Deployment", deployName); err != nil {
				problems = append(problems, fmt.Sprintf("service %s: %v", name, err))
				continue
			}
			deploy := &appsv1.Deployment{}
			if err := w.cluster.Client.Get(ctx, client.ObjectKey{Namespace: w.namespace, Name: deployName}, deploy); err != nil {
				problems = append(problems, err.Error())
				continue
			}
			for _, p := range deploymentMatchesService(dgd, dgd.Spec.Services[name], deploy) {
				problems = append(problems, fmt.Sprintf("service %s: %s", name, p))
			}
		}
		if err := w.fieldEventuallyEquals(ctx, "dgd", dgd.Name, `.status.conditions[?(@.type=="Ready")].status`, "True"); err != nil {
			problems = append(problems, err.Error())
		}
	}
	return problems
}

// leaderWorkerSetMatchesService checks a multinode service's
// LeaderWorkerSet: nodeCount pods per group, and leader and workers each
// with what the user wrote for the service's pods. The launch flags the
// backend needs are added to the user's command line (the render's golden
// files pin them), so the user's args are only required to be kept, each
// where it was written relative to the others.
func (w *world) leaderWorkerSetMatchesService(ctx context.Context, dgd *v1alpha1.DynamoGraphDeployment,
	svc *v1alpha1.DynamoComponentDeploymentSharedSpec, name string) []string {
	if err := w.eventuallyExists(ctx, "LeaderWorkerSet", name); err != nil {
		return []string{err.Error()}
	}
	lws := &lwsv1.LeaderWorkerSet{}
	if err := w.cluster.Client.Get(ctx, client.ObjectKey{Namespace: w.namespace, Name: name}, lws); err != nil {
		return []string{err.Error()}
	}
	var problems []string
	if size := lws.Spec.LeaderWorkerTemplate.Size; size == nil || *size != svc.Multinode.NodeCount {
		problems = append(problems, fmt.Sprintf("LeaderWorkerSet size %v, wrote nodeCount %d", size, svc.Multinode.NodeCount))
	}
	templates := map[string]*corev1.PodTemplateSpec{"worker": &lws.Spec.LeaderWorkerTemplate.WorkerTemplate}
	if lws.Spec.LeaderWorkerTemplate.LeaderTemplate != nil {
		templates["leader"] = lws.Spec.LeaderWorkerTemplate.LeaderTemplate
	}
	for _, role := range sortedKeys(templates) {
		asWritten := svc.DeepCopy()
		if asWritten.ExtraPodSpec != nil && asWritten.ExtraPodSpec.MainContainer != nil {
			asWritten.ExtraPodSpec.MainContainer.Command, asWritten.ExtraPodSpec.MainContainer.Args = nil, nil
		}
		deploy := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Template: *templates[role]}}
		for _, p := range deploymentMatchesService(dgd, asWritten, deploy) {
			problems = append(problems, role+": "+p)
		}
		if role == "leader" {
			problems = append(problems, argsKept(svc, templates[role])...)
		}
	}
	return problems
}

// argsKept says which of the user's args the leader's command line lost:
// each must appear, in order, in it (as a word, or within a shell script
// the backend's flags were added to).
func argsKept(svc *v1alpha1.DynamoComponentDeploymentSharedSpec, t *corev1.PodTemplateSpec) []string {
	if svc.ExtraPodSpec == nil || svc.ExtraPodSpec.MainContainer == nil {
		return nil
	}
	var line string
	for _, c := range t.Spec.Containers {
		if c.Name == render.MainContainerName {
			line = strings.Join(append(append([]string{}, c.Command...), c.Args...), " ")
		}
	}
	rest := line
	for _, a := range svc.ExtraPodSpec.MainContainer.Args {
		i := strings.Index(rest, a)
		if i < 0 {
			return []string{fmt.Sprintf("leader: the arg %q as written is not in its command line %q", a, line)}
		}
		rest = rest[i+len(a):]
	}
	return nil
}

// deploymentMatchesService compares what the user wrote for a service with
// the main container of its Deployment.
func deploymentMatchesService(dgd *v1alpha1.DynamoGraphDeployment, svc *v1alpha1.DynamoComponentDeploymentSharedSpec, deploy *appsv1.Deployment) []string {
	var main *corev1.Container
	for i := range deploy.Spec.Template.Spec.Containers {
		if deploy.Spec.Template.Spec.Containers[i].Name == render.MainContainerName {
			main = &deploy.Spec.Template.Spec.Containers[i]
		}
	}
	if main == nil {
		return []string{"no main container"}
	}
	var problems []string
	if svc.ExtraPodSpec != nil && svc.ExtraPodSpec.MainContainer != nil {
		mc := svc.ExtraPodSpec.MainContainer
		if mc.Image != "" && main.Image != mc.Image {
			problems = append(problems, fmt.Sprintf("image %q, wrote %q", main.Image, mc.Image))
		}
		if len(mc.Command) > 0 && !reflect.DeepEqual(main.Command, mc.Command) {
			problems = append(problems, fmt.Sprintf("command %q, wrote %q", main.Command, mc.Command))
		}
		if len(mc.Args) > 0 && !reflect.DeepEqual(main.Args, mc.Args) {
			problems = append(problems, fmt.Sprintf("args %q, wrote %q", main.Args, mc.Args))
		}
	}
	if svc.Resources != nil && svc.Resources.Limits != nil && svc.Resources.Limits.GPU != "" {
		gpuType := svc.Resources.Limits.GPUType
		if gpuType == "" {
			gpuType = v1alpha1.DefaultGPUType
		}
		got := main.Resources.Limits[corev1.ResourceName(gpuType)]
		if got.String() != svc.Resources.Limits.GPU {
			problems = append(problems, fmt.Sprintf("limits[%s] %q, wrote %q", gpuType, got.String(), svc.Resources.Limits.GPU))
		}
	}
	// The env the user wrote, with its precedence: global < service < mainContainer.
	want := map[string]corev1.EnvVar{}
	for _, list := range [][]corev1.EnvVar{dgd.Spec.Envs, svc.Envs, mainContainerEnv(svc)} {
		for _, e := range list {
			want[e.Name] = e
		}
	}
	have := map[string]corev1.EnvVar{}
	for _, e := range main.Env {
		have[e.Name] = e
	}
	for _, name := range sortedKeys(want) {
		if !reflect.DeepEqual(have[name], want[name]) {
			problems = append(problems, fmt.Sprintf("env %s = %+v, wrote %+v", name, have[name], want[name]))
		}
	}
	return problems
}

func mainContainerEnv(svc *v1alpha1.DynamoComponentDeploymentSharedSpec) []corev1.EnvVar {
	if svc.ExtraPodSpec == nil || svc.ExtraPodSpec.MainContainer == nil {
		return nil
	}
	return svc.ExtraPodSpec.MainContainer.Env
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// manifestFiles lists the YAML files under root, sorted.
func manifestFiles(root string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && (strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml")) {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", root, err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no manifests under %s", root)
	}
	return files, nil
}
