package bench

import (
	"context"
	"flag"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/dynamoctl/dynamo-operator/internal/await"
	"github.com/dynamoctl/dynamo-operator/sim/kubelet"
	"github.com/dynamoctl/dynamo-operator/sim/nodes"
	"github.com/dynamoctl/dynamo-operator/sim/probes"
	"github.com/dynamoctl/dynamo-operator/sim/workers"
)

var (
	probedPods   = flag.Int("probed-pods", 1000, "probed fake worker pods (BenchmarkProber)")
	probePeriod  = flag.Int("probe-period", 10, "their readiness and liveness periodSeconds")
	probeWindow  = flag.Duration("probe-window", 30*time.Second, "CPU measuring window")
	probeTimeout = flag.Duration("probe-timeout", 20*time.Minute, "give up waiting for the pods after")
)

// cpu is this process's user+system CPU time.
func cpu() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkProber measures the prober's CPU with -probed-pods pods, each
// with a readiness and a liveness probe on its fake worker: the CPU of
// this process (KWOK, fake workers, prober) over a window with the prober
// running, minus the same window with it stopped. It asserts nothing about
// time. make bench-prober runs it.
func BenchmarkProber(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), *probeTimeout+5*time.Minute)
	defer cancel()
	// Fake pods ask for no GPU: 110 pods per node.
	pool := nodes.Pool{Name: "cpu", Count: (*probedPods + 99) / 100, GPUs: 1, Product: "NVIDIA-L40S", MemoryMiB: 46068}
	_, cs := nodes.StartTestCluster(ctx, b, nodes.KWOKOptions{PodReadyDelay: 100 * time.Millisecond, LeaseDuration: 40 * time.Second}, pool)
	if err := nodes.WarmIPPool(ctx, cs, pool.NodeName(0)); err != nil {
		b.Fatal(err)
	}
	rec := workers.NewRecorder(clock.RealClock{})
	wm := workers.NewManager(rec)
	if err := wm.Run(ctx, cs); err != nil {
		b.Fatal(err)
	}
	// Dynamo pods start once the kubelet's checks admit them.
	if err := (&kubelet.Admitter{Client: cs}).Run(ctx); err != nil {
		b.Fatal(err)
	}
	pctx, stopProber := context.WithCancel(ctx)
	pm := &probes.Manager{Client: cs, Log: b.Logf}
	if err := pm.Run(pctx); err != nil {
		b.Fatal(err)
	}
	probe := func(path string) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromInt(workers.Port)}}, PeriodSeconds: int32(*probePeriod)}
	}
	labels := map[string]string{workers.ComponentLabel: "bench", workers.ComponentTypeLabel: "worker"}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "probed", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(*probedPods)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: map[string]string{workers.ModelLoadDelayAnnotation: "0s"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "main", Image: "sim/worker",
					Env:            []corev1.EnvVar{{Name: "DYN_SYSTEM_ENABLED", Value: "true"}},
					ReadinessProbe: probe("/health"), LivenessProbe: probe("/live"),
				}}},
			},
		},
	}
	start := time.Now()
	if _, err := cs.AppsV1().Deployments("default").Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	await.New(b).Eventually(func() (int32, error) {
		d, err := cs.AppsV1().Deployments("default").Get(ctx, "probed", metav1.GetOptions{})
		if err != nil {
			return 0, err
		}
		return d.Status.ReadyReplicas, nil
	}).WithTimeout(*probeTimeout).WithPolling(time.Second).Should(gomega.Equal(int32(*probedPods)), "probed pods Ready")
	fmt.Printf("%d probed pods Ready after %.1fs (probes run: %d)\n", *probedPods, time.Since(start).Seconds(), pm.ProbesRun())

	probes0, cpu0 := pm.ProbesRun(), cpu()
	time.Sleep(*probeWindow)
	withProber, probesRun := cpu()-cpu0, pm.ProbesRun()-probes0
	stopProber()
	cpu1 := cpu()
	time.Sleep(*probeWindow)
	without := cpu() - cpu1
	fmt.Printf("prober, %d pods x 2 probes every %ds: %d probes in %s (%.0f/s); process CPU %.2f cores with the prober, %.2f without: prober %.3f cores\n",
		*probedPods, *probePeriod, probesRun, *probeWindow, float64(probesRun)/probeWindow.Seconds(),
		withProber.Seconds()/probeWindow.Seconds(), without.Seconds()/probeWindow.Seconds(), (withProber-without).Seconds()/probeWindow.Seconds())
}
