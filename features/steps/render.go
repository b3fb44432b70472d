package steps

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/cucumber/godog"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/controllers"
	"github.com/dynamoctl/dynamo-operator/operator/render"
)

// How a new version's rendering reaches running workloads (the no-restart
// policy, operator/controllers/adoption.go): a workload keeps the content
// the renderer that wrote it made, recorded in its renderer annotation,
// until its service's spec changes; then it is rendered anew, as a normal
// rollout of that one workload. These steps show it.

// edited is the workload a scenario changed on purpose.
type edited struct {
	namespace, deployment string
	// graph is the edited graph, namespace/name.
	graph string
	env   corev1.EnvVar
}

func registerRenderSteps(sc *godog.ScenarioContext, w *simWorld) {
	sc.Step(`^every Deployment of the graphs is still the rendering of `+ReleaseRef+`$`, w.everyDeploymentRenderedBy)
	sc.Step(`^I set the env "([^"=]+)=([^"]*)" on the service "([^"]+)" of the graph "([^"/]+)/([^"]+)"$`, w.setServiceEnv)
	sc.Step(`^that service's Deployment is rolled out as the rendering of `+ReleaseRef+` with the env$`, w.editedRolledOut)
	sc.Step(`^no other pod of any graph restarted or was replaced$`, w.noOtherPodRestarted)
	sc.Step(`^no graph but the edited one was seen not Ready meanwhile, and every graph is Ready again$`, w.onlyEditedLapsed)
}

// Renderer is the renderer annotation a release's operator writes.
func (w *simWorld) Renderer(ctx context.Context, ref string) (string, error) {
	r, err := w.Release(ctx, ref)
	if err != nil {
		return "", err
	}
	return controllers.RendererID(r.Tag), nil
}

func (w *simWorld) everyDeploymentRenderedBy(ctx context.Context, ref string) error {
	want, err := w.Renderer(ctx, ref)
	if err != nil {
		return err
	}
	counts := map[string]int{}
	n := 0
	for _, ns := range w.graphs.namespaces {
		var deps appsv1.DeploymentList
		if err := w.Client.List(ctx, &deps, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, d := range deps.Items {
			counts[d.Annotations[controllers.AnnotationRenderer]]++
			n++
		}
	}
	w.Figure("Deployments rendered by "+want, counts[want])
	if n == 0 || counts[want] != n {
		var seen []string
		for r, c := range counts {
			seen = append(seen, fmt.Sprintf("%q: %d", r, c))
		}
		sort.Strings(seen)
		return fmt.Errorf("%d of %d Deployments are the rendering of %s; renderers seen: %s", counts[want], n, want, strings.Join(seen, ", "))
	}
	return nil
}

// setServiceEnv adds an env var to one service of a graph: a spec change
// of that service only, as a user makes it.
func (w *simWorld) setServiceEnv(ctx context.Context, key, value, service, ns, graph string) error {
	dgd := &v1alpha1.DynamoGraphDeployment{}
	if err := w.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: graph}, dgd); err != nil {
		return err
	}
	svc := dgd.Spec.Services[service]
	if svc == nil {
		return fmt.Errorf("graph %s/%s has no service %q", ns, graph, service)
	}
	svc.Envs = append(svc.Envs, corev1.EnvVar{Name: key, Value: value})
	if err := w.Client.Update(ctx, dgd, client.FieldOwner(scenarioFieldOwner)); err != nil {
		return err
	}
	name := render.ComponentName(graph, service)
	w.edited = &edited{namespace: ns, deployment: name, graph: ns + "/" + graph, env: corev1.EnvVar{Name: key, Value: value}}
	return nil
}

