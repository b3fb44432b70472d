package steps

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/cucumber/godog"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/render"
	"github.com/dynamoctl/dynamo-operator/sim/prereq"
)

func registerCompatSteps(sc *godog.ScenarioContext, w *world) {
	sc.Step(`^every graph under `+quoted+` runs with the images, commands, args, GPU limits and env as written$`, unquote1(w.everyGraphRunsAsWritten))
}

// everyGraphRunsAsWritten applies every DynamoGraphDeployment manifest under
// dir, in v1alpha1 or v1beta1, each file in a namespace of its own, and
// checks that each service's workload carries the images, commands, args,
// GPU limit and env the user wrote (a v1beta1 graph as its v1alpha1 form,
// the operator's conversion of it), and that the graph becomes Ready or
// pends on its true cause (readyOrWaitingForClaim). On a cluster without
// the LeaderWorkerSet API (make kind's) a multinode graph is checked to
// fail saying what to install instead.
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
		dgds, err := graphsOf(w.cluster.Client.Scheme(), objs)
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
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
	lws, err := w.servesLWS(ctx)
	if err != nil {
		return []string{err.Error()}
	}
	for _, dgd := range dgds {
		if !lws && multinode(dgd) {
			if err := w.failsWantingLWS(ctx, dgd.Name); err != nil {
				problems = append(problems, err.Error())
			}
			continue
		}
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
			if p := w.claimTemplateMatchesService(ctx, dgd, dgd.Spec.Services[name], deployName); p != "" {
				problems = append(problems, fmt.Sprintf("service %s: %s", name, p))
			}
		}
		if err := w.readyOrWaitingForClaim(ctx, dgd.Name, prereq.Claims(objs)); err != nil {
			problems = append(problems, err.Error())
		}
	}
	return problems
}

