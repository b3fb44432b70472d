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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/render"
	"github.com/dynamoctl/dynamo-operator/sim/prereq"
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
	ns, err := w.cluster.CreateNamespace(ctx, "compat-"+strings.TrimSuffix(filepath.Base(rel), ".yaml"))
	if err != nil {
		return []string{err.Error()}
	}
	defer w.cluster.DeleteNamespace(context.Background(), ns)
	scenarioNS := w.namespace
	w.namespace = ns
	defer func() { w.namespace = scenarioNS }()

	// The Secrets and ConfigMaps the graph's docs have users create first
	// (placeholders): a kubelet starts no pod without them.
	for _, o := range prereq.For(objs, ns) {
		kind := o.GetObjectKind().GroupVersionKind().Kind
		if err := w.cluster.Client.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return []string{fmt.Sprintf("creating %s %s: %v", kind, o.GetName(), err)}
		}
	}
	if err := w.apply(ctx, objs); err != nil {
		return []string{"rejected: " + err.Error()}
	}
	var problems []string
	for _, dgd := range dgds {
		for _, name := range sortedKeys(dgd.Spec.Services) {
			deployName := render.ComponentName(dgd.Name, name)
			if err := w.eventuallyExists(ctx, "Deployment", deployName); err != nil {
				problems = append(problems, fmt.Sprintf("service %s: %v", name, err))
				continue
			}
			deploy := &appsv1.Deployment{}
			if err := w.cluster.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: deployName}, deploy); err != nil {
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
