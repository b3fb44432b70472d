package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	"github.com/dynamoctl/dynamo-operator/sim/workers"
)

// NamespaceLeaseName is the marker lease of a namespace-scoped operator
// (docs/concepts/install-modes.md).
const NamespaceLeaseName = "dynamo-operator-namespace-scope"

// crashLoop marks a Running pod's containers as crash-looping, as a kubelet
// would after the process exits repeatedly. KWOK moves only Pending pods
// to Running, so it leaves this status alone; the pod stays broken until
// it is deleted (its ReplicaSet then replaces it).
func crashLoop(ctx context.Context, env Env, rng *rand.Rand, r Request) (string, error) {
	ns, name, err := containersExited(ctx, env, rng, r, "crash-loop", nil, func(cs *corev1.ContainerStatus, pod *corev1.Pod, now metav1.Time) {
		cs.RestartCount += 5
		cs.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: 1, Reason: "Error", StartedAt: now, FinishedAt: now,
		}}
		cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
			Reason:  "CrashLoopBackOff",
			Message: fmt.Sprintf("back-off 5m0s restarting failed container=%s pod=%s", cs.Name, pod.Name),
		}}
	})
	if err != nil {
		return "", err
	}
	if env.SetWorkerDown != nil {
		env.SetWorkerDown(ns+"/"+name, true)
	}
	return fmt.Sprintf("pod %s/%s crash-loops (CrashLoopBackOff, not Ready); delete it to recover", ns, name), nil
}

// workerRestart restarts a Running pod's containers once, as a kubelet does
// after the process exits: restartCount+1, the last run terminated, not
// Ready. The prober sees the new run and probes it from its start, so the
// pod is Ready again once its model has loaded; the fake worker starts
// afresh without the adapters it had.
func workerRestart(ctx context.Context, env Env, rng *rand.Rand, r Request) (string, error) {
	var restart func(string)
	if env.RestartWorker != nil {
		// The fake worker starts afresh with the new run.
		restart = func(pod string) { env.RestartWorker(pod) }
	}
	ns, name, err := containersExited(ctx, env, rng, r, "worker-restart", restart, func(cs *corev1.ContainerStatus, _ *corev1.Pod, now metav1.Time) {
		started := now
		if cs.State.Running != nil {
			started = cs.State.Running.StartedAt
		}
		cs.RestartCount++
		cs.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: 1, Reason: "Error", StartedAt: started, FinishedAt: now,
		}}
		cs.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}
	})
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("pod %s/%s restarted its containers (not Ready until its probes pass)", ns, name), nil
}

// containersExited writes the status a kubelet writes once the containers'
// processes of the pod r names (or one crashTarget picks) have exited:
// each container not ready nor started, as exited leaves it, and the pod
// not Ready. before, if set, is called with namespace/name ahead of the
// write.
func containersExited(ctx context.Context, env Env, rng *rand.Rand, r Request, fault string, before func(string),
	exited func(cs *corev1.ContainerStatus, pod *corev1.Pod, now metav1.Time)) (string, string, error) {
	ns, name, err := crashTarget(ctx, env, rng, r)
	if err != nil {
		return "", "", err
	}
	pod, err := env.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", "", err
	}
	now := metav1.NewTime(env.Clock.Now())
	var statuses []corev1.ContainerStatus
	for _, cs := range pod.Status.ContainerStatuses {
		cs.Ready = false
		cs.Started = new(bool)
		exited(&cs, pod, now)
		statuses = append(statuses, cs)
	}
	conds := []corev1.PodCondition{
		{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady", LastTransitionTime: now,
			Message: "containers with unready status: [" + containerNames(pod) + "]"},
		{Type: corev1.ContainersReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady", LastTransitionTime: now},
	}
	body, err := json.Marshal(map[string]any{"status": map[string]any{"containerStatuses": statuses, "conditions": conds}})
	if err != nil {
		return "", "", err
	}
	if before != nil {
		before(ns + "/" + name)
	}
	if _, err := env.Client.CoreV1().Pods(ns).Patch(ctx, name, types.StrategicMergePatchType, body, metav1.PatchOptions{}, "status"); err != nil {
		return "", "", fmt.Errorf("%s of %s/%s: %w", fault, ns, name, err)
	}
	return ns, name, nil
}

