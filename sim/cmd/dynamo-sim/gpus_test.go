package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/internal/builders"
	"github.com/dynamoctl/dynamo-operator/internal/testenv"
	"github.com/dynamoctl/dynamo-operator/sim/nodes"
)

// gpus on a cluster as kind creates it (a control plane, two workers):
// the workers get the h100 pool's GPUs in their status and GPU feature
// discovery's labels, the control plane nothing, and what the kubelet
// reported stays; NVIDIA's RuntimeClass runs runc; run again, it changes
// nothing.
func TestGPUsOnAnotherCluster(t *testing.T) {
	env, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	kc, err := env.AdminKubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, kc, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	kubelet := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourcePods: resource.MustParse("110")}
	for _, n := range []*corev1.Node{
		builders.MakeNode("kind-control-plane").Label(controlPlaneLabel, "").Obj(),
		builders.MakeNode("kind-worker").Obj(),
		builders.MakeNode("kind-worker2").Obj(),
	} {
		if err := env.Client.Create(ctx, n); err != nil {
			t.Fatal(err)
		}
		n.Status = builders.MakeNode(n.Name).Capacity(kubelet).Obj().Status
		if err := env.Client.Status().Update(ctx, n); err != nil {
			t.Fatal(err)
		}
	}

	withGPUs := kubelet.DeepCopy()
	withGPUs[nodes.GPUResource] = resource.MustParse("8")
	gfd := map[string]string{
		nodes.LabelGPUProduct: "NVIDIA-H100-80GB-HBM3", nodes.LabelGPUCount: "8", nodes.LabelGPUMemory: "81559",
		"nvidia.com/gpu.present": "true",
		nodes.LabelRack:          "h100-rack-0", nodes.LabelNVLink: "h100-rack-0", nodes.LabelBlock: "h100-block-0",
	}
	worker := func(name string) *corev1.Node {
		w := builders.MakeNode(name).Capacity(withGPUs)
		for k, v := range gfd {
			w.Label(k, v)
		}
		return w.Obj()
	}
	want := map[string]*corev1.Node{
		"kind-control-plane": builders.MakeNode("kind-control-plane").Label(controlPlaneLabel, "").Capacity(kubelet).Obj(),
		"kind-worker":        worker("kind-worker"),
		"kind-worker2":       worker("kind-worker2"),
	}
	for run := 1; run <= 2; run++ {
		if err := cmdGPUs([]string{"--kubeconfig", kubeconfig}); err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		var list corev1.NodeList
		if err := env.Client.List(ctx, &list); err != nil {
			t.Fatal(err)
		}
		got := map[string]*corev1.Node{}
		for i := range list.Items {
			n := list.Items[i]
			got[n.Name] = builders.MakeNode(n.Name).Obj()
			got[n.Name].Labels = n.Labels
			got[n.Name].Status = corev1.NodeStatus{Capacity: n.Status.Capacity, Allocatable: n.Status.Allocatable}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("run %d: nodes (-want +got):\n%s", run, diff)
		}
		var rc nodev1.RuntimeClass
		if err := env.Client.Get(ctx, client.ObjectKey{Name: nodes.NVIDIARuntimeClass}, &rc); err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		if rc.Handler != "runc" {
			t.Errorf("run %d: RuntimeClass %s runs handler %q, want runc", run, rc.Name, rc.Handler)
		}
	}
}
