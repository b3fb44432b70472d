package builders

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

// DynamoComponentWrapper builds a DynamoComponent.
type DynamoComponentWrapper struct{ v1alpha1.DynamoComponent }

// MakeDynamoComponent starts a DynamoComponent for the artifact ref
// (name:version), with nothing but the reference: its image is built.
func MakeDynamoComponent(name, namespace, ref string) *DynamoComponentWrapper {
	return &DynamoComponentWrapper{v1alpha1.DynamoComponent{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "DynamoComponent"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec:       v1alpha1.DynamoComponentSpec{DynamoComponent: ref},
	}}
}

// Obj returns the DynamoComponent.
func (d *DynamoComponentWrapper) Obj() *v1alpha1.DynamoComponent { return &d.DynamoComponent }

// Image names a ready image: nothing is built.
func (d *DynamoComponentWrapper) Image(image string) *DynamoComponentWrapper {
	d.Spec.Image = image
	return d
}

// Timeout sets imageBuildTimeout.
func (d *DynamoComponentWrapper) Timeout(t time.Duration) *DynamoComponentWrapper {
	d.Spec.ImageBuildTimeout = &metav1.Duration{Duration: t}
	return d
}

// BuildArgs sets the build's KEY=VALUE arguments.
func (d *DynamoComponentWrapper) BuildArgs(args ...string) *DynamoComponentWrapper {
	d.Spec.BuildArgs = args
	return d
}

// PushSecret names the dockerconfigjson Secret the build pushes with.
func (d *DynamoComponentWrapper) PushSecret(name string) *DynamoComponentWrapper {
	d.Spec.DockerConfigJSONSecretName = name
	return d
}

// PullSecret adds an image pull secret of the builder pod.
func (d *DynamoComponentWrapper) PullSecret(name string) *DynamoComponentWrapper {
	d.Spec.ImagePullSecrets = append(d.Spec.ImagePullSecrets, corev1.LocalObjectReference{Name: name})
	return d
}

// PodAnnotation adds an annotation to the builder pod.
func (d *DynamoComponentWrapper) PodAnnotation(k, v string) *DynamoComponentWrapper {
	if d.Spec.ImageBuilderExtraPodMetadata == nil {
		d.Spec.ImageBuilderExtraPodMetadata = &v1alpha1.ExtraPodMetadata{}
	}
	d.Spec.ImageBuilderExtraPodMetadata.Annotations = withKey(d.Spec.ImageBuilderExtraPodMetadata.Annotations, k, v)
	return d
}

// BuilderEnv adds an environment variable to the builder container.
func (d *DynamoComponentWrapper) BuilderEnv(name, value string) *DynamoComponentWrapper {
	d.Spec.ImageBuilderExtraContainerEnv = append(d.Spec.ImageBuilderExtraContainerEnv, corev1.EnvVar{Name: name, Value: value})
	return d
}

// NodeSelector merges a node selector into the builder pod.
func (d *DynamoComponentWrapper) NodeSelector(k, v string) *DynamoComponentWrapper {
	if d.Spec.ImageBuilderExtraPodSpec == nil {
		d.Spec.ImageBuilderExtraPodSpec = &v1alpha1.ExtraPodSpec{}
	}
	if d.Spec.ImageBuilderExtraPodSpec.PodSpec == nil {
		d.Spec.ImageBuilderExtraPodSpec.PodSpec = &corev1.PodSpec{}
	}
	d.Spec.ImageBuilderExtraPodSpec.PodSpec.NodeSelector = withKey(d.Spec.ImageBuilderExtraPodSpec.PodSpec.NodeSelector, k, v)
	return d
}
