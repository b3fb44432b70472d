package render

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"
	"sigs.k8s.io/yaml"

	"github.com/dynamoctl/dynamo-operator/internal/compat"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1beta1"
)

// betaCompatDir holds Dynamo's current manifests in nvidia.com/v1beta1.
const betaCompatDir = "../../../shared/compat-v1beta1"

// renderBeta converts a v1beta1 graph to v1alpha1, as the API server does
// before the operator reads it, and renders it.
func renderBeta(t *testing.T, b *v1beta1.DynamoGraphDeployment) (*v1alpha1.DynamoGraphDeployment, []any) {
	t.Helper()
	var a v1alpha1.DynamoGraphDeployment
	if err := b.ConvertTo(&a); err != nil {
		t.Fatalf("ConvertTo: %v", err)
	}
	if a.Namespace == "" {
		a.Namespace = goldenNamespace
	}
	return &a, renderGraph(t, &a)
}

// Every graph of Dynamo's v1beta1 manifests renders through the v1alpha1
// renderer, each component's pod template merged into the pod the operator
// generates by container name, the user's values winning: what the user
// wrote of every container and of the pod is in the rendered pod as
// written, and the main container asks for the GPUs the template does.
func TestV1beta1CompatGraphsRender(t *testing.T) {
	docs, err := compat.Documents(betaCompatDir)
	if err != nil {
		t.Fatal(err)
	}
	graphs := 0
	for _, doc := range docs {
		if doc.Kind != "DynamoGraphDeployment" {
			continue
		}
		graphs++
		t.Run(doc.File, func(t *testing.T) {
			var b v1beta1.DynamoGraphDeployment
			if err := yaml.UnmarshalStrict(doc.Raw, &b); err != nil {
				t.Fatal(err)
			}
			a, objs := renderBeta(t, &b)
			for _, c := range b.Spec.Components {
				if c.PodTemplate == nil {
					continue
				}
				name := ComponentName(a.Name, c.ComponentName)
				pods := renderedPods(objs, name)
				if len(pods) == 0 {
					t.Fatalf("component %s: no workload rendered", name)
				}
				for _, pod := range pods {
					checkTemplateMerged(t, name, c.Multinode != nil, c.PodTemplate, pod)
				}
			}
		})
	}
	if graphs == 0 {
		t.Fatalf("no DynamoGraphDeployment under %s", betaCompatDir)
	}
}

// renderedPods are the pod templates of a component's workload: a
// Deployment's, or a LeaderWorkerSet's leader and worker.
func renderedPods(objs []any, component string) []corev1.PodTemplateSpec {
	for _, o := range objs {
		switch w := o.(type) {
		case *appsv1.Deployment:
			if w.Name == component {
				return []corev1.PodTemplateSpec{w.Spec.Template}
			}
		case *lwsv1.LeaderWorkerSet:
			if w.Name == component {
				return []corev1.PodTemplateSpec{*w.Spec.LeaderWorkerTemplate.LeaderTemplate, w.Spec.LeaderWorkerTemplate.WorkerTemplate}
			}
		}
	}
	return nil
}

// checkTemplateMerged checks that what the user wrote in a pod template is
// in the rendered pod. A multinode launcher extends the main container's
// command line and the workers' probes, so there only the image and the
// GPUs of the main container are compared.
func checkTemplateMerged(t *testing.T, component string, multinode bool, user *corev1.PodTemplateSpec, got corev1.PodTemplateSpec) {
	t.Helper()
	for k, v := range user.Labels {
		if !operatorKeys[k] && got.Labels[k] != v {
			t.Errorf("%s: pod label %s = %q, want %q", component, k, got.Labels[k], v)
		}
	}
	for k, v := range user.Annotations {
		if got.Annotations[k] != v {
			t.Errorf("%s: pod annotation %s = %q, want %q", component, k, got.Annotations[k], v)
		}
	}
	for _, uc := range user.Spec.Containers {
		gc := findContainer(got.Spec.Containers, uc.Name)
		if gc == nil && uc.Name == MainContainerName {
			// Failover: the active engine is the main container, cloned.
			gc = findContainer(got.Spec.Containers, "engine-0")
		}
		if usesGMS(got.Spec) {
			// The GPUs are claimed through DRA (the claim template's
			// count, checked by the golden files), not asked for.
			uc = *uc.DeepCopy()
			for _, list := range []corev1.ResourceList{uc.Resources.Limits, uc.Resources.Requests} {
				delete(list, v1alpha1.DefaultGPUType)
			}
		}
		if gc == nil {
			t.Errorf("%s: container %s not rendered", component, uc.Name)
			continue
		}
		if multinode && uc.Name == MainContainerName {
			if gc.Image != uc.Image || gpusOf(gc) != gpusOf(&uc) {
				t.Errorf("%s: main image %q, %d GPUs; want %q, %d", component, gc.Image, gpusOf(gc), uc.Image, gpusOf(&uc))
			}
			continue
		}
		checkContainerMerged(t, component, uc, *gc)
	}
	for _, v := range user.Spec.Volumes {
		if !slices.ContainsFunc(got.Spec.Volumes, func(g corev1.Volume) bool { return apiequality.Semantic.DeepEqual(g, v) }) {
			t.Errorf("%s: volume %s not rendered as written", component, v.Name)
		}
	}
	for k, v := range user.Spec.NodeSelector {
		if got.Spec.NodeSelector[k] != v {
			t.Errorf("%s: nodeSelector %s = %q, want %q", component, k, got.Spec.NodeSelector[k], v)
		}
	}
	for _, tol := range user.Spec.Tolerations {
		if !slices.ContainsFunc(got.Spec.Tolerations, func(g corev1.Toleration) bool { return cmp.Equal(g, tol) }) {
			t.Errorf("%s: toleration %v not rendered", component, tol)
		}
	}
	if a := user.Spec.Affinity; a != nil && got.Spec.Affinity != nil {
		if d := cmp.Diff(a.PodAffinity, got.Spec.Affinity.PodAffinity); d != "" {
			t.Errorf("%s: pod affinity (-user +rendered):\n%s", component, d)
		}
	}
	if r := user.Spec.RuntimeClassName; r != nil && (got.Spec.RuntimeClassName == nil || *got.Spec.RuntimeClassName != *r) {
		t.Errorf("%s: runtimeClassName %v, want %s", component, got.Spec.RuntimeClassName, *r)
	}
}

