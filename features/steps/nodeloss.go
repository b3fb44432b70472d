package steps

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/cucumber/godog"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/internal/await"
	"github.com/dynamoctl/dynamo-operator/internal/builders"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/sim/faults"
)

// A node lost under a graph's GPU worker (scenarios/faults.feature): the
// graph goes pending, then Ready again with its worker on another node.

func registerNodeLossSteps(sc *godog.ScenarioContext, w *simWorld) {
	f := w.faultState()
	sc.Step(`^a graph "([^"]+)" with a GPU worker is Ready in the namespace "([^"]+)"$`, f.gpuGraphReady)
	sc.Step(`^the node running its worker is lost$`, f.loseWorkerNode)
	sc.Step(`^the graph goes pending and then Ready again with its worker on another node$`, f.pendingThenReady)
}

func (f *faultWorld) gpuGraphReady(ctx context.Context, name, ns string) error {
	if err := f.w.NeedSim(); err != nil {
		return err
	}
	if err := f.w.ensureNamespace(ctx, ns); err != nil {
		return err
	}
	g := builders.MakeGraph(name, ns).
		Service("Frontend", builders.MakeService().Type(v1alpha1.ComponentTypeFrontend)).
		Service("Worker", builders.MakeService().Type(v1alpha1.ComponentTypeWorker).GPUs(1)).
		Obj()
	if err := f.w.Client.Create(ctx, g); err != nil {
		return err
	}
	f.watched = types.NamespacedName{Namespace: ns, Name: name}
	return f.w.eventually(ctx, "the graph "+name+" Ready", func() error { return f.notReady(ctx, ns, []string{name}) })
}

// workerPod is the watched graph's GPU worker pod (not being deleted).
func (f *faultWorld) workerPod(ctx context.Context) (*corev1.Pod, error) {
	var pods corev1.PodList
	if err := f.w.Client.List(ctx, &pods, client.InNamespace(f.watched.Namespace)); err != nil {
		return nil, err
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.DeletionTimestamp != nil || !strings.HasPrefix(p.Name, f.watched.Name+"-") {
			continue
		}
		for _, c := range p.Spec.Containers {
			if q, ok := c.Resources.Limits["nvidia.com/gpu"]; ok && !q.IsZero() {
				return p, nil
			}
		}
	}
	return nil, fmt.Errorf("graph %s has no GPU worker pod", f.watched)
}

func (f *faultWorld) loseWorkerNode(ctx context.Context) error {
	p, err := f.workerPod(ctx)
	if err != nil {
		return err
	}
	if p.Spec.NodeName == "" {
		return fmt.Errorf("pod %s is not scheduled", p.Name)
	}
	f.states = RecordGraphStates(f.w.Client, f.watched)
	f.w.Background(f.states.Halt)
	msg, err := f.fault(ctx, faults.Request{Kind: "node-loss", Node: p.Spec.NodeName})
	if err != nil {
		return err
	}
	f.lostNode, f.lostAt = p.Spec.NodeName, time.Now()
	fmt.Printf("    %s (pod %s)\n", msg, p.Name)
	return nil
}

func (f *faultWorld) pendingThenReady(ctx context.Context) error {
	if f.states == nil {
		return fmt.Errorf("no node was lost in this scenario")
	}
	var onto string
	err := f.w.eventually(ctx, "the graph pending, then Ready with its worker on another node", func() error {
		if f.states.FirstNotReady().IsZero() {
			return fmt.Errorf("the graph has not left Ready yet (states seen: %s)", f.states.String())
		}
		if err := f.notReady(ctx, f.watched.Namespace, []string{f.watched.Name}); err != nil {
			return err
		}
		p, err := f.workerPod(ctx)
		if err != nil {
			return err
		}
		if p.Spec.NodeName == f.lostNode {
			return fmt.Errorf("the worker pod %s is still on the lost node %s", p.Name, f.lostNode)
		}
		onto = p.Spec.NodeName
		return nil
	}, await.Within(4*time.Minute))
	f.states.Halt()
	fmt.Printf("    graph states after the node loss: %s\n", f.states.String())
	if err != nil {
		return err
	}
	f.w.Figure("graph not Ready after the node loss (s)", fmt.Sprintf("%.1f", f.states.FirstNotReady().Sub(f.lostAt).Seconds()))
	f.w.Figure("graph Ready again after the node loss (s)", fmt.Sprintf("%.1f", time.Since(f.lostAt).Seconds()))
	f.w.Figure("worker moved", f.lostNode+" -> "+onto)
	if !f.states.Saw(string(v1alpha1.GraphStatePending)) {
		return fmt.Errorf("the graph left Ready but was never pending: %s", f.states.String())
	}
	return nil
}
