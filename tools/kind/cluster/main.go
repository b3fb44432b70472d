// Command cluster creates and deletes the kind cluster of make kind through
// kind's Go API (sigs.k8s.io/kind/pkg/cluster): one control plane and
// workers on Docker, from the node image tools/kind/node-image.sh builds or
// from a stock kindest/node image.
//
//	cluster create --name dynamo --image kind.local/node:v1.36.3-... --kubeconfig .cache/kind/dynamo.kubeconfig [--audit-dir .cache/kind/dynamo-audit]
//	cluster delete --name dynamo --kubeconfig .cache/kind/dynamo.kubeconfig
//
// What it adds to kind's defaults, and why:
//   - failCgroupV1: false in the KubeletConfiguration: kubelet 1.35 and
//     later refuse a cgroup v1 host unless told, and kind's nodes see the
//     host's cgroup version;
//   - with --etcd-tag, etcd's image tag in the ClusterConfiguration: the
//     node image built here carries the etcd the project pins, which is not
//     the tag kubeadm would pick;
//   - with --audit-dir, the API server's audit log: the directory (holding
//     the policy, policy.yaml) is mounted into the control-plane node and
//     from there into the API server's pod, which writes audit.log into it
//     as JSON, so the host reads the writes the API server recorded as it
//     reads the simulator's (the feature suite counts the operator's).
//
// After kind reports the control plane ready, it waits for every node to
// be Ready (the CNI DaemonSet has written each node's configuration).
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
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
	auditDir := fs.String("audit-dir", "", "host directory holding the audit policy (policy.yaml), where the API server writes audit.log; empty: no audit log (create)")
	_ = fs.Parse(os.Args[2:])

	provider := cluster.NewProvider(cluster.ProviderWithDocker(), cluster.ProviderWithLogger(cmd.NewLogger()))
	var err error
	switch os.Args[1] {
	case "create":
		err = create(provider, *name, *image, *kubeconfig, *etcdTag, *auditDir, *workers, *wait, *retain)
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

// auditPath is where the control-plane node and the API server's pod see
// the host's audit directory.
const auditPath = "/var/log/dynamo-audit"

// Config is the kind configuration of the cluster: the node roles and the
// kubeadm patches described in the package comment. An empty auditDir
// records no audit log.
func Config(workers int, etcdTag, auditDir string) *v1alpha4.Cluster {
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
	if auditDir != "" {
		cfg.Nodes[0].ExtraMounts = []v1alpha4.Mount{{HostPath: auditDir, ContainerPath: auditPath}}
		// kubeadm v1beta4 (Kubernetes 1.31 and later) lists extraArgs; a
		// JSON patch appends to kind's list where a merge patch would
		// replace it.
		cfg.KubeadmConfigPatchesJSON6902 = append(cfg.KubeadmConfigPatchesJSON6902, v1alpha4.PatchJSON6902{
			Group: "kubeadm.k8s.io", Version: "v1beta4", Kind: "ClusterConfiguration",
			Patch: `- {op: add, path: /apiServer/extraArgs/-, value: {name: audit-policy-file, value: ` + auditPath + `/policy.yaml}}
- {op: add, path: /apiServer/extraArgs/-, value: {name: audit-log-path, value: ` + auditPath + `/audit.log}}
- {op: add, path: /apiServer/extraArgs/-, value: {name: audit-log-format, value: json}}
- {op: add, path: /apiServer/extraArgs/-, value: {name: audit-log-mode, value: blocking}}
- {op: add, path: /apiServer/extraVolumes, value: [{name: dynamo-audit, hostPath: ` + auditPath + `, mountPath: ` + auditPath + `, pathType: Directory}]}
`,
		})
	}
	return cfg
}

func create(provider *cluster.Provider, name, image, kubeconfig, etcdTag, auditDir string, workers int, wait time.Duration, retain bool) error {
	if auditDir != "" {
		var err error
		if auditDir, err = prepareAudit(auditDir); err != nil {
			return err
		}
	}
	opts := []cluster.CreateOption{
		cluster.CreateWithV1Alpha4Config(Config(workers, etcdTag, auditDir)),
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

// prepareAudit checks that dir holds the audit policy and removes the logs
// of an earlier cluster, so that the log holds this cluster's writes only.
// It returns dir as an absolute path, which Docker mounts.
func prepareAudit(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(dir, "policy.yaml")); err != nil {
		return "", fmt.Errorf("the audit directory needs its policy: %w", err)
	}
	old, err := filepath.Glob(filepath.Join(dir, "audit*.log"))
	if err != nil {
		return "", err
	}
	for _, f := range old {
		if err := os.Remove(f); err != nil {
			return "", err
		}
	}
	return dir, nil
}
