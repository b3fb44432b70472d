// Command cluster creates and deletes the kind cluster of make kind through
// kind's Go API (sigs.k8s.io/kind/pkg/cluster): one control plane and
// workers on Docker, from the node image tools/kind/node-image.sh builds or
// from a stock kindest/node image.
//
//	cluster create --name dynamo --image kind.local/node:v1.36.3-... --kubeconfig .cache/kind/dynamo.kubeconfig
//	cluster delete --name dynamo --kubeconfig .cache/kind/dynamo.kubeconfig
//
// What it adds to kind's defaults, and why:
//   - failCgroupV1: false in the KubeletConfiguration: kubelet 1.35 and
//     later refuse a cgroup v1 host unless told, and kind's nodes see the
//     host's cgroup version;
//   - with --etcd-tag, etcd's image tag in the ClusterConfiguration: the
//     node image built here carries the etcd the project pins, which is not
//     the tag kubeadm would pick.
//
// After kind reports the control plane ready, it waits for every node to
// be Ready (the CNI DaemonSet has written each node's configuration).
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"sigs.k8s.io/kind/pkg/apis/config/v1alpha4"
	"sigs.k8s.io/kind/pkg/cluster"
	"sigs.k8s.io/kind/pkg/cluster/nodeutils"
	"sigs.k8s.io/kind/pkg/cmd"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	name := fs.String("name", "dynamo", "cluster name")
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig file to write (create) or remove the cluster from (delete)")
	image := fs.String("image", "", "node image (create)")
	workers := fs.Int("workers", 2, "worker nodes beside the control plane (create)")
	etcdTag := fs.String("etcd-tag", "", "etcd image tag for kubeadm; empty keeps kubeadm's (create)")
	wait := fs.Duration("wait", 5*time.Minute, "how long to wait for the nodes to be Ready (create)")
	retain := fs.Bool("retain", false, "keep the nodes of a failed create, to read their logs (create)")
	_ = fs.Parse(os.Args[2:])

	provider := cluster.NewProvider(cluster.ProviderWithDocker(), cluster.ProviderWithLogger(cmd.NewLogger()))
	var err error
	switch os.Args[1] {
	case "create":
		err = create(provider, *name, *image, *kubeconfig, *etcdTag, *workers, *wait, *retain)
	case "delete":
		err = provider.Delete(*name, *kubeconfig)
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "cluster %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: cluster create|delete [flags]")
	os.Exit(2)
}

// Config is the kind configuration of the cluster: the node roles and the
// kubeadm patches described in the package comment.
func Config(workers int, etcdTag string) *v1alpha4.Cluster {
	cfg := &v1alpha4.Cluster{
		TypeMeta: v1alpha4.TypeMeta{Kind: "Cluster", APIVersion: "kind.x-k8s.io/v1alpha4"},
		Nodes:    []v1alpha4.Node{{Role: v1alpha4.ControlPlaneRole}},
		KubeadmConfigPatches: []string{
			"apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nfailCgroupV1: false\n",
		},
	}
	for range workers {
		cfg.Nodes = append(cfg.Nodes, v1alpha4.Node{Role: v1alpha4.WorkerRole})
	}
	if etcdTag != "" {
		cfg.KubeadmConfigPatches = append(cfg.KubeadmConfigPatches,
			"kind: ClusterConfiguration\netcd:\n  local:\n    imageTag: "+etcdTag+"\n")
	}
	return cfg
}

func create(provider *cluster.Provider, name, image, kubeconfig, etcdTag string, workers int, wait time.Duration, retain bool) error {
	opts := []cluster.CreateOption{
		cluster.CreateWithV1Alpha4Config(Config(workers, etcdTag)),
		cluster.CreateWithKubeconfigPath(kubeconfig),
		cluster.CreateWithWaitForReady(wait),
		cluster.CreateWithDisplayUsage(false),
		cluster.CreateWithDisplaySalutation(false),
		cluster.CreateWithRetain(retain),
	}
	if image != "" {
		opts = append(opts, cluster.CreateWithNodeImage(image))
	}
	if err := provider.Create(name, opts...); err != nil {
		return err
	}
	nodes, err := provider.ListNodes(name)
	if err != nil {
		return err
	}
	controlPlanes, err := nodeutils.ControlPlaneNodes(nodes)
	if err != nil {
		return err
	}
	var out strings.Builder
	c := controlPlanes[0].Command("kubectl", "--kubeconfig=/etc/kubernetes/admin.conf",
		"wait", "--for=condition=Ready", "nodes", "--all", "--timeout="+wait.String())
	c.SetStdout(&out)
	c.SetStderr(&out)
	if err := c.Run(); err != nil {
		return fmt.Errorf("nodes not Ready within %s: %v\n%s", wait, err, out.String())
	}
	fmt.Fprint(os.Stderr, out.String())
	return nil
}