func crashTarget(ctx context.Context, env Env, rng *rand.Rand, r Request) (string, string, error) {
	if r.Pod != "" {
		ns, name, ok := strings.Cut(r.Pod, "/")
		if !ok {
			if r.Namespace == "" {
				return "", "", fmt.Errorf("--pod %q needs a namespace: namespace/name or --namespace", r.Pod)
			}
			return r.Namespace, r.Pod, nil
		}
		return ns, name, nil
	}
	list, err := env.Client.CoreV1().Pods(r.Namespace).List(ctx, metav1.ListOptions{LabelSelector: workers.ComponentLabel})
	if err != nil {
		return "", "", err
	}
	var names []string
	for _, p := range list.Items {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			names = append(names, p.Namespace+"/"+p.Name)
		}
	}
	if len(names) == 0 {
		return "", "", fmt.Errorf("no Running pod of a Dynamo component to crash (namespace %q)", r.Namespace)
	}
	ns, name, _ := strings.Cut(pick(rng, names), "/")
	return ns, name, nil
}

func containerNames(p *corev1.Pod) string {
	var n []string
	for _, c := range p.Spec.Containers {
		n = append(n, c.Name)
	}
	return strings.Join(n, " ")
}

// leaseExpiry ages the namespace's marker lease past its duration, which is
// what a cluster-wide operator sees when the local operator stops renewing.
func leaseExpiry(ctx context.Context, env Env, r Request) (string, error) {
	if r.Namespace == "" {
		return "", fmt.Errorf("lease-expiry needs --namespace")
	}
	leases := env.Client.CoordinationV1().Leases(r.Namespace)
	var past metav1.MicroTime
	// The lease's holder renews it concurrently: retry on conflict.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		lease, err := leases.Get(ctx, NamespaceLeaseName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		dur := 30 * time.Second
		if lease.Spec.LeaseDurationSeconds != nil {
			dur = time.Duration(*lease.Spec.LeaseDurationSeconds) * time.Second
		}
		past = metav1.NewMicroTime(env.Clock.Now().Add(-dur - time.Second))
		lease.Spec.RenewTime = &past
		_, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return "", fmt.Errorf("lease-expiry: lease %s/%s: %w", r.Namespace, NamespaceLeaseName, err)
	}
	return fmt.Sprintf("lease %s/%s renewTime set to %s (expired); a live renewer will renew it within its interval", r.Namespace, NamespaceLeaseName, past.UTC().Format(time.RFC3339)), nil
}

// podKill kills a pod's processes with SIGKILL, as the kernel's OOM killer
// or a crashing node agent would: the program gets no SIGTERM and says
// nothing on its way out (an operator releases no Lease), and the
// simulator's kubelet restarts the container after its back-off, as a
// kubelet does under restartPolicy Always. Only pods the simulator runs as
// processes can be killed (the operator's image); fake workers have none.
func podKill(_ context.Context, env Env, rng *rand.Rand, r Request) (string, error) {
	if env.Kubelet == nil {
		return "", fmt.Errorf("pod-kill: this simulator runs no pod as a process")
	}
	target := r.Pod
	if target == "" {
		var names []string
		for _, p := range env.Kubelet.Running() {
			if ns, _, _ := strings.Cut(p, "/"); r.Namespace == "" || ns == r.Namespace {
				names = append(names, p)
			}
		}
		if len(names) == 0 {
			return "", fmt.Errorf("pod-kill: no pod runs as a process (namespace %q)", r.Namespace)
		}
		target = pick(rng, names)
	}
	ns, name, ok := strings.Cut(target, "/")
	if !ok {
		if r.Namespace == "" {
			return "", fmt.Errorf("pod-kill: --pod %q needs a namespace: namespace/name or --namespace", target)
		}
		ns, name = r.Namespace, target
	}
	pids, err := env.Kubelet.Kill(ns, name)
	if err != nil {
		return "", fmt.Errorf("pod-kill of %s/%s: %w", ns, name, err)
	}
	return fmt.Sprintf("pod %s/%s: SIGKILL to pids %v; its containers restart after their back-off", ns, name, pids), nil
}
