package controllers

import (
	"fmt"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// Reasons of a component's Available and Ready conditions when its rollout
// cannot progress, each named after what Kubernetes reported.
const (
	ReasonUnschedulable        = "Unschedulable"
	ReasonMissingVolumeClaim   = "MissingVolumeClaim"
	ReasonContainerConfigError = "CreateContainerConfigError"
	ReasonImagePullFailed      = "ImagePullFailed"
	ReasonCrashLoop            = "CrashLoopBackOff"
	ReasonReplicaFailure       = "ReplicaFailure"
	// ReasonProgressDeadline is also the Deployment controller's reason.
	ReasonProgressDeadline = "ProgressDeadlineExceeded"
)

// blocker says why a component's rollout does not progress, in the words
// Kubernetes used (the scheduler's, the kubelet's, the Deployment
// controller's), naming the pod.
type blocker struct {
	Reason  string
	Message string
	// Stalled: Kubernetes itself gave up on the rollout (its progress
	// deadline passed), which kstatus-based tools report as Failed. The
	// other causes may still clear by themselves (a node joins, a Secret
	// is created) and stay InProgress.
	Stalled bool
}

// podCause finds one reason a pod cannot become ready; ok false when the
// pod shows none of it.
type podCause func(pod *corev1.Pod) (reason, message string, ok bool)

// podCauses are tried in order over every not-ready pod: the first that
// matches any pod explains the component. Earlier causes block the later
// ones (a pod that is not scheduled pulls no image), so they come first.
// A new cause is one more entry here.
var podCauses = []podCause{
	unschedulable,
	waitingIn(ReasonContainerConfigError, "cannot start container %s: %s", "CreateContainerConfigError"),
	waitingIn(ReasonImagePullFailed, "cannot pull the image of container %s: %s", "ErrImagePull", "ImagePullBackOff", "InvalidImageName"),
	crashLooping,
}

// rolloutBlocker explains why a Deployment's rollout does not progress,
// from the Deployment and the pods its selector matches, or returns nil
// when nothing Kubernetes reported says (pods still starting, a model still
// loading). It is called only when the component is not available.
func rolloutBlocker(deploy *appsv1.Deployment, pods []corev1.Pod) *blocker {
	var b *blocker
	candidates := notReadyPods(pods)
causes:
	for _, cause := range podCauses {
		for _, pod := range candidates {
			if reason, msg, ok := cause(pod); ok {
				b = &blocker{Reason: reason, Message: fmt.Sprintf("pod %s %s", pod.Name, msg)}
				break causes
			}
		}
	}
	for _, c := range deploy.Status.Conditions {
		switch {
		case c.Type == appsv1.DeploymentReplicaFailure && c.Status == corev1.ConditionTrue && b == nil:
			b = &blocker{Reason: ReasonReplicaFailure, Message: "cannot create pods: " + c.Message}
		case c.Type == appsv1.DeploymentProgressing && c.Status == corev1.ConditionFalse && c.Reason == ReasonProgressDeadline:
			deadline := "the rollout made no progress within its progressDeadlineSeconds"
			if b == nil {
				b = &blocker{Reason: ReasonProgressDeadline, Message: deadline + ": " + c.Message}
			} else {
				b.Message += "; " + deadline
			}
			b.Stalled = true
		}
	}
	return b
}

// notReadyPods are the pods that may explain a stuck rollout, by name for a
// stable message: terminating and ready pods explain nothing.
func notReadyPods(pods []corev1.Pod) []*corev1.Pod {
	var out []*corev1.Pod
	for i := range pods {
		p := &pods[i]
		if p.DeletionTimestamp != nil || podReady(p) {
			continue
		}
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// unschedulable reads the scheduler's verdict. A claim that does not exist
// is the scheduler's to report too: `persistentvolumeclaim "x" not found`.
func unschedulable(pod *corev1.Pod) (string, string, bool) {
	for _, c := range pod.Status.Conditions {
		if c.Type != corev1.PodScheduled || c.Status != corev1.ConditionFalse || c.Reason != corev1.PodReasonUnschedulable {
			continue
		}
		if strings.Contains(c.Message, "persistentvolumeclaim") && strings.Contains(c.Message, "not found") {
			return ReasonMissingVolumeClaim, "cannot be scheduled: " + c.Message, true
		}
		return ReasonUnschedulable, "cannot be scheduled: " + c.Message, true
	}
	return "", "", false
}

// waitingIn matches a container the kubelet holds in one of the waiting
// reasons; format takes the container's name and the kubelet's message.
func waitingIn(reason, format string, waiting ...string) podCause {
	return func(pod *corev1.Pod) (string, string, bool) {
		for _, cs := range containerStatuses(pod) {
			w := cs.State.Waiting
			if w == nil {
				continue
			}
			for _, r := range waiting {
				if w.Reason == r {
					msg := w.Message
					if msg == "" {
						msg = w.Reason
					}
					return reason, fmt.Sprintf(format, cs.Name, msg), true
				}
			}
		}
		return "", "", false
	}
}

// crashLooping names the container, how often it restarted and how it last
// ended.
func crashLooping(pod *corev1.Pod) (string, string, bool) {
	for _, cs := range containerStatuses(pod) {
		if cs.State.Waiting == nil || cs.State.Waiting.Reason != ReasonCrashLoop {
			continue
		}
		msg := fmt.Sprintf("container %s is crash-looping (restarted %d times", cs.Name, cs.RestartCount)
		if t := cs.LastTerminationState.Terminated; t != nil {
			msg += fmt.Sprintf("; last exit code %d", t.ExitCode)
			if t.Reason != "" {
				msg += ", " + t.Reason
			}
		}
		return ReasonCrashLoop, msg + ")", true
	}
	return "", "", false
}

// containerStatuses are init containers' first: a pod whose init container
// fails never starts its main one.
func containerStatuses(pod *corev1.Pod) []corev1.ContainerStatus {
	return append(append([]corev1.ContainerStatus{}, pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...)
}
