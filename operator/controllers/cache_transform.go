package controllers

import (
	"encoding/json"

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
//   - graphs: everything but kubectl's last-applied copy.
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
	return obj, nil
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
