package controllers

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/render"
)

// lastAppliedAnnotation is kubectl's copy of what a user last applied: on a
// large graph as big as the spec itself, and read by nothing here (render
// does not propagate it to children).
const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// replicasOnly is the managed-fields set that stands for "owns spec.replicas".
var replicasOnly = &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:replicas":{}}}`)}

// trimForCache drops from an object, before the cache stores it, what the
// operator never reads: the cache holds every graph, component, workload,
// Service and not-ready pod, and managedFields alone are often as large as
// the rest of an object. It keeps exactly what is read:
//   - components: of managedFields, only whether another manager owns
//     spec.replicas (replicasOwnedByOther, scaling.go);
//   - pods: metadata and what trimPod keeps of spec and status;
//   - graphs: everything but kubectl's last-applied copy;
//   - Deployments and Services: whole, but their pod template and spec
//     packed (packedFields).
//
// The cache is never the source of a full-object write (status and
// finalizer patches are computed as differences between two cached copies,
// children are server-side applied from rendering), so nothing dropped here
// is written back as removed.
func trimForCache(obj any) (any, error) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return tombstone, nil
	}
	m, ok := obj.(metav1.Object)
	if !ok {
		return obj, nil
	}
	switch o := obj.(type) {
	case *v1alpha1.DynamoComponentDeployment:
		o.ManagedFields = replicasManagers(o.ManagedFields, FieldOwner)
		return o, nil
	case *v1alpha1.DynamoGraphDeployment:
		if _, ok := o.Annotations[lastAppliedAnnotation]; ok {
			delete(o.Annotations, lastAppliedAnnotation)
		}
	case *corev1.Pod:
		trimPod(o)
	}
	m.SetManagedFields(nil)
	if err := pack(m); err != nil {
		return nil, err
	}
	return obj, nil
}

// trimPod keeps of a pod's spec and status what is read: the phase, IP
// and conditions, and of each container its name, readiness, restarts,
// waiting state and last termination (stuck.go explains a rollout from
// them, the model controller picks its endpoints), and the container port
// named "system" (systemAddress). A simulated cluster's 2,000 pods are as
// many objects as its Deployments, and the rest (images, container IDs,
// host IPs, start times, the whole pod spec) is read by nothing here.
func trimPod(p *corev1.Pod) {
	var containers []corev1.Container
	for _, c := range p.Spec.Containers {
		for _, port := range c.Ports {
			if port.Name == render.SystemPortName {
				containers = append(containers, corev1.Container{Name: c.Name, Ports: []corev1.ContainerPort{port}})
			}
		}
	}
	p.Spec = corev1.PodSpec{Containers: containers}
	p.Status = corev1.PodStatus{
		Phase:                 p.Status.Phase,
		PodIP:                 p.Status.PodIP,
		Conditions:            p.Status.Conditions,
		InitContainerStatuses: trimContainerStatuses(p.Status.InitContainerStatuses),
		ContainerStatuses:     trimContainerStatuses(p.Status.ContainerStatuses),
	}
}

func trimContainerStatuses(in []corev1.ContainerStatus) []corev1.ContainerStatus {
	if in == nil {
		return nil
	}
	out := make([]corev1.ContainerStatus, len(in))
	for i, cs := range in {
		out[i] = corev1.ContainerStatus{
			Name:                 cs.Name,
			Ready:                cs.Ready,
			RestartCount:         cs.RestartCount,
			State:                corev1.ContainerState{Waiting: cs.State.Waiting},
			LastTerminationState: corev1.ContainerState{Terminated: cs.LastTerminationState.Terminated},
		}
	}
	return out
}

// packedAnnotation holds, on a cached copy only, a field packedFields
// packed. Its key is deliberately not a valid annotation key (a space):
// should a cached copy ever be written back, the API server refuses it
// rather than store the packed bytes and an empty field.
const packedAnnotation = "nvidia.com/packed by the cache"

// packedField is a pointer to a field that marshals itself to protobuf and
// back, as every Kubernetes API type does.
type packedField interface {
	Marshal() ([]byte, error)
	Unmarshal([]byte) error
}

