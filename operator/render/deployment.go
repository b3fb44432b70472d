package render

import (
	"math"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

// Deployment renders the workload of a component. graphPVCs are the graph's
// spec.pvcs, which volumeMounts name; nil for a component without a graph.
//
// The error, an aggregate of field errors with paths relative to the
// component (spec.volumeMounts[0].name), is always something the user must
// fix in the spec: a missing image, an unknown claim, an unparsable quantity
// or an extraPodSpec that cannot be merged.
//
// A multinode service (multinode.nodeCount >= 2) gets replicas × nodeCount
// pods, each told the node count in DYN_MULTINODE_NODE_COUNT. A Deployment
// cannot group them into leader and workers per instance; the controller
// reports that limitation in a condition rather than hiding it.
func Deployment(dcd *v1alpha1.DynamoComponentDeployment, graphPVCs []v1alpha1.GraphPVC, o Options) (*appsv1.Deployment, error) {
	spec := &dcd.Spec.DynamoComponentDeploymentSharedSpec
	specPath := field.NewPath("spec")
	var errs field.ErrorList

	replicas := int64(1)
	if spec.Replicas != nil {
		replicas = int64(*spec.Replicas)
	}
	replicas *= int64(nodeCount(dcd))
	if replicas > math.MaxInt32 {
		errs = append(errs, field.Invalid(specPath.Child("multinode", "nodeCount"), nodeCount(dcd),
			"replicas × nodeCount exceeds the largest number of pods a Deployment can have"))
	}

	env := runtimeEnv(dcd, o)
	resources, resErrs := resourceRequirements(spec.Resources, specPath.Child("resources"))
	errs = append(errs, resErrs...)
	volumes, mounts, volErrs := podStorage(spec, graphPVCs, specPath)
	errs = append(errs, volErrs...)

	main := corev1.Container{
		Name:           MainContainerName,
		Ports:          containerPorts(spec.ComponentType),
		Env:            MergeEnv(env, spec.Envs),
		EnvFrom:        secretEnvFrom(spec.EnvFromSecret),
		Resources:      resources,
		LivenessProbe:  spec.LivenessProbe.DeepCopy(),
		ReadinessProbe: spec.ReadinessProbe.DeepCopy(),
		VolumeMounts:   mounts,
	}
	pod := corev1.PodSpec{Containers: []corev1.Container{main}, Volumes: volumes}
	if spec.FrontendSidecar != nil {
		pod.Containers = append(pod.Containers, sidecarContainer(spec.FrontendSidecar, env))
	}

	pod, mergeErr := mergeExtraPodSpec(pod, spec.ExtraPodSpec, specPath.Child("extraPodSpec"))
	if mergeErr != nil {
		errs = append(errs, mergeErr)
	} else {
		if c := findContainer(pod.Containers, MainContainerName); c == nil || c.Image == "" {
			errs = append(errs, field.Required(specPath.Child("extraPodSpec", "mainContainer", "image"),
				"set the service's image"))
		}
		if c := findContainer(pod.Containers, SidecarContainerName); spec.FrontendSidecar != nil && (c == nil || c.Image == "") {
			errs = append(errs, field.Required(specPath.Child("frontendSidecar", "image"),
				"set the frontend sidecar's image"))
		}
	}
	if len(errs) > 0 {
		return nil, errs.ToAggregate()
	}

	var extraLabels, extraAnnotations map[string]string
	if m := spec.ExtraPodMetadata; m != nil {
		extraLabels, extraAnnotations = m.Labels, m.Annotations
	}
	podLabels := map[string]string{}
	if g := dcd.Labels[LabelGraphName]; g != "" {
		podLabels[LabelGraphName] = g
	}
	if spec.ComponentType != "" {
		podLabels[LabelComponentType] = string(spec.ComponentType)
	}
	if spec.SubComponentType != "" {
		podLabels[LabelSubComponentType] = spec.SubComponentType
	}
	// The selector label comes last: a user's value would orphan the pods.
	podLabels = merged(podLabels, spec.Labels, extraLabels, selector(dcd))

	return &appsv1.Deployment{
		TypeMeta: metav1.TypeMeta{APIVersion: appsv1.SchemeGroupVersion.String(), Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        dcd.Name,
			Namespace:   dcd.Namespace,
			Labels:      workloadLabels(dcd),
			Annotations: workloadAnnotations(dcd),
		},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(replicas)),
			Selector: &metav1.LabelSelector{MatchLabels: selector(dcd)},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{
					Labels:      podLabels,
					Annotations: merged(spec.Annotations, extraAnnotations),
				},
				Spec: pod,
			},
		},
	}, nil
}

// selector selects the pods of a component.
func selector(dcd *v1alpha1.DynamoComponentDeployment) map[string]string {
	return map[string]string{LabelComponent: dcd.Name}
}

// workloadLabels label the objects rendered for a component: the
// component's labels (those the graph propagated), the service's labels, and
// the operator's, which win.
func workloadLabels(dcd *v1alpha1.DynamoComponentDeployment) map[string]string {
	labels := merged(dcd.Labels, dcd.Spec.Labels, map[string]string{
		LabelComponent: dcd.Name,
		LabelManagedBy: ManagedByValue,
	})
	if g := dcd.Labels[LabelGraphName]; g != "" {
		labels[LabelGraphName] = g
	}
	return labels
}

// workloadAnnotations annotate the objects rendered for a component.
func workloadAnnotations(dcd *v1alpha1.DynamoComponentDeployment) map[string]string {
	return merged(inheritedAnnotations(dcd.Annotations), dcd.Spec.Annotations)
}
