package controllers

import (
	"encoding/json"
	"fmt"
	"reflect"
	"runtime"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kjson "sigs.k8s.io/json"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

// BenchmarkCachedObjectSize measures what one cached object costs in heap:
// 2,000 copies of a component, a graph, a Deployment and a running pod,
// decoded as the informers decode them (JSON for our kinds, protobuf for
// the built-in ones), then trimmed by trimForCache. It reports bytes per
// object decoded and cached, and the ratio of the two
// (docs/design/writes-and-memory.md):
//
//	go test -run '^$' -bench CachedObjectSize ./operator/controllers/
func BenchmarkCachedObjectSize(b *testing.B) {
	const n = 2000
	graph, comp, deploy := renderedWorker(b)
	now := metav1.Now()
	// What the API server adds to every object.
	stored := func(m metav1.Object, i int) {
		m.SetUID(types.UID(fmt.Sprintf("4f9a3c1e-7b2d-4e8f-9a6b-%012d", i)))
		m.SetResourceVersion(fmt.Sprint(1000000 + i))
		m.SetCreationTimestamp(now)
		m.SetGeneration(1)
		m.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: FieldOwner, Operation: metav1.ManagedFieldsOperationApply,
			APIVersion: "v1", Time: &now, FieldsType: "FieldsV1",
			FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:labels":{"f:a":{},"f:b":{}}},"f:spec":{"f:x":{}}}`)}}})
	}
	ready := []metav1.Condition{
		{Type: v1alpha1.ConditionAvailable, Status: metav1.ConditionTrue, ObservedGeneration: 1, LastTransitionTime: now,
			Reason: ReasonAvailable, Message: "1 of 1 replicas available"},
		{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, ObservedGeneration: 1, LastTransitionTime: now,
			Reason: ReasonAvailable, Message: "1 of 1 replicas available"},
	}
	comp.Status.Conditions = ready
	comp.OwnerReferences = []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: "DynamoGraphDeployment",
		Name: graph.Name, UID: "0b4e2a9c-1d3f-4a5b-8c7d-000000000001"}}
	graph.Status.State, graph.Status.Conditions = v1alpha1.GraphStateSuccessful, ready
	deploy.OwnerReferences = []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: "DynamoComponentDeployment",
		Name: comp.Name, UID: "0b4e2a9c-1d3f-4a5b-8c7d-000000000002"}}
	deploy.Status = appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1,
		Conditions: []appsv1.DeploymentCondition{
			{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable",
				Message: "Deployment has minimum availability.", LastUpdateTime: now, LastTransitionTime: now},
			{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable",
				Message: `ReplicaSet "llm-worker-5d8f6b7c9d" has successfully progressed.`, LastUpdateTime: now, LastTransitionTime: now},
		}}
	// A running pod of the Deployment, as the kubelet reports it.
	pod := &corev1.Pod{ObjectMeta: *deploy.Spec.Template.ObjectMeta.DeepCopy(), Spec: *deploy.Spec.Template.Spec.DeepCopy()}
	pod.Name, pod.Namespace, pod.GenerateName = "llm-worker-5d8f6b7c9d-x7k2p", deploy.Namespace, "llm-worker-5d8f6b7c9d-"
	pod.Labels["pod-template-hash"] = "5d8f6b7c9d"
	pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "llm-worker-5d8f6b7c9d",
		UID: "0b4e2a9c-1d3f-4a5b-8c7d-000000000003"}}
	pod.Spec.NodeName = "kwok-node-17"
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, HostIP: "10.0.0.17", PodIP: "10.1.3.4",
		PodIPs: []corev1.PodIP{{IP: "10.1.3.4"}}, StartTime: &now, QOSClass: corev1.PodQOSBurstable}
	for _, c := range []corev1.PodConditionType{"PodReadyToStartContainers", corev1.PodInitialized, corev1.PodReady,
		corev1.ContainersReady, corev1.PodScheduled} {
		pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: c, Status: corev1.ConditionTrue, LastTransitionTime: now})
	}
	started := true
	for _, c := range pod.Spec.Containers {
		pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, corev1.ContainerStatus{Name: c.Name, Ready: true,
			Image: c.Image, ImageID: "sha256:0123456789abcdef", ContainerID: "containerd://0123456789abcdef", Started: &started,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}})
	}

	// Each kind is decoded the way its informer decodes it: into a new
	// object of its type, from JSON (ours) or protobuf (built-in kinds).
	kinds := []struct {
		name string
		obj  client.Object
	}{{"component", comp}, {"graph", graph}, {"deployment", deploy}, {"pod", pod}}
	for _, kind := range kinds {
		b.Run(kind.name, func(b *testing.B) {
			decode := func(i int) any {
				obj := kind.obj.DeepCopyObject().(client.Object)
				stored(obj, i)
				into := reflect.New(reflect.TypeOf(obj).Elem()).Interface()
				var raw []byte
				var err error
				if m, ok := obj.(protoMessage); ok {
					if raw, err = m.Marshal(); err == nil {
						err = into.(protoMessage).Unmarshal(raw)
					}
				} else if raw, err = json.Marshal(obj); err == nil {
					err = kjson.UnmarshalCaseSensitivePreserveInts(raw, into)
				}
				if err != nil {
					b.Fatal(err)
				}
				return into
			}
			var decodedBytes, cachedBytes uint64
			for range b.N {
				objs := make([]any, n)
				base := heapInUse()
				for i := range objs {
					objs[i] = decode(i)
				}
				decoded := heapInUse()
				for i, obj := range objs {
					cached, err := trimForCache(obj)
					if err != nil {
						b.Fatal(err)
					}
					objs[i] = cached
				}
				cached := heapInUse()
				runtime.KeepAlive(objs)
				decodedBytes += (decoded - base) / n
				cachedBytes += (cached - base) / n
			}
			b.ReportMetric(float64(decodedBytes)/float64(b.N), "B-decoded/object")
			b.ReportMetric(float64(cachedBytes)/float64(b.N), "B-cached/object")
			b.ReportMetric(float64(cachedBytes)/float64(decodedBytes), "x-decoded")
		})
	}
}

// heapInUse is the live heap after two collections (the second frees what
// the first's finalizers released).
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// protoMessage is what the built-in kinds' informers decode: protobuf.
type protoMessage interface {
	Marshal() ([]byte, error)
	Unmarshal([]byte) error
}
