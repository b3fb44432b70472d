package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/sim/daemon"
	"github.com/dynamoctl/dynamo-operator/sim/nodes"
)

const componentLabel = "nvidia.com/dynamo-component"

func cmdStatus(args []string) error {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	dir := stateDirFlag(fs)
	kubeconfig := kubeconfigFlag(fs)
	ns := fs.String("n", "", "only this namespace (default: all)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *kubeconfig != "" {
		// Another cluster: its graphs, nodes and pods, no simulator.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := kubeClient("", *kubeconfig)
		if err != nil {
			return err
		}
		return printStatus(ctx, os.Stdout, c, *ns)
	}
	if err := requireUp(*dir); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := daemon.NewClient(*dir).Status(ctx)
	if err != nil {
		return err
	}
	fmt.Printf("simulator: %s (pid %d, up %s, mode %s), kubeconfig %s\n", st.Phase, st.Pid,
		time.Since(st.StartedAt).Round(time.Second), st.Mode, st.Kubeconfig)
	if len(st.Operators) == 0 {
		fmt.Println("operators: none")
	}
	for _, op := range st.Operators {
		scope := "cluster-wide"
		for _, a := range op.Args {
			if strings.HasPrefix(a, "--restrict-namespace=") {
				scope = "namespace " + strings.TrimPrefix(a, "--restrict-namespace=")
			}
		}
		fmt.Printf("operator %s: %s, pid %d, running=%v, restarts %d, log %s\n", op.Name, scope, op.Pid, op.Running, op.Restarts, op.Log)
	}
	fmt.Println()
	c, err := kubeClient(*dir, "")
	if err != nil {
		return err
	}
	return printStatus(ctx, os.Stdout, c, *ns)
}

func printStatus(ctx context.Context, out io.Writer, c client.Client, ns string) error {
	var dgds v1alpha1.DynamoGraphDeploymentList
	if err := c.List(ctx, &dgds, client.InNamespace(ns)); err != nil {
		return fmt.Errorf("listing graphs: %w", err)
	}
	tw := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "GRAPH\tSTATE\tREADY\tSERVICES (ready/desired)\tMESSAGE")
	for _, d := range dgds.Items {
		ready, msg := "", ""
		if cond := meta.FindStatusCondition(d.Status.Conditions, "Ready"); cond != nil {
			ready, msg = string(cond.Status), cond.Message
		}
		fmt.Fprintf(tw, "%s/%s\t%s\t%s\t%s\t%s\n", d.Namespace, d.Name, d.Status.State, ready, services(&d), truncate(msg, 60))
	}
	if len(dgds.Items) == 0 {
		fmt.Fprintln(tw, "(none)")
	}
	_ = tw.Flush()

	var nodeList corev1.NodeList
	if err := c.List(ctx, &nodeList); err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	var pods corev1.PodList
	if err := c.List(ctx, &pods); err != nil {
		return fmt.Errorf("listing pods: %w", err)
	}
	used := map[string]int64{}
	onNode := map[string][]string{}
	pending := []string{}
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if p.Spec.NodeName == "" {
			pending = append(pending, fmt.Sprintf("%s/%s: %s", p.Namespace, p.Name, unschedulableMessage(&p)))
			continue
		}
		used[p.Spec.NodeName] += gpus(&p)
		if ns == "" || p.Namespace == ns {
			onNode[p.Spec.NodeName] = append(onNode[p.Spec.NodeName], fmt.Sprintf("%s/%s (%s, %d GPU)", p.Namespace, p.Name, podState(&p), gpus(&p)))
		}
	}
	fmt.Fprintln(out)
	tw = tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tREADY\tPRODUCT\tGPUS USED/ALLOCATABLE\tPODS")
	sort.Slice(nodeList.Items, func(i, j int) bool { return nodeList.Items[i].Name < nodeList.Items[j].Name })
	for _, n := range nodeList.Items {
		alloc := n.Status.Allocatable[nodes.GPUResource]
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d/%d\t%s\n", n.Name, nodeReady(&n), n.Labels[nodes.LabelGPUProduct], used[n.Name], alloc.Value(), strings.Join(onNode[n.Name], ", "))
	}
	_ = tw.Flush()
	if len(pending) > 0 {
		fmt.Fprintln(out, "\nPENDING PODS")
		for _, p := range pending {
			fmt.Fprintln(out, "  "+p)
		}
	}
	return nil
}

func services(d *v1alpha1.DynamoGraphDeployment) string {
	names := make([]string, 0, len(d.Spec.Services))
	for name := range d.Spec.Services {
		names = append(names, name)
	}
	sort.Strings(names)
	var parts []string
	for _, name := range names {
		s := d.Status.Services[name]
		desired := int32(1)
		if svc := d.Spec.Services[name]; svc != nil && svc.Replicas != nil {
			desired = *svc.Replicas
		}
		parts = append(parts, fmt.Sprintf("%s %d/%d", name, ptr.Deref(s.ReadyReplicas, 0), desired))
	}
	return strings.Join(parts, ", ")
}

func gpus(p *corev1.Pod) int64 {
	var n int64
	for _, c := range p.Spec.Containers {
		if q, ok := c.Resources.Limits[nodes.GPUResource]; ok {
			n += q.Value()
		} else if q, ok := c.Resources.Requests[nodes.GPUResource]; ok {
			n += q.Value()
		}
	}
	return n
}

func podState(p *corev1.Pod) string {
	if p.DeletionTimestamp != nil {
		return "Terminating"
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Waiting != nil && cs.State.Waiting.Reason != "" {
			return cs.State.Waiting.Reason
		}
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return "Ready"
		}
	}
	return string(p.Status.Phase)
}

func unschedulableMessage(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return c.Reason + ": " + c.Message
		}
	}
	return "not scheduled yet"
}

func nodeReady(n *corev1.Node) string {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return string(c.Status)
		}
	}
	return "Unknown"
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}
