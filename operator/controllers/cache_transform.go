package controllers

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"unique"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
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
//   - pods: their name, namespace, labels and deletion, and what trimPod
//     keeps of spec and status;
//   - graphs: everything but kubectl's last-applied copy;
//   - Deployments and Services: whole, but their spec packed
//     (packedFields), and of a Deployment's conditions those that explain a
//     stuck rollout.
//
// The strings every object shares with others (namespace, label keys and
// values, owners, short strings of its spec and status) are then kept once
// for the whole cache (internMeta, internStrings).
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
	managedFields := []metav1.ManagedFieldsEntry(nil)
	switch o := obj.(type) {
	case *v1alpha1.DynamoComponentDeployment:
		managedFields = replicasManagers(o.ManagedFields, FieldOwner)
	case *v1alpha1.DynamoGraphDeployment:
		if _, ok := o.Annotations[lastAppliedAnnotation]; ok {
			delete(o.Annotations, lastAppliedAnnotation)
		}
	case *corev1.Pod:
		trimPod(o)
	case *appsv1.Deployment:
		o.Status.Conditions = blockingDeploymentConditions(o.Status.Conditions)
	}
	m.SetManagedFields(managedFields)
	if err := pack(m); err != nil {
		return nil, err
	}
	internMeta(m)
	if v := reflect.ValueOf(obj); v.Kind() == reflect.Pointer && v.Elem().Kind() == reflect.Struct {
		for i, t := 0, v.Elem().Type(); i < t.NumField(); i++ {
			if f := t.Field(i); !f.Anonymous && f.Name != "ObjectMeta" {
				internStrings(v.Elem().Field(i))
			}
		}
	}
	return obj, nil
}

// blockingDeploymentConditions keeps, of a Deployment's conditions, the two
// that explain a stuck rollout (stuck.go): ReplicaFailure while True, and
// Progressing once False. A healthy Deployment's Available and Progressing
// (two reasons, a sentence each and four times) are read by nothing here:
// availability is read from the replica counts.
func blockingDeploymentConditions(in []appsv1.DeploymentCondition) []appsv1.DeploymentCondition {
	var out []appsv1.DeploymentCondition
	for _, c := range in {
		switch {
		case c.Type == appsv1.DeploymentReplicaFailure && c.Status == corev1.ConditionTrue,
			c.Type == appsv1.DeploymentProgressing && c.Status == corev1.ConditionFalse:
			out = append(out, appsv1.DeploymentCondition{Type: c.Type, Status: c.Status, Reason: c.Reason, Message: c.Message})
		}
	}
	return out
}

// internMeta makes the strings an object shares with other cached objects
// one copy each (unique.Make): its namespace, the keys and values of its
// labels, the keys of its annotations and its owners. Every one of 10,000
// cached objects decoded its own copy of "nvidia.com/dynamo-graph-
// deployment-name", of its namespace and of its graph's name. Pods keep their
// own names, unique to each; other children share theirs with the component
// they run. Annotation values are not interned: the packed ones are large
// and each object's own.
func internMeta(m metav1.Object) {
	m.SetNamespace(intern(m.GetNamespace()))
	if _, pod := m.(*corev1.Pod); !pod {
		m.SetName(intern(m.GetName()))
	}
	if labels := m.GetLabels(); labels != nil {
		interned := make(map[string]string, len(labels))
		for k, v := range labels {
			interned[intern(k)] = intern(v)
		}
		m.SetLabels(interned)
	}
	if annotations := m.GetAnnotations(); annotations != nil {
		interned := make(map[string]string, len(annotations))
		for k, v := range annotations {
			interned[intern(k)] = v
		}
		m.SetAnnotations(interned)
	}
	owners := m.GetOwnerReferences()
	for i := range owners {
		o := &owners[i]
		o.APIVersion, o.Kind, o.Name, o.UID = intern(o.APIVersion), intern(o.Kind), intern(o.Name), types.UID(intern(string(o.UID)))
	}
}

func intern(s string) string { return unique.Make(s).Value() }

