package faults

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/dynamoctl/dynamo-operator/internal/builders"
)

// TestContainerFaults: crash-loop and worker-restart write the status a
// kubelet writes once a pod's processes exited, and tell the fake worker.
func TestContainerFaults(t *testing.T) {
	started := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	now := started.Add(time.Hour)
	at, was := metav1.NewTime(now), metav1.NewTime(started)
	notReady := []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
		{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady", LastTransitionTime: at,
			Message: "containers with unready status: [main]"},
		{Type: corev1.ContainersReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady", LastTransitionTime: at},
	}
	cases := map[string]struct {
		kind       string
		wantStatus corev1.ContainerStatus
		wantWorker []string
		wantResult string
	}{
		"crash-loop": {
			kind: "crash-loop",
			wantStatus: corev1.ContainerStatus{
				Name: "main", Image: "img", Started: ptr.To(false), RestartCount: 5,
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
					Reason: "CrashLoopBackOff", Message: "back-off 5m0s restarting failed container=main pod=w-0"}},
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
					ExitCode: 1, Reason: "Error", StartedAt: at, FinishedAt: at}},
			},
			wantWorker: []string{"down team-a/w-0"},
			wantResult: "pod team-a/w-0 crash-loops (CrashLoopBackOff, not Ready); delete it to recover",
		},
		"worker-restart": {
			kind: "worker-restart",
			wantStatus: corev1.ContainerStatus{
				Name: "main", Image: "img", Started: ptr.To(false), RestartCount: 1,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: at}},
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
					ExitCode: 1, Reason: "Error", StartedAt: was, FinishedAt: at}},
			},
			wantWorker: []string{"restart team-a/w-0"},
			wantResult: "pod team-a/w-0 restarted its containers (not Ready until its probes pass)",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			cs := fake.NewClientset(builders.MakePod("w-0", "team-a").Started(started).Obj())
			var worker []string
			env := Env{
				Client:        cs,
				Clock:         clocktesting.NewFakeClock(now),
				SetWorkerDown: func(pod string, down bool) { worker = append(worker, map[bool]string{true: "down "}[down]+pod) },
				RestartWorker: func(pod string) bool { worker = append(worker, "restart "+pod); return true },
			}
			got, err := Inject(ctx, env, Request{Kind: tc.kind, Pod: "team-a/w-0"})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantResult, got); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			pod, err := cs.CoreV1().Pods("team-a").Get(ctx, "w-0", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			want := builders.MakePod("w-0", "team-a").Started(started).Obj().Status
			want.ContainerStatuses = []corev1.ContainerStatus{tc.wantStatus}
			want.Conditions = notReady
			if diff := cmp.Diff(want, pod.Status); diff != "" {
				t.Errorf("pod status (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantWorker, worker); diff != "" {
				t.Errorf("the fake worker was told (-want +got):\n%s", diff)
			}
		})
	}
}
