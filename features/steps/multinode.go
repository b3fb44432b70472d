package steps

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/cucumber/godog"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/render"
	"github.com/dynamoctl/dynamo-operator/sim/prereq"
)

// Multinode graphs: each multinode service is a LeaderWorkerSet whose
// groups the real LeaderWorkerSet controller makes (simulator only).
func registerMultinodeSteps(sc *godog.ScenarioContext, w *world) {
	sc.Step(`^I apply the file `+quoted+` with the Secrets and ConfigMaps its docs have users create$`, unquote1(w.applyFileWithPrerequisites))
	sc.Step(`^the dgd `+quoted+` becomes Ready, and the time it took is reported$`, unquote1(w.readyTimeReported))
	sc.Step(`^every group of every multinode service of the dgd `+quoted+` has its pods Ready on distinct nodes, each knowing its leader's address and its rank$`,
		unquote1(w.groupsFormed))
}

// applyFileWithPrerequisites applies a compat manifest as its docs have a
// user do: the Secrets and ConfigMaps it names first (placeholders), since a
// kubelet starts no pod without them.
func (w *world) applyFileWithPrerequisites(ctx context.Context, path string) error {
	objs, err := w.readManifestFile(path)
	if err != nil {
		return err
	}
	for _, o := range prereq.For(objs, w.namespace) {
		if err := w.cluster.Client.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %s %s: %w", o.GetObjectKind().GroupVersionKind().Kind, o.GetName(), err)
		}
	}
	w.applied, w.lastErr, w.appliedAt = objs, w.apply(ctx, objs), time.Now()
	return w.lastErr
}

func (w *world) readyTimeReported(ctx context.Context, graph string) error {
	err := w.eventually(ctx, "the dgd "+graph+" Ready", func() error {
		return w.fieldEquals(ctx, "dgd", graph, `.status.conditions[?(@.type=="Ready")].status`, "True")
	})
	if err != nil {
		return err
	}
	fmt.Printf("    graph %s Ready %.1fs after it was applied\n", graph, time.Since(w.appliedAt).Seconds())
	return nil
}

// groupsFormed checks each multinode service's pods as its engine needs
// them: replicas groups of nodeCount Ready pods, a group's pods on distinct
// nodes, each pod with its rank (LeaderWorkerSet's worker index, 0 the
// leader, each once) and its group leader's DNS name.
func (w *world) groupsFormed(ctx context.Context, graph string) error {
	dgd := &v1alpha1.DynamoGraphDeployment{}
	if err := w.cluster.Client.Get(ctx, client.ObjectKey{Namespace: w.namespace, Name: graph}, dgd); err != nil {
		return err
	}
	multinode := 0
	for name, svc := range dgd.Spec.Services {
		if svc.Multinode == nil || svc.Multinode.NodeCount < 2 {
			continue
		}
		multinode++
		component := render.ComponentName(graph, name)
		if err := w.eventually(ctx, "the groups of "+graph+"'s multinode services formed", func() error {
			// The component's replicas: the graph's, or what it was scaled to.
			dcd := &v1alpha1.DynamoComponentDeployment{}
			if err := w.cluster.Client.Get(ctx, client.ObjectKey{Namespace: w.namespace, Name: component}, dcd); err != nil {
				return err
			}
			groups := int32(1)
			if dcd.Spec.Replicas != nil {
				groups = *dcd.Spec.Replicas
			}
			return w.checkGroups(ctx, component, groups, svc.Multinode.NodeCount)
		}); err != nil {
			return fmt.Errorf("service %s: %w", name, err)
		}
	}
	if multinode == 0 {
		return fmt.Errorf("the dgd %s has no multinode service", graph)
	}
	return nil
}

func (w *world) checkGroups(ctx context.Context, component string, groups, size int32) error {
	var pods corev1.PodList
	if err := w.cluster.Client.List(ctx, &pods, client.InNamespace(w.namespace),
		client.MatchingLabels{lwsv1.SetNameLabelKey: component}); err != nil {
		return err
	}
	byGroup := map[string][]corev1.Pod{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			byGroup[p.Labels[lwsv1.GroupIndexLabelKey]] = append(byGroup[p.Labels[lwsv1.GroupIndexLabelKey]], p)
		}
	}
	if int32(len(byGroup)) != groups {
		return fmt.Errorf("%d groups of pods, want %d", len(byGroup), groups)
	}
	for g, members := range byGroup {
		if int32(len(members)) != size {
			return fmt.Errorf("group %s has %d pods, want %d", g, len(members), size)
		}
		leader := fmt.Sprintf("%s-%s.%s-%s.%s", component, g, component, g, w.namespace)
		nodes, ranks := map[string]string{}, []int{}
		for _, p := range members {
			if !podReady(&p) {
				return fmt.Errorf("pod %s is not Ready (%s)", p.Name, p.Status.Phase)
			}
			if other, ok := nodes[p.Spec.NodeName]; ok {
				return fmt.Errorf("pods %s and %s of group %s share node %s", other, p.Name, g, p.Spec.NodeName)
			}
			nodes[p.Spec.NodeName] = p.Name
			rank, err := strconv.Atoi(p.Labels[lwsv1.WorkerIndexLabelKey])
			if err != nil {
				return fmt.Errorf("pod %s: no rank (%s=%q)", p.Name, lwsv1.WorkerIndexLabelKey, p.Labels[lwsv1.WorkerIndexLabelKey])
			}
			ranks = append(ranks, rank)
			if got := envOf(&p, render.MainContainerName, lwsv1.LwsLeaderAddress); got != leader {
				return fmt.Errorf("pod %s: %s=%q, want %q", p.Name, lwsv1.LwsLeaderAddress, got, leader)
			}
		}
		sort.Ints(ranks)
		for i, r := range ranks {
			if r != i {
				return fmt.Errorf("group %s has ranks %v, want 0..%d once each", g, ranks, size-1)
			}
		}
	}
	return nil
}

func envOf(p *corev1.Pod, container, name string) string {
	for _, c := range p.Spec.Containers {
		if c.Name != container {
			continue
		}
		for _, e := range c.Env {
			if e.Name == name {
				return e.Value
			}
		}
	}
	return ""
}
