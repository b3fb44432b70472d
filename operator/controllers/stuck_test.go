package controllers

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/dynamoctl/dynamo-operator/internal/builders"
	"github.com/dynamoctl/dynamo-operator/operator/render"
)

func TestRolloutBlocker(t *testing.T) {
	pod := func(name string) *builders.PodWrapper { return builders.MakePod(name, "ns") }
	pods := func(ps ...*builders.PodWrapper) []corev1.Pod {
		out := make([]corev1.Pod, 0, len(ps))
		for _, p := range ps {
			out = append(out, *p.Obj())
		}
		return out
	}
	deployWith := func(c builders.DeploymentConditions) *appsv1.Deployment {
		return builders.MakeDeployment("g-worker", "").Generation(1).Replicas(2).Status(1, 2, 2, 0).Conditions(c).Obj()
	}
	plain := deployWith(nil)
	cases := map[string]struct {
		deploy *appsv1.Deployment
		pods   []corev1.Pod
		want   *blocker
	}{
		"nothing reported: pods still starting": {plain, pods(pod("w-a"), pod("w-b").Ready()), nil},
		"no pods at all":                        {plain, nil, nil},
		"unschedulable names the scheduler's reason": {plain,
			pods(pod("w-b").Ready(), pod("w-a").Unschedulable("0/4 nodes are available: 4 Insufficient nvidia.com/gpu.")),
			&blocker{Reason: ReasonUnschedulable, Message: "pod w-a cannot be scheduled: 0/4 nodes are available: 4 Insufficient nvidia.com/gpu."}},
		"a missing claim is the scheduler's to say": {plain,
			pods(pod("w-a").Unschedulable(`0/1 nodes are available: persistentvolumeclaim "model-cache" not found. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.`)),
			&blocker{Reason: ReasonMissingVolumeClaim, Message: `pod w-a cannot be scheduled: 0/1 nodes are available: persistentvolumeclaim "model-cache" not found. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.`}},
		"a missing secret holds the container": {plain,
			pods(pod("w-a").Waiting("CreateContainerConfigError", `secret "hf-token" not found`)),
			&blocker{Reason: ReasonContainerConfigError, Message: `pod w-a cannot start container main: secret "hf-token" not found`}},
		"image pull failure": {plain,
			pods(pod("w-a").Waiting("ImagePullBackOff", `Back-off pulling image "nvcr.io/nope:1"`)),
			&blocker{Reason: ReasonImagePullFailed, Message: `pod w-a cannot pull the image of container main: Back-off pulling image "nvcr.io/nope:1"`}},
		"err image pull without a message says the reason": {plain,
			pods(pod("w-a").Waiting("ErrImagePull", "")),
			&blocker{Reason: ReasonImagePullFailed, Message: "pod w-a cannot pull the image of container main: ErrImagePull"}},
		"crash loop with restart count and exit": {plain,
			pods(pod("w-a").CrashLooping(5, 137)),
			&blocker{Reason: ReasonCrashLoop, Message: "pod w-a container main is crash-looping (restarted 5 times; last exit code 137, Error)"}},
		"scheduling comes before a later pod's crash loop": {plain,
			pods(pod("w-a").CrashLooping(1, 1), pod("w-b").Unschedulable("0/1 nodes are available")),
			&blocker{Reason: ReasonUnschedulable, Message: "pod w-b cannot be scheduled: 0/1 nodes are available"}},
		"terminating pods explain nothing":             {plain, pods(pod("w-a").CrashLooping(3, 1).Terminating()), nil},
		"ContainerCreating is progress, not a blocker": {plain, pods(pod("w-a").Waiting("ContainerCreating", "")), nil},
		"progress deadline alone: stalled": {deployWith(builders.DeploymentConditions{}.DeadlineExceeded("w-5f")), pods(pod("w-a")),
			&blocker{Reason: ReasonProgressDeadline, Stalled: true,
				Message: `the rollout made no progress within its progressDeadlineSeconds: ReplicaSet "w-5f" has timed out progressing.`}},
		"progress deadline with a pod cause keeps the cause": {deployWith(builders.DeploymentConditions{}.DeadlineExceeded("w-5f")),
			pods(pod("w-a").CrashLooping(9, 1)),
			&blocker{Reason: ReasonCrashLoop, Stalled: true,
				Message: "pod w-a container main is crash-looping (restarted 9 times; last exit code 1, Error); the rollout made no progress within its progressDeadlineSeconds"}},
		"replica failure (quota)": {deployWith(builders.DeploymentConditions{}.ReplicaFailure(`pods "w-a" is forbidden: exceeded quota: gpus`)), nil,
			&blocker{Reason: ReasonReplicaFailure, Message: `cannot create pods: pods "w-a" is forbidden: exceeded quota: gpus`}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, rolloutBlocker(tc.deploy, tc.pods)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestPodsToComponent(t *testing.T) {
	cases := map[string]struct {
		pod  *corev1.Pod
		want []reconcile.Request
	}{
		"our pod names its component": {builders.MakePod("p", "ns").Labels(map[string]string{render.LabelComponent: "llm-worker"}).Obj(),
			[]reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "llm-worker"}}}},
		"a pod Dynamo's operator made names it in its selector": {builders.MakePod("p", "ns").Labels(map[string]string{
			render.LabelComponent: "VllmWorker", dynamoSelectorLabel: "llm-vllmworker-0c5b225e"}).Obj(),
			[]reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "llm-vllmworker-0c5b225e"}}}},
		"a ready pod changes nothing its Deployment does not say": {builders.MakePod("p", "ns").Labels(map[string]string{render.LabelComponent: "llm-worker"}).Ready().Obj(), nil},
		"a pod of no component":                                   {builders.MakePod("p", "ns").Obj(), nil},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, podsToComponent(context.Background(), tc.pod)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
