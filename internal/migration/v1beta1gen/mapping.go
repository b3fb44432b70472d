package main

import (
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1beta1"
)

// lastApplied is kubectl's record of the v1alpha1 manifest: Dynamo's
// current operator's objects were applied in v1beta1.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

func graph(o *unstructured.Unstructured) (*v1beta1.DynamoGraphDeployment, error) {
	a := &v1alpha1.DynamoGraphDeployment{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, a); err != nil {
		return nil, err
	}
	b := &v1beta1.DynamoGraphDeployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1beta1.GroupVersion.String(), Kind: "DynamoGraphDeployment"},
		ObjectMeta: meta(a.ObjectMeta),
	}
	b.Spec.BackendFramework = string(a.Spec.BackendFramework)
	b.Spec.Env = a.Spec.Envs
	for _, name := range slices.Sorted(maps.Keys(a.Spec.Services)) {
		c, err := shared(name, a.Spec.Services[name])
		if err != nil {
			return nil, fmt.Errorf("service %s: %w", name, err)
		}
		b.Spec.Components = append(b.Spec.Components, c)
	}
	b.Status = v1beta1.DynamoGraphDeploymentStatus{
		ObservedGeneration: a.Status.ObservedGeneration,
		State:              v1beta1.DGDState(a.Status.State),
		Conditions:         a.Status.Conditions,
	}
	for name, s := range a.Status.Services {
		if b.Status.Components == nil {
			b.Status.Components = map[string]v1beta1.ComponentReplicaStatus{}
		}
		b.Status.Components[name] = replicaStatus(s)
	}
	return b, nil
}

func component(o *unstructured.Unstructured) (*v1beta1.DynamoComponentDeployment, error) {
	a := &v1alpha1.DynamoComponentDeployment{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, a); err != nil {
		return nil, err
	}
	b := &v1beta1.DynamoComponentDeployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1beta1.GroupVersion.String(), Kind: "DynamoComponentDeployment"},
		ObjectMeta: meta(a.ObjectMeta),
	}
	s, err := shared(a.Spec.ServiceName, &a.Spec.DynamoComponentDeploymentSharedSpec)
	if err != nil {
		return nil, err
	}
	b.Spec.DynamoComponentDeploymentSharedSpec = s
	b.Spec.BackendFramework = string(a.Spec.BackendFramework)
	b.Status = v1beta1.DynamoComponentDeploymentStatus{
		ObservedGeneration: a.Status.ObservedGeneration,
		Conditions:         a.Status.Conditions,
	}
	if a.Status.Service != nil {
		r := replicaStatus(*a.Status.Service)
		b.Status.Component = &r
	}
	return b, nil
}

// meta keeps the object's identity, labels, annotations but kubectl's
// v1alpha1 record, owners and finalizers; owner references name the owner
// in v1beta1, as Dynamo's current operator sets them.
func meta(m metav1.ObjectMeta) metav1.ObjectMeta {
	out := *m.DeepCopy()
	delete(out.Annotations, lastApplied)
	for i := range out.OwnerReferences {
		if out.OwnerReferences[i].APIVersion == v1alpha1.GroupVersion.String() {
			out.OwnerReferences[i].APIVersion = v1beta1.GroupVersion.String()
		}
	}
	return out
}

func replicaStatus(s v1alpha1.ServiceReplicaStatus) v1beta1.ComponentReplicaStatus {
	return v1beta1.ComponentReplicaStatus{
		ComponentKind:     v1beta1.ComponentKind(s.ComponentKind),
		ComponentNames:    s.ComponentNames,
		Replicas:          s.Replicas,
		UpdatedReplicas:   s.UpdatedReplicas,
		ReadyReplicas:     s.ReadyReplicas,
		AvailableReplicas: s.AvailableReplicas,
	}
}

// shared is a component's v1beta1 spec: see the package doc.
func shared(name string, a *v1alpha1.DynamoComponentDeploymentSharedSpec) (v1beta1.DynamoComponentDeploymentSharedSpec, error) {
	b := v1beta1.DynamoComponentDeploymentSharedSpec{
		ComponentName: name,
		ComponentType: v1beta1.ComponentType(a.ComponentType),
		Replicas:      a.Replicas,
	}
	if a.SubComponentType != "" {
		b.ComponentType = v1beta1.ComponentType(a.SubComponentType)
	}
	if a.ModelRef != nil {
		b.ModelRef = &v1beta1.ModelReference{Name: a.ModelRef.Name, Revision: a.ModelRef.Revision}
	}
	tmpl, err := podTemplate(a)
	if err != nil {
		return b, err
	}
	b.PodTemplate = tmpl
	return b, nil
}

func podTemplate(a *v1alpha1.DynamoComponentDeploymentSharedSpec) (*corev1.PodTemplateSpec, error) {
	t := &corev1.PodTemplateSpec{}
	main := corev1.Container{}
	if a.ExtraPodSpec != nil {
		if a.ExtraPodSpec.PodSpec != nil {
			t.Spec = *a.ExtraPodSpec.PodSpec.DeepCopy()
		}
		if a.ExtraPodSpec.MainContainer != nil {
			main = *a.ExtraPodSpec.MainContainer.DeepCopy()
		}
	}
	main.Name = v1beta1.MainContainerName
	main.Env = append(main.Env, a.Envs...)
	if a.EnvFromSecret != nil {
		main.EnvFrom = append(main.EnvFrom, corev1.EnvFromSource{SecretRef: &corev1.SecretEnvSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: *a.EnvFromSecret}}})
	}
	for _, m := range a.VolumeMounts {
		main.VolumeMounts = append(main.VolumeMounts, corev1.VolumeMount{Name: m.Name, MountPath: m.MountPoint})
	}
	if err := resources(&main.Resources, a.Resources); err != nil {
		return nil, err
	}
	t.Spec.Containers = append([]corev1.Container{main}, t.Spec.Containers...)
	return t, nil
}

func resources(out *corev1.ResourceRequirements, r *v1alpha1.Resources) error {
	if r == nil {
		return nil
	}
	for _, side := range []struct {
		item *v1alpha1.ResourceItem
		list *corev1.ResourceList
	}{{r.Requests, &out.Requests}, {r.Limits, &out.Limits}} {
		if side.item == nil {
			continue
		}
		set := func(name corev1.ResourceName, v string) error {
			if v == "" {
				return nil
			}
			q, err := resource.ParseQuantity(v)
			if err != nil {
				return fmt.Errorf("%s %q: %w", name, v, err)
			}
			if *side.list == nil {
				*side.list = corev1.ResourceList{}
			}
			(*side.list)[name] = q
			return nil
		}
		gpu := corev1.ResourceName("nvidia.com/gpu")
		if side.item.GPUType != "" {
			gpu = corev1.ResourceName(side.item.GPUType)
		}
		errs := []error{set(corev1.ResourceCPU, side.item.CPU), set(corev1.ResourceMemory, side.item.Memory), set(gpu, side.item.GPU)}
		for k, v := range side.item.Custom {
			errs = append(errs, set(corev1.ResourceName(k), v))
		}
		for _, err := range errs {
			if err != nil {
				return err
			}
		}
	}
	return nil
}
