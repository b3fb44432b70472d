package builders

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// DeploymentWrapper builds an apps/v1 Deployment: one the operator would
// render, or the Deployment controller's report on one (envtest has no
// Deployment controller: tests write its status).
type DeploymentWrapper struct{ appsv1.Deployment }

// MakeDeployment starts a Deployment with nothing but its name.
func MakeDeployment(name, namespace string) *DeploymentWrapper {
	return &DeploymentWrapper{appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
	}}
}

// Obj returns the Deployment.
func (d *DeploymentWrapper) Obj() *appsv1.Deployment { return &d.Deployment }

// WithoutTypeMeta clears apiVersion and kind, as a typed object read from
// a client has them.
func (d *DeploymentWrapper) WithoutTypeMeta() *DeploymentWrapper {
	d.TypeMeta = metav1.TypeMeta{}
	return d
}

// Label sets a label on the Deployment's metadata.
func (d *DeploymentWrapper) Label(k, v string) *DeploymentWrapper {
	d.Labels = withKey(d.Labels, k, v)
	return d
}

// Annotations replaces the Deployment's annotations, nil included.
func (d *DeploymentWrapper) Annotations(a map[string]string) *DeploymentWrapper {
	d.ObjectMeta.Annotations = a
	return d
}

// UID sets metadata.uid.
func (d *DeploymentWrapper) UID(uid string) *DeploymentWrapper {
	d.ObjectMeta.UID = types.UID(uid)
	return d
}

// Generation sets metadata.generation.
func (d *DeploymentWrapper) Generation(n int64) *DeploymentWrapper {
	d.ObjectMeta.Generation = n
	return d
}

// Replicas sets spec.replicas.
func (d *DeploymentWrapper) Replicas(n int32) *DeploymentWrapper {
	d.Spec.Replicas = ptr.To(n)
	return d
}

// Selector selects the pods labelled labels, and labels the template so.
func (d *DeploymentWrapper) Selector(labels map[string]string) *DeploymentWrapper {
	d.Spec.Selector = &metav1.LabelSelector{MatchLabels: labels}
	d.Spec.Template.Labels = labels
	return d
}

// Container adds a container to the pod template.
func (d *DeploymentWrapper) Container(name, image string) *DeploymentWrapper {
	d.Spec.Template.Spec.Containers = append(d.Spec.Template.Spec.Containers, corev1.Container{Name: name, Image: image})
	return d
}

// Status sets what the Deployment controller reports: the generation it
// observed, its pods, those of the current template, and those available
// (ready ones counted as available).
func (d *DeploymentWrapper) Status(observed int64, replicas, updated, available int32) *DeploymentWrapper {
	d.Deployment.Status.ObservedGeneration = observed
	d.Deployment.Status.Replicas = replicas
	d.Deployment.Status.UpdatedReplicas = updated
	d.Deployment.Status.ReadyReplicas = available
	d.Deployment.Status.AvailableReplicas = available
	return d
}

// StatusReplicas sets status.replicas alone.
func (d *DeploymentWrapper) StatusReplicas(n int32) *DeploymentWrapper {
	d.Deployment.Status.Replicas = n
	return d
}

// Conditions sets status.conditions (see DeploymentConditions).
func (d *DeploymentWrapper) Conditions(c []appsv1.DeploymentCondition) *DeploymentWrapper {
	d.Deployment.Status.Conditions = c
	return d
}
