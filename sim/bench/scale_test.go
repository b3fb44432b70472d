// Package bench measures the simulator: cold start (launch to a healthy
// control plane, and to a first Deployment available on a fake node), and
// scale (N GPU nodes Ready, then M pods Running and Ready). It prints the
// figures and asserts nothing about time. Run it with make bench-sim.
package bench

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/dynamoctl/dynamo-operator/internal/await"
	"github.com/dynamoctl/dynamo-operator/sim/cluster"
	"github.com/dynamoctl/dynamo-operator/sim/nodes"
)

var (
	numNodes    = flag.Int("nodes", 1000, "GPU nodes (8 GPUs each)")
	numPods     = flag.Int("pods", 10000, "pods; up to 8 per node ask for a GPU, the rest for none")
	perDeploy   = flag.Int("replicas", 100, "replicas per Deployment")
	readyDelay  = flag.Duration("pod-ready-delay", time.Second, "KWOK pod-ready delay")
	scaleBudget = flag.Duration("scale-timeout", 30*time.Minute, "give up waiting after")
)

func TestMain(m *testing.M) { os.Exit(cluster.TestMainInNamespace(m)) }

func BenchmarkSimScale(b *testing.B) {
	for range b.N {
		runScale(b)
	}
}

func runScale(b *testing.B) {
	bin, err := cluster.BinDir()
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *scaleBudget+5*time.Minute)
	defer cancel()
	dir := b.TempDir()

	launch := time.Now()
	c, err := cluster.Start(ctx, cluster.Config{Dir: dir, BinDir: bin})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Stop()
	healthy := time.Since(launch)
	if err := nodes.StartKWOK(ctx, nodes.KWOKOptions{Kubeconfig: c.AdminKubeconfig(), PodReadyDelay: *readyDelay, LeaseDuration: 20 * time.Second}); err != nil {
		b.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(c.AdminConfig())
	pool := nodes.Pool{Name: "gpu", Count: 1, GPUs: 8, Product: "NVIDIA-H100-80GB-HBM3", MemoryMiB: 81559}
	if err := nodes.CreatePools(ctx, cs, []nodes.Pool{pool}); err != nil {
		b.Fatal(err)
	}
	if err := nodes.WarmIPPool(ctx, cs, pool.NodeName(0)); err != nil {
		b.Fatal(err)
	}
	if err := createDeployments(ctx, cs, "first", 1, 1, false); err != nil {
		b.Fatal(err)
	}
	if err := waitAvailable(ctx, cs, 1); err != nil {
		b.Fatal(err)
	}
	firstDeployment := time.Since(launch)

	pool.Count = *numNodes
	start := time.Now()
	if err := nodes.CreatePools(ctx, cs, []nodes.Pool{pool}); err != nil {
		b.Fatal(err)
	}
	if err := waitNodesReady(ctx, cs, *numNodes); err != nil {
		b.Fatal(err)
	}
	nodesReady := time.Since(start)

	gpuPods := min(*numPods, 8**numNodes) - 1 // the first Deployment holds one GPU
	cpuPods := *numPods - gpuPods
	start = time.Now()
	if err := createDeployments(ctx, cs, "worker", gpuPods, *perDeploy, true); err != nil {
		b.Fatal(err)
	}
	if err := createDeployments(ctx, cs, "frontend", cpuPods, *perDeploy, false); err != nil {
		b.Fatal(err)
	}
	if err := waitPodsReady(ctx, cs, *numPods+1); err != nil {
		b.Fatal(err)
	}
	podsReady := time.Since(start)

	b.ReportMetric(healthy.Seconds(), "s-control-plane-healthy")
	b.ReportMetric(firstDeployment.Seconds(), "s-first-deployment-available")
	b.ReportMetric(nodesReady.Seconds(), "s-nodes-ready")
	b.ReportMetric(podsReady.Seconds(), "s-pods-ready")
	fmt.Printf("\ncold start: control plane healthy %.2fs, first Deployment available %.2fs after launch (pod-ready delay %s)\n",
		healthy.Seconds(), firstDeployment.Seconds(), *readyDelay)
	fmt.Printf("scale: %d GPU nodes Ready in %.1fs; %d pods (%d with a GPU) Running and Ready in %.1fs (%.0f pods/s)\n",
		*numNodes, nodesReady.Seconds(), *numPods, gpuPods, podsReady.Seconds(), float64(*numPods)/podsReady.Seconds())
}

// createDeployments makes Deployments of up to perDeploy replicas holding
// total pods between them.
func createDeployments(ctx context.Context, cs kubernetes.Interface, prefix string, total, perDeploy int, gpu bool) error {
	for i := 0; total > 0; i++ {
		n := min(total, perDeploy)
		total -= n
		labels := map[string]string{"app": fmt.Sprintf("%s-%d", prefix, i)}
		res := corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}
		if gpu {
			res.Limits = corev1.ResourceList{nodes.GPUResource: resource.MustParse("1")}
		}
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: labels["app"], Namespace: "default"},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To(int32(n)),
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "example/worker:1", Resources: res}}},
				},
			},
		}
		if _, err := cs.AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating Deployment %s: %w", d.Name, err)
		}
	}
	return nil
}

func poll(ctx context.Context, what string, check func() (bool, string, error)) error {
	last := ""
	return await.Until(ctx, what, func() error {
		ok, progress, err := check()
		if err == nil && ok {
			return nil
		}
		if progress != last {
			fmt.Printf("  %s: %s\n", what, progress)
			last = progress
		}
		return fmt.Errorf("%s (%v)", progress, err)
	}, await.Within(*scaleBudget), await.Every(time.Second))
}

func waitAvailable(ctx context.Context, cs kubernetes.Interface, want int32) error {
	return poll(ctx, "first Deployment", func() (bool, string, error) {
		d, err := cs.AppsV1().Deployments("default").Get(ctx, "first-0", metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		return d.Status.AvailableReplicas >= want, fmt.Sprintf("%d available", d.Status.AvailableReplicas), nil
	})
}

func waitNodesReady(ctx context.Context, cs kubernetes.Interface, want int) error {
	return poll(ctx, "nodes", func() (bool, string, error) {
		list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return false, "", err
		}
		ready := 0
		for _, n := range list.Items {
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		return ready >= want, fmt.Sprintf("%d/%d Ready", ready, want), nil
	})
}

// waitPodsReady sums the Deployments' ready replicas: listing 10,000 pods
// every second would load the API server more than what is measured.
func waitPodsReady(ctx context.Context, cs kubernetes.Interface, want int) error {
	return poll(ctx, "pods", func() (bool, string, error) {
		list, err := cs.AppsV1().Deployments("default").List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return false, "", err
		}
		var ready, created int32
		for _, d := range list.Items {
			ready += d.Status.ReadyReplicas
			created += d.Status.Replicas
		}
		return int(ready) >= want, fmt.Sprintf("%d/%d Ready, %d created", ready, want, created), nil
	})
}