// internedLength bounds the strings internStrings shares: image names,
// commands, environment variables and condition reasons and messages are
// shorter, and repeat across every component of every graph; longer ones
// (a script, an inline config) are seldom shared and cost a second copy
// in unique's table while decoded.
const internedLength = 256

// internStrings interns, in place, every string of v, a settable field of a
// cached object besides its metadata (its spec, status, a Role's rules), and
// the keys of its maps: decoded, each of 2,500 graphs and components held
// its own copy of the image, the command, the resources' names and the
// conditions' messages, each Deployment of its selector, each Role of its
// verbs.
// Unexported fields (a Quantity's, a Time's) are left alone: they cannot be
// set, and hold no shared strings.
func internStrings(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		if s := v.String(); len(s) <= internedLength && v.CanSet() {
			v.SetString(intern(s))
		}
	case reflect.Pointer:
		if !v.IsNil() {
			internStrings(v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Field(i); f.CanSet() {
				internStrings(f)
			}
		}
	case reflect.Slice:
		switch v.Type().Elem().Kind() {
		case reflect.String, reflect.Struct, reflect.Pointer, reflect.Slice, reflect.Map:
			for i := range v.Len() {
				internStrings(v.Index(i))
			}
		}
	case reflect.Map:
		if v.IsNil() || v.Type().Key().Kind() != reflect.String || !v.CanSet() {
			return
		}
		interned := reflect.MakeMapWithSize(v.Type(), v.Len())
		for it := v.MapRange(); it.Next(); {
			key := reflect.New(v.Type().Key()).Elem()
			key.Set(it.Key())
			internStrings(key)
			value := reflect.New(v.Type().Elem()).Elem()
			value.Set(it.Value())
			internStrings(value)
			interned.SetMapIndex(key, value)
		}
		v.Set(interned)
	}
}

// trimPod keeps of a pod's spec and status what is read: the phase, IP
// and the conditions readPodConditions keeps, and of each container its
// name, readiness, restarts,
// waiting state and last termination (stuck.go explains a rollout from
// them, the model controller picks its endpoints), when it started running
// (the first report's hold), and the container port
// named "system" (systemAddress). A simulated cluster's 2,000 pods are as
// many objects as its Deployments, and the rest (images, container IDs,
// host IPs, the pod's start time, the whole pod spec) is read by nothing here.
func trimPod(p *corev1.Pod) {
	// Pods are found by their labels (podsOf, the model controller), not
	// by their owner, and no annotation of theirs is read.
	p.OwnerReferences, p.Annotations, p.GenerateName, p.Finalizers = nil, nil, "", nil
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
		Conditions:            readPodConditions(p.Status.Conditions),
		InitContainerStatuses: trimContainerStatuses(p.Status.InitContainerStatuses),
		ContainerStatuses:     trimContainerStatuses(p.Status.ContainerStatuses),
	}
}

// readPodConditions keeps the two pod conditions read: Ready, whose status
// is the pod's readiness (podReady), and PodScheduled while False, whose
// reason and message are the scheduler's verdict (unschedulable). The rest
// (their times, and three more conditions on every running pod) is read by
// nothing here.
func readPodConditions(in []corev1.PodCondition) []corev1.PodCondition {
	var out []corev1.PodCondition
	for _, c := range in {
		switch {
		case c.Type == corev1.PodReady:
			out = append(out, corev1.PodCondition{Type: c.Type, Status: c.Status})
		case c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse:
			out = append(out, corev1.PodCondition{Type: c.Type, Status: c.Status, Reason: c.Reason, Message: c.Message})
		}
	}
	return out
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
			State:                corev1.ContainerState{Waiting: cs.State.Waiting, Running: cs.State.Running},
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
// every read (docs/design/writes-and-memory.md).
var packedFields = []func(obj any) packedField{
	// A Deployment's spec, its pod template above all, is read only when
	// its component is reconciled: to check for drift, adopt a workload and
	// list its pods; at 500 graphs the templates were 8 MiB of a 41 MiB live
	// heap, and the selector and strategy as Go structs are 400 bytes more
	// for each Deployment than as protobuf.
	func(obj any) packedField {
		if d, ok := obj.(*appsv1.Deployment); ok {
			return &d.Spec
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
