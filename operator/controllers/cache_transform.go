package controllers

import (
	"encoding/json"
	"fmt"
	"reflect"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
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
//   - pods: metadata and status (stuck.go explains rollouts from status);
//     the spec is dropped;
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
		o.Spec = corev1.PodSpec{}
	}
	m.SetManagedFields(nil)
	if err := pack(m); err != nil {
		return nil, err
	}
	return obj, nil
}

// packedAnnotation holds, on a cached copy only, a field packedFields
// packed. Its key is deliberately not a valid annotation key (a space):
// should a cached copy ever be written back, the API server refuses it
// rather than store the packed bytes and an empty field.
const packedAnnotation = "nvidia.com/packed by the cache"

// protoField is a field that marshals itself to protobuf, as every
// Kubernetes API type does.
type protoField interface {
	Marshal() ([]byte, error)
	Unmarshal([]byte) error
}

// packedFields are the large fields of cached objects that are read only
// when their object is reconciled: the cache holds them as protobuf bytes,
// a third of their size as Go structs, and getOptional unpacks them into
// the copy a reconcile reads, so every read of these kinds must go through
// it. A Deployment's pod template is most of it and is read only to check
// for drift and to adopt a workload; at 500 graphs it was 8 MiB of a 41 MiB
// live heap. Each entry returns the field of obj, or nil when obj is of
// another kind.
var packedFields = []func(obj any) protoField{
	func(obj any) protoField {
		if d, ok := obj.(*appsv1.Deployment); ok {
			return &d.Spec.Template
		}
		return nil
	},
	// A Service's spec is read only to check it for drift.
	func(obj any) protoField {
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