// checkContainerMerged checks the fields of a container the user set.
func checkContainerMerged(t *testing.T, component string, user, got corev1.Container) {
	t.Helper()
	where := component + "/" + user.Name
	same := func(field string, u, g any, set bool) {
		if set && !apiequality.Semantic.DeepEqual(u, g) {
			t.Errorf("%s: %s = %v, want %v", where, field, g, u)
		}
	}
	same("image", user.Image, got.Image, user.Image != "")
	same("command", user.Command, got.Command, len(user.Command) > 0)
	same("args", user.Args, got.Args, len(user.Args) > 0)
	same("workingDir", user.WorkingDir, got.WorkingDir, user.WorkingDir != "")
	same("imagePullPolicy", user.ImagePullPolicy, got.ImagePullPolicy, user.ImagePullPolicy != "")
	same("securityContext", user.SecurityContext, got.SecurityContext, user.SecurityContext != nil)
	for _, e := range user.Env {
		i := slices.IndexFunc(got.Env, func(g corev1.EnvVar) bool { return g.Name == e.Name })
		if i < 0 || !apiequality.Semantic.DeepEqual(got.Env[i], e) {
			t.Errorf("%s: env %s not rendered as written", where, e.Name)
		}
	}
	for _, e := range user.EnvFrom {
		if !slices.ContainsFunc(got.EnvFrom, func(g corev1.EnvFromSource) bool { return cmp.Equal(g, e) }) {
			t.Errorf("%s: envFrom %v not rendered", where, e)
		}
	}
	for _, m := range user.VolumeMounts {
		if !slices.ContainsFunc(got.VolumeMounts, func(g corev1.VolumeMount) bool { return cmp.Equal(g, m) }) {
			t.Errorf("%s: volumeMount %s not rendered as written", where, m.MountPath)
		}
	}
	for side, list := range map[string][2]corev1.ResourceList{
		"limits":   {user.Resources.Limits, got.Resources.Limits},
		"requests": {user.Resources.Requests, got.Resources.Requests},
	} {
		for name, q := range list[0] {
			if g, ok := list[1][name]; !ok || g.Cmp(q) != 0 {
				t.Errorf("%s: resources.%s[%s] = %v, want %s", where, side, name, list[1][name], q.String())
			}
		}
	}
}

// A graph written in v1alpha1 and the same graph as Dynamo writes it in
// v1beta1 render the same children, whole: the conversion lands on the
// v1alpha1 form Dynamo's manifests use.
func TestV1beta1PairsRenderAlike(t *testing.T) {
	for name, pair := range renderPairs {
		t.Run(name, func(t *testing.T) {
			var a v1alpha1.DynamoGraphDeployment
			if err := yaml.UnmarshalStrict([]byte(pair.alpha), &a); err != nil {
				t.Fatalf("v1alpha1: %v", err)
			}
			a.Namespace = goldenNamespace
			var b v1beta1.DynamoGraphDeployment
			if err := yaml.UnmarshalStrict([]byte(pair.beta), &b); err != nil {
				t.Fatalf("v1beta1: %v", err)
			}
			converted, got := renderBeta(t, &b)
			want := renderGraph(t, &a)
			if d := cmp.Diff(string(goldenYAML(t, want)), string(goldenYAML(t, got))); d != "" {
				t.Errorf("children differ (-v1alpha1 +v1beta1):\n%s", d)
			}
			for k := range converted.Annotations {
				if v1beta1.IsConversionAnnotation(k) {
					t.Errorf("the v1beta1 graph converted with annotation %s: %s", k, converted.Annotations[k])
				}
			}
		})
	}
}

// renderPairs are graphs of Dynamo's examples, in v1alpha1 as its users
// write them and in v1beta1 as its current manifests and conversion write
// them.
var renderPairs = map[string]struct{ alpha, beta string }{
	"aggregated": {alpha: pairAggAlpha, beta: pairAggBeta},
	"disaggregated multinode with graph env": {
		alpha: pairMultinodeAlpha, beta: pairMultinodeBeta,
	},
	"gpu memory service and failover": {alpha: pairFailoverAlpha, beta: pairFailoverBeta},
	"probes, envs, shared memory, compilation cache, frontend sidecar": {
		alpha: pairServiceFieldsAlpha, beta: pairServiceFieldsBeta,
	},
}

var _ = strings.TrimSpace
