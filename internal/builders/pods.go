package builders

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// PodWrapper builds a Pod in the states the scheduler and the kubelet
// report, for tests of what the operator reads from them (envtest has no
// kubelet: tests write those states through the API).
type PodWrapper struct{ corev1.Pod }

// MakePod starts a pod with one container "main", neither scheduled nor
// ready.
func MakePod(name, namespace string) *PodWrapper {
	return &PodWrapper{corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "img"}}},
	}}
}

// Obj returns the pod.
func (p *PodWrapper) Obj() *corev1.Pod { return &p.Pod }

// Template makes the pod the one a workload's controller would create from
// tmpl: its labels, annotations and spec (e.g. to ask admission about a
// Deployment's pods without a controller to create them).
func (p *PodWrapper) Template(tmpl corev1.PodTemplateSpec) *PodWrapper {
	for k, v := range tmpl.Labels {
		p.Pod.Labels[k] = v
	}
	p.Annotations = tmpl.Annotations
	p.Spec = *tmpl.Spec.DeepCopy()
	return p
}

// Labels adds labels, such as a workload's selector.
func (p *PodWrapper) Labels(l map[string]string) *PodWrapper {
	for k, v := range l {
		p.Pod.Labels[k] = v
	}
	return p
}

// Unschedulable records the scheduler's verdict, e.g. "0/4 nodes are
// available: 4 Insufficient nvidia.com/gpu".
func (p *PodWrapper) Unschedulable(message string) *PodWrapper {
	p.condition(corev1.PodScheduled, corev1.ConditionFalse, corev1.PodReasonUnschedulable, message)
	return p
}

// Ready marks the pod scheduled and ready.
func (p *PodWrapper) Ready() *PodWrapper {
	p.condition(corev1.PodScheduled, corev1.ConditionTrue, "", "")
	p.condition(corev1.PodReady, corev1.ConditionTrue, "", "")
	return p
}

// Waiting holds container main in a waiting state the kubelet reports,
// e.g. ImagePullBackOff or CreateContainerConfigError.
func (p *PodWrapper) Waiting(reason, message string) *PodWrapper {
	p.condition(corev1.PodScheduled, corev1.ConditionTrue, "", "")
	p.condition(corev1.PodReady, corev1.ConditionFalse, "ContainersNotReady", "")
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{
		Name: "main", Image: "img",
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}},
	}}
	return p
}

// Started marks the pod scheduled and running, container main started at
// at and not ready yet: its readiness probe has not passed.
func (p *PodWrapper) Started(at time.Time) *PodWrapper {
	p.condition(corev1.PodScheduled, corev1.ConditionTrue, "", "")
	p.condition(corev1.PodReady, corev1.ConditionFalse, "ContainersNotReady", "")
	p.Status.Phase = corev1.PodRunning
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{
		Name: "main", Image: "img",
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(at)}},
	}}
	return p
}

// CrashLooping holds container main in CrashLoopBackOff after restarts,
// its last run ended with exitCode.
func (p *PodWrapper) CrashLooping(restarts, exitCode int32) *PodWrapper {
	p.Waiting("CrashLoopBackOff", "back-off 5m0s restarting failed container=main")
	cs := &p.Status.ContainerStatuses[0]
	cs.RestartCount = restarts
	cs.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: exitCode, Reason: "Error"}
	return p
}

// Terminating marks the pod as being deleted.
func (p *PodWrapper) Terminating() *PodWrapper {
	p.DeletionTimestamp = ptr.To(metav1.Now())
	return p
}

func (p *PodWrapper) condition(t corev1.PodConditionType, s corev1.ConditionStatus, reason, message string) {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			p.Status.Conditions[i] = corev1.PodCondition{Type: t, Status: s, Reason: reason, Message: message}
			return
		}
	}
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: t, Status: s, Reason: reason, Message: message})
}

// DeploymentConditions builds the conditions the Deployment controller
// reports; DeadlineExceeded is Progressing=False ProgressDeadlineExceeded.
type DeploymentConditions []appsv1.DeploymentCondition

// DeadlineExceeded adds Progressing=False ProgressDeadlineExceeded with the
// Deployment controller's message for replicaSet.
func (c DeploymentConditions) DeadlineExceeded(replicaSet string) DeploymentConditions {
	return append(c, appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse,
		Reason: "ProgressDeadlineExceeded", Message: `ReplicaSet "` + replicaSet + `" has timed out progressing.`})
}

// ReplicaFailure adds ReplicaFailure=True, as when a quota forbids pods.
func (c DeploymentConditions) ReplicaFailure(message string) DeploymentConditions {
	return append(c, appsv1.DeploymentCondition{Type: appsv1.DeploymentReplicaFailure, Status: corev1.ConditionTrue,
		Reason: "FailedCreate", Message: message})
}

// InGroup labels the pod as LeaderWorkerSet makes a multinode component's
// pods: its component, its role (leader or worker) and its LeaderWorkerSet
// with the group index (groupIndex "" leaves the index out, as before
// LeaderWorkerSet's pod webhook set it).
func (p *PodWrapper) InGroup(component, role, lws, groupIndex string) *PodWrapper {
	p.Pod.Labels["nvidia.com/dynamo-component"] = component
	p.Pod.Labels["nvidia.com/dynamo-multinode-role"] = role
	p.Pod.Labels["leaderworkerset.sigs.k8s.io/name"] = lws
	if groupIndex != "" {
		p.Pod.Labels["leaderworkerset.sigs.k8s.io/group-index"] = groupIndex
	}
	return p
}

// SchedulingGroup names the pod's gang PodGroup itself.
func (p *PodWrapper) SchedulingGroup(podGroup string) *PodWrapper {
	p.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To(podGroup)}
	return p
}