// servesLWS says whether the cluster serves the LeaderWorkerSet API
// (envtest and the simulator do; make kind's cluster does not).
func (w *world) servesLWS(ctx context.Context) (bool, error) {
	crd := &unstructured.Unstructured{}
	crd.SetAPIVersion("apiextensions.k8s.io/v1")
	crd.SetKind("CustomResourceDefinition")
	err := w.cluster.Client.Get(ctx, client.ObjectKey{Name: lwsCRDName}, crd)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// multinode says whether a service of the graph spans nodes.
func multinode(dgd *v1alpha1.DynamoGraphDeployment) bool {
	for _, svc := range dgd.Spec.Services {
		if svc != nil && svc.Multinode != nil && svc.Multinode.NodeCount > 1 {
			return true
		}
	}
	return false
}

// failsWantingLWS waits until a multinode graph, on a cluster without the
// LeaderWorkerSet API, has failed saying what to install (as
// multinode.feature's scenario without the API checks).
func (w *world) failsWantingLWS(ctx context.Context, name string) error {
	return w.eventually(ctx, "the multinode graph "+name+" failed, saying to install LeaderWorkerSet (the cluster serves no LeaderWorkerSet API)", func() error {
		state, err := w.readField(ctx, "dgd", name, ".status.state")
		if err != nil {
			return err
		}
		msg, err := w.readField(ctx, "dgd", name, `.status.conditions[?(@.type=="Ready")].message`)
		if err != nil {
			return err
		}
		if state != "failed" || !strings.Contains(msg, "install LeaderWorkerSet") {
			return fmt.Errorf("state %q, Ready message %q", state, msg)
		}
		return nil
	})
}

// graphsOf decodes the DynamoGraphDeployments of objs in v1alpha1, the
// form the operator renders: one written in v1beta1 as the operator
// converts it (ConvertManifest).
func graphsOf(s *runtime.Scheme, objs []*unstructured.Unstructured) ([]*v1alpha1.DynamoGraphDeployment, error) {
	var out []*v1alpha1.DynamoGraphDeployment
	for _, o := range objs {
		if o.GetKind() != "DynamoGraphDeployment" {
			continue
		}
		alpha := o
		if o.GroupVersionKind().GroupVersion() != v1alpha1.GroupVersion {
			var err error
			if alpha, err = ConvertManifest(s, o, v1alpha1.GroupVersion); err != nil {
				return nil, err
			}
		}
		dgd := &v1alpha1.DynamoGraphDeployment{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(alpha.Object, dgd); err != nil {
			return nil, err
		}
		out = append(out, dgd)
	}
	return out, nil
}

// readyOrWaitingForClaim waits until the graph is Ready or, when its
// manifest mounts claims it does not hold (prereq.Claims: users create and
// fill them beforehand, and no placeholder stands in), until its Ready
// condition names one of them missing, in the scheduler's words: the graph
// pends on its true cause, which it prints. Without a scheduler (envtest)
// every graph becomes Ready.
func (w *world) readyOrWaitingForClaim(ctx context.Context, name string, claims []string) error {
	var ready *metav1.Condition
	err := w.eventually(ctx, "the graph "+name+" Ready, or pending on a claim it lacks", func() error {
		obj, err := w.read(ctx, "dgd", name)
		if err != nil {
			return err
		}
		if ready = condition(obj, "Ready"); ready == nil {
			return errors.New("no Ready condition yet")
		}
		if ready.Status == metav1.ConditionTrue || missingClaimNamed(ready.Message, claims) {
			return nil
		}
		return fmt.Errorf("Ready %s: %s", ready.Status, ready.Message)
	})
	if err != nil {
		return fmt.Errorf("dgd %s is neither Ready nor pending on a claim it mounts and its manifest lacks %q: %w", name, claims, err)
	}
	if ready.Status != metav1.ConditionTrue {
		fmt.Printf("    dgd %s pends on a claim its manifest mounts and lacks: %s\n", name, ready.Message)
	}
	return nil
}

// missingClaimNamed: message reports one of claims not found, as the
// scheduler does (`persistentvolumeclaim "x" not found`).
func missingClaimNamed(message string, claims []string) bool {
	return slices.ContainsFunc(claims, func(c string) bool {
		return strings.Contains(message, fmt.Sprintf("persistentvolumeclaim %q not found", c))
	})
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
	if c := containerNamed(t.Spec.Containers, render.MainContainerName); c != nil {
		line = strings.Join(append(append([]string{}, c.Command...), c.Args...), " ")
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
// its Deployment's pod template: the main container and its GPU limit, and
// every other container written for the pod (a v1beta1 pod template's
// containers besides main), init containers included.
func deploymentMatchesService(dgd *v1alpha1.DynamoGraphDeployment, svc *v1alpha1.DynamoComponentDeploymentSharedSpec, deploy *appsv1.Deployment) []string {
	pod := &deploy.Spec.Template.Spec
	gms, failover, _ := render.EngineFeatures(svc, dgd.Spec.BackendFramework)
	mainName := render.MainContainerName
	if failover {
		// The active engine is the main container, cloned.
		mainName = "engine-0"
	}
	main := containerNamed(pod.Containers, mainName)
	if main == nil {
		return []string{"no container " + mainName}
	}
	problems := containerAsWritten(mainAsWritten(dgd, svc), main)
	// With the GPU memory service the GPUs are claimed through DRA
	// (claimTemplateMatchesService), not asked for as a resource.
	if !gms && svc.Resources != nil && svc.Resources.Limits != nil && svc.Resources.Limits.GPU != "" {
		gpuType := svc.Resources.Limits.GPUType
		if gpuType == "" {
			gpuType = v1alpha1.DefaultGPUType
		}
		got := main.Resources.Limits[corev1.ResourceName(gpuType)]
		if got.String() != svc.Resources.Limits.GPU {
			problems = append(problems, fmt.Sprintf("limits[%s] %q, wrote %q", gpuType, got.String(), svc.Resources.Limits.GPU))
		}
	}
	for _, want := range otherContainersAsWritten(svc) {
		got := containerNamed(append(append([]corev1.Container{}, pod.InitContainers...), pod.Containers...), want.Name)
		if got == nil {
			problems = append(problems, fmt.Sprintf("no container %s", want.Name))
			continue
		}
		problems = append(problems, containerAsWritten(want, got)...)
	}
	return problems
}

// mainAsWritten is what the user wrote for the main container: the env
// with its precedence, global < service < mainContainer (later entries win
// in containerAsWritten), and envFromSecret among its envFrom.
func mainAsWritten(dgd *v1alpha1.DynamoGraphDeployment, svc *v1alpha1.DynamoComponentDeploymentSharedSpec) corev1.Container {
	c := corev1.Container{Name: render.MainContainerName}
	if svc.ExtraPodSpec != nil && svc.ExtraPodSpec.MainContainer != nil {
		mc := svc.ExtraPodSpec.MainContainer
		c.Image, c.Command, c.Args = mc.Image, mc.Command, mc.Args
		c.Env, c.EnvFrom = mc.Env, mc.EnvFrom
	}
	c.Env = append(append(append([]corev1.EnvVar{}, dgd.Spec.Envs...), svc.Envs...), c.Env...)
	if svc.EnvFromSecret != nil && *svc.EnvFromSecret != "" {
		c.EnvFrom = append(c.EnvFrom, secretRef(*svc.EnvFromSecret))
	}
	return c
}

// otherContainersAsWritten are the containers besides main the user wrote
// for a service's pod: extraPodSpec's containers and init containers, and
// the frontend sidecar with extraPodSpec's container of its name laid over
// it, as the render merges them.
func otherContainersAsWritten(svc *v1alpha1.DynamoComponentDeploymentSharedSpec) []corev1.Container {
	var out []corev1.Container
	if s := svc.FrontendSidecar; s != nil {
		c := corev1.Container{Name: render.SidecarContainerName, Image: s.Image, Command: s.Command, Args: s.Args, Env: s.Envs}
		if s.EnvFromSecret != nil && *s.EnvFromSecret != "" {
			c.EnvFrom = []corev1.EnvFromSource{secretRef(*s.EnvFromSecret)}
		}
		out = append(out, c)
	}
	if svc.ExtraPodSpec == nil || svc.ExtraPodSpec.PodSpec == nil {
		return out
	}
	for _, c := range append(append([]corev1.Container{}, svc.ExtraPodSpec.InitContainers...), svc.ExtraPodSpec.Containers...) {
		if c.Name == render.MainContainerName {
			continue
		}
		if base := containerNamed(out, c.Name); base != nil {
			c = layOver(*base, c)
		}
		out = append(out, c)
	}
	return out
}

// layOver is base with what over writes: image, command and args replaced,
// env and envFrom added after base's (later env entries win).
func layOver(base, over corev1.Container) corev1.Container {
	if over.Image != "" {
		base.Image = over.Image
	}
	if len(over.Command) > 0 {
		base.Command = over.Command
	}
	if len(over.Args) > 0 {
		base.Args = over.Args
	}
	base.Env = append(append([]corev1.EnvVar{}, base.Env...), over.Env...)
	base.EnvFrom = append(append([]corev1.EnvFromSource{}, base.EnvFrom...), over.EnvFrom...)
	return base
}

// containerAsWritten compares what the user wrote for a container with the
// rendered one: image, command and args as written, each variable of env
// (the last one written of a name), each resource limit and request (a
// GPU on a container besides main) and each envFrom entry, the user's
// values winning over the operator's defaults.
func containerAsWritten(want corev1.Container, got *corev1.Container) []string {
	var problems []string
	add := func(format string, a ...any) {
		problems = append(problems, fmt.Sprintf("container %s: ", want.Name)+fmt.Sprintf(format, a...))
	}
	if want.Image != "" && got.Image != want.Image {
		add("image %q, wrote %q", got.Image, want.Image)
	}
	if len(want.Command) > 0 && !reflect.DeepEqual(got.Command, want.Command) {
		add("command %q, wrote %q", got.Command, want.Command)
	}
	if len(want.Args) > 0 && !reflect.DeepEqual(got.Args, want.Args) {
		add("args %q, wrote %q", got.Args, want.Args)
	}
	wantEnv, haveEnv := map[string]corev1.EnvVar{}, map[string]corev1.EnvVar{}
	for _, e := range want.Env {
		wantEnv[e.Name] = withAPIServerDefaults(e)
	}
	for _, e := range got.Env {
		haveEnv[e.Name] = withAPIServerDefaults(e)
	}
	for _, name := range sortedKeys(wantEnv) {
		if !reflect.DeepEqual(haveEnv[name], wantEnv[name]) {
			add("env %s = %+v, wrote %+v", name, haveEnv[name], wantEnv[name])
		}
	}
	for _, r := range []struct {
		kind      string
		want, got corev1.ResourceList
	}{{"limits", want.Resources.Limits, got.Resources.Limits}, {"requests", want.Resources.Requests, got.Resources.Requests}} {
		for _, name := range sortedKeys(r.want) {
			if have, q := r.got[name], r.want[name]; have.Cmp(q) != 0 {
				add("%s[%s] %q, wrote %q", r.kind, name, have.String(), q.String())
			}
		}
	}
	for _, from := range want.EnvFrom {
		if !slices.ContainsFunc(got.EnvFrom, func(e corev1.EnvFromSource) bool { return reflect.DeepEqual(e, from) }) {
			add("envFrom %+v missing, have %+v", from, got.EnvFrom)
		}
	}
	return problems
}

// withAPIServerDefaults is e as the API server stores it in a pod
// template, where a fieldRef without apiVersion gets v1: what was written
// and what was rendered compare alike on a cluster and off it.
func withAPIServerDefaults(e corev1.EnvVar) corev1.EnvVar {
	if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.APIVersion == "" {
		e = *e.DeepCopy()
		e.ValueFrom.FieldRef.APIVersion = "v1"
	}
	return e
}

func containerNamed(containers []corev1.Container, name string) *corev1.Container {
	for i := range containers {
		if containers[i].Name == name {
			return &containers[i]
		}
	}
	return nil
}

func secretRef(name string) corev1.EnvFromSource {
	return corev1.EnvFromSource{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}}}
}

func sortedKeys[K ~string, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
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

// claimTemplateMatchesService checks that a service with the GPU memory
// service claims the GPUs it wrote, through its ResourceClaimTemplate; ""
// when it does or has none.
func (w *world) claimTemplateMatchesService(ctx context.Context, dgd *v1alpha1.DynamoGraphDeployment,
	svc *v1alpha1.DynamoComponentDeploymentSharedSpec, component string) string {
	if gms, _, _ := render.EngineFeatures(svc, dgd.Spec.BackendFramework); !gms {
		return ""
	}
	name := render.GMSResourceClaimTemplateName(component)
	if err := w.eventuallyExists(ctx, "ResourceClaimTemplate", name); err != nil {
		return err.Error()
	}
	tmpl := &resourcev1.ResourceClaimTemplate{}
	if err := w.cluster.Client.Get(ctx, client.ObjectKey{Namespace: w.namespace, Name: name}, tmpl); err != nil {
		return err.Error()
	}
	wrote := ""
	if r := svc.Resources; r != nil && r.Limits != nil {
		wrote = r.Limits.GPU
	}
	if reqs := tmpl.Spec.Spec.Devices.Requests; len(reqs) != 1 || reqs[0].Exactly == nil || strconv.FormatInt(reqs[0].Exactly.Count, 10) != wrote {
		return fmt.Sprintf("ResourceClaimTemplate %s requests %v, wrote %s GPUs", name, reqs, wrote)
	}
	return ""
}