// editedRolledOut waits until the edited service's Deployment carries the
// env, is stamped as the release's rendering, and its rollout is complete
// (every replica updated and available, no old pod left).
func (w *simWorld) editedRolledOut(ctx context.Context, ref string) error {
	if w.edited == nil {
		return fmt.Errorf("no service was edited in this scenario")
	}
	want, err := w.Renderer(ctx, ref)
	if err != nil {
		return err
	}
	e := w.edited
	return w.eventually(ctx, "the edited service's Deployment rolled out as "+ref+" renders it", func() error {
		dep := &appsv1.Deployment{}
		if err := w.Client.Get(ctx, client.ObjectKey{Namespace: e.namespace, Name: e.deployment}, dep); err != nil {
			return err
		}
		if got := dep.Annotations[controllers.AnnotationRenderer]; got != want {
			return fmt.Errorf("Deployment %s/%s is the rendering of %q, want %q", e.namespace, e.deployment, got, want)
		}
		found := false
		for _, c := range dep.Spec.Template.Spec.Containers {
			for _, v := range c.Env {
				found = found || v == e.env
			}
		}
		if !found {
			return fmt.Errorf("Deployment %s/%s has no env %s=%s", e.namespace, e.deployment, e.env.Name, e.env.Value)
		}
		replicas := int32(1)
		if dep.Spec.Replicas != nil {
			replicas = *dep.Spec.Replicas
		}
		st := dep.Status
		if st.ObservedGeneration < dep.Generation || st.UpdatedReplicas != replicas || st.AvailableReplicas != replicas || st.Replicas != replicas {
			return fmt.Errorf("Deployment %s/%s is rolling out: %+v", e.namespace, e.deployment, st)
		}
		return nil
	})
}

// noOtherPodRestarted is noPodRestarted for every pod but the edited
// service's, which its rollout replaced on purpose.
func (w *simWorld) noOtherPodRestarted(ctx context.Context) error {
	if w.edited == nil {
		return fmt.Errorf("no service was edited in this scenario")
	}
	changes, err := w.PodChanges(ctx)
	if err != nil {
		return err
	}
	var others []string
	replaced := 0
	for _, c := range changes {
		if w.editedPodChange(c) {
			replaced++
			continue
		}
		others = append(others, c)
	}
	w.Figure("pods of the edited service replaced", replaced)
	w.Figure("other pods restarted or replaced", len(others))
	if replaced == 0 {
		return fmt.Errorf("the edited service's pods were not replaced: the change did not reach them")
	}
	if len(others) > 0 {
		return fmt.Errorf("%d other pod changes:\n  %s", len(others), strings.Join(others, "\n  "))
	}
	return nil
}

// editedPodChange tells whether a pod change (PodChanges) is one of the
// edited Deployment's pods: its pods are named <deployment>-<hash>-<id>.
func (w *simWorld) editedPodChange(change string) bool {
	prefix := w.edited.namespace + "/" + w.edited.deployment + "-"
	return strings.Contains(change, " "+prefix) || strings.HasPrefix(change, "pod "+prefix)
}

// onlyEditedLapsed is the Ready check of a downgrade to a release that
// rewrites a Deployment another version rendered (downgrade.feature): only
// the graph of the service the working tree re-rendered may have been seen
// not Ready, and every graph must be Ready again.
func (w *simWorld) onlyEditedLapsed(ctx context.Context) error {
	if w.edited == nil {
		return fmt.Errorf("no service was edited on this simulator")
	}
	lapses, err := w.haltReadyWatcher()
	if err != nil {
		return err
	}
	var others []string
	mine := 0
	for _, l := range lapses {
		if strings.Contains(l, " "+w.edited.graph+" ") {
			mine++
			continue
		}
		others = append(others, l)
	}
	w.Figure("edited graph seen not Ready", mine)
	w.Figure("other graphs seen not Ready", len(others))
	if len(others) > 0 {
		return fmt.Errorf("graphs other than %s were seen not Ready %d times:\n  %s", w.edited.graph, len(others), strings.Join(head(others, 30), "\n  "))
	}
	return w.everyGraphReady(ctx)
}