// packedFields are the large fields of cached objects that are read only
// when their object is reconciled: the cache holds them as protobuf bytes,
// a third of their size as Go structs, and unpackingClient unpacks them
// into the copy a Get or List returns. Each entry returns the field of obj,
// or nil when obj is of another kind; a new kind is one more entry. Our own
// kinds are not packed: custom resources have no protobuf, and packing
// components' and graphs' specs as JSON took 2-3 MiB off the RSS at 500
// graphs for 3-4 s more of the operator's CPU, decoding them again on
// every read (CONTRIBUTING, "Writes and memory at scale").
var packedFields = []func(obj any) packedField{
	// A Deployment's pod template is most of it and is read only to check
	// for drift and to adopt a workload; at 500 graphs it was 8 MiB of a
	// 41 MiB live heap.
	func(obj any) packedField {
		if d, ok := obj.(*appsv1.Deployment); ok {
			return &d.Spec.Template
		}
		return nil
	},
	// A Service's spec is read only to check it for drift.
	func(obj any) packedField {
		if s, ok := obj.(*corev1.Service); ok {
			return &s.Spec
		}
		return nil
	},
}

// pack replaces obj's packed field, if it has one, by its bytes in
// packedAnnotation. It is idempotent, as a cache transform must be: the
// cache of a restarted operator transformed Deployments it already held
// (the initial list), and packing the emptied template again lost it, so
// every reconcile wrote ("a restarted operator writes nothing" caught it).
func pack(obj metav1.Object) error {
	if _, packed := obj.GetAnnotations()[packedAnnotation]; packed {
		return nil
	}
	for _, fieldOf := range packedFields {
		field := fieldOf(obj)
		if field == nil {
			continue
		}
		b, err := field.Marshal()
		if err != nil {
			return fmt.Errorf("packing %s for the cache: %w", obj.GetName(), err)
		}
		reflect.ValueOf(field).Elem().SetZero()
		annotations := obj.GetAnnotations()
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[packedAnnotation] = string(b)
		obj.SetAnnotations(annotations)
	}
	return nil
}

// unpack restores, in a copy read from the cache, the field pack packed.
// Objects read from the API server carry no packed field and are left as
// they are.
func unpack(obj metav1.Object) error {
	packed, ok := obj.GetAnnotations()[packedAnnotation]
	if !ok {
		return nil
	}
	for _, fieldOf := range packedFields {
		if field := fieldOf(obj); field != nil {
			if err := field.Unmarshal([]byte(packed)); err != nil {
				return fmt.Errorf("unpacking %s from the cache: %w", obj.GetName(), err)
			}
		}
	}
	annotations := obj.GetAnnotations()
	delete(annotations, packedAnnotation)
	if len(annotations) == 0 {
		annotations = nil
	}
	obj.SetAnnotations(annotations)
	return nil
}

// unpackingClient is the controllers' client: every object it reads from
// the cache comes back with what the cache packed (packedFields) unpacked,
// a Get's object and each item of a List, so no reconcile sees an emptied
// spec. Map functions and predicates get the cached object itself and read
// only its metadata.
type unpackingClient struct{ client.Client }

func (c unpackingClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if err := c.Client.Get(ctx, key, obj, opts...); err != nil {
		return err
	}
	return unpack(obj)
}

func (c unpackingClient) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := c.Client.List(ctx, list, opts...); err != nil {
		return err
	}
	return meta.EachListItem(list, func(item runtime.Object) error {
		if obj, ok := item.(metav1.Object); ok {
			return unpack(obj)
		}
		return nil
	})
}

// replicasManagers keeps, of an object's managed fields, one entry per
// manager other than fieldOwner that owns spec.replicas, reduced to that
// field; nil when there is none.
func replicasManagers(entries []metav1.ManagedFieldsEntry, fieldOwner string) []metav1.ManagedFieldsEntry {
	var out []metav1.ManagedFieldsEntry
	for _, mf := range entries {
		if mf.Manager == fieldOwner || mf.FieldsV1 == nil {
			continue
		}
		var fields struct {
			Spec map[string]json.RawMessage `json:"f:spec"`
		}
		if err := json.Unmarshal(mf.FieldsV1.Raw, &fields); err != nil {
			continue
		}
		if _, ok := fields.Spec["f:replicas"]; ok {
			out = append(out, metav1.ManagedFieldsEntry{Manager: mf.Manager, Operation: mf.Operation,
				Subresource: mf.Subresource, FieldsType: mf.FieldsType, FieldsV1: replicasOnly.DeepCopy()})
		}
	}
	return out
}
