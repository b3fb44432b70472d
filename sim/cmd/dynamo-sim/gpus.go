package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/dynamoctl/dynamo-operator/sim/cluster"
	"github.com/dynamoctl/dynamo-operator/sim/nodes"
)

// controlPlaneLabel marks the nodes kubeadm (and so kind) runs the control
// plane on; gpus leaves them without GPUs, as GPU clusters' control planes
// are.
const controlPlaneLabel = "node-role.kubernetes.io/control-plane"

// cmdGPUs gives a real cluster's nodes the GPUs of a simulator pool (make
// kind: its workers become H100 machines), so graphs asking for
// nvidia.com/gpu schedule and run there with the fake runtime image, and
// creates NVIDIA's RuntimeClass as the simulator does, with a handler the
// nodes have (graphs that name it are refused where it does not exist).
func cmdGPUs(args []string) error {
	fs := flag.NewFlagSet("gpus", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "the cluster's kubeconfig (required: the simulator's nodes have their GPUs already)")
	handler := fs.String("runtime-handler", "runc", "the container runtime handler of the nvidia RuntimeClass (kind's containerd has runc)")
	poolFlag := fs.String("pool", "", "the GPUs of each node, as up's --pool (name=h100,gpus=8,product=...,memory=...); default the simulator's h100 pool")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *kubeconfig == "" {
		return fmt.Errorf("gpus needs --kubeconfig")
	}
	pool := nodes.DefaultPools()[0]
	if *poolFlag != "" {
		p, err := nodes.ParsePool(*poolFlag)
		if err != nil {
			return err
		}
		pool = p
	}
	cfg, err := restConfig("", *kubeconfig)
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	names := fs.Args()
	if len(names) == 0 {
		list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "!" + controlPlaneLabel})
		if err != nil {
			return fmt.Errorf("listing nodes: %w", err)
		}
		for _, n := range list.Items {
			names = append(names, n.Name)
		}
	}
	if len(names) == 0 {
		return fmt.Errorf("no node to give GPUs to (every node is a control plane)")
	}
	if err := nodes.AdvertiseGPUs(ctx, cs, pool, names); err != nil {
		return err
	}
	if err := nodes.CreateRuntimeClass(ctx, cs, *handler); err != nil {
		return err
	}
	for _, n := range names {
		fmt.Printf("node/%s: %d nvidia.com/gpu (%s)\n", n, pool.GPUs, pool.Product)
	}
	return nil
}

// cmdAuditPolicy prints the simulator's audit policy: make kind gives it to
// kind's API server, so that the operator's writes are recorded and counted
// there as on the simulator.
func cmdAuditPolicy(args []string) error {
	fs := flag.NewFlagSet("audit-policy", flag.ContinueOnError)
	if err := fs.Parse(args); err != nil {
		return err
	}
	_, err := os.Stdout.Write(cluster.AuditPolicy())
	return err
}
