package render

import (
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/probes"
)

// Deployment renders the workload of a component. graphPVCs are the graph's
// spec.pvcs, which volumeMounts name; nil for a component without a graph.
//
// The error, an aggregate of field errors with paths relative to the
// component (spec.volumeMounts[0].name), is always something the user must
// fix in the spec: a missing image, an unknown claim, an unparsable quantity
// or an extraPodSpec that cannot be merged.
//
// A multinode service (multinode.nodeCount >= 2) is a LeaderWorkerSet (see
// LeaderWorkerSet), never a Deployment: a Deployment cannot group pods into
// a leader and its workers.
func Deployment(dcd *v1alpha1.DynamoComponentDeployment, graphPVCs []v1alpha1.GraphPVC, o Options) (*appsv1.Deployment, error) {
	specPath := field.NewPath("spec")
	if IsMultinode(dcd) {
		return nil, field.ErrorList{field.Invalid(specPath.Child("multinode", "nodeCount"), nodeCount(dcd),
			"a multinode service renders as a LeaderWorkerSet, not a Deployment")}.ToAggregate()
	}
	replicas := int32(1)
	if r := dcd.Spec.Replicas; r != nil {
		replicas = *r
	}
	template, err := podTemplate(dcd, graphPVCs, o)
	if err != nil {
		return nil, err
	}
	return &appsv1.Deployment{
		TypeMeta: metav1.TypeMeta{APIVersion: appsv1.SchemeGroupVersion.String(), Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        dcd.Name,
			Namespace:   dcd.Namespace,
			Labels:      workloadLabels(dcd),
			Annotations: workloadAnnotations(dcd),
		},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: selector(dcd)},
			Strategy: rolloutStrategy(template.Spec),
			// See progressDeadline.
			ProgressDeadlineSeconds: progressDeadline(template.Spec),
			Template:                template,
		},
	}, nil
}

// podTemplate is the pod of one instance of a component (of one node of
// it, for multinode): the service spec laid over the runtime's contract.
// Errors as for Deployment.
func podTemplate(dcd *v1alpha1.DynamoComponentDeployment, graphPVCs []v1alpha1.GraphPVC, o Options) (corev1.PodTemplateSpec, error) {
	spec := &dcd.Spec.DynamoComponentDeploymentSharedSpec
	specPath := field.NewPath("spec")
	pod, errs := podSpec(dcd, graphPVCs, o, specPath)
	pod, mergeErr := mergeExtraPodSpec(pod, spec.ExtraPodSpec, specPath.Child("extraPodSpec"))
	if mergeErr != nil {
		errs = append(errs, mergeErr)
	} else {
		errs = append(errs, completeMerged(spec, &pod, specPath)...)
		if main := findContainer(pod.Containers, MainContainerName); usesEPPConfig(spec) && main != nil &&
			len(main.Command) == 0 && len(main.Args) == 0 {
			// The picker's image has its entrypoint; these are its flags.
			main.Args = eppArgs(dcd)
		}
		applyEngineFeatures(dcd, &pod)
	}
	reqs, topoErrs := topologyRequirements(dcd, o)
	errs = append(errs, topoErrs...)
	configHash, err := eppConfigHash(dcd)
	if err != nil {
		errs = append(errs, field.Invalid(specPath.Child("eppConfig", "config"), "(inline configuration)", err.Error()))
	}
	if len(errs) > 0 {
		return corev1.PodTemplateSpec{}, errs.ToAggregate()
	}
	placeInDomains(&pod, dcd, reqs)
	var extraAnnotations map[string]string
	if m := spec.ExtraPodMetadata; m != nil {
		extraAnnotations = m.Annotations
	}
	var operatorAnnotations map[string]string
	if configHash != "" {
		operatorAnnotations = map[string]string{AnnotationEPPConfigHash: configHash}
	}
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{
			Labels:      podLabels(dcd),
			Annotations: merged(spec.Annotations, extraAnnotations, operatorAnnotations),
		},
		Spec: pod,
	}, nil
}

// podSpec is the component's pod spec before its extraPodSpec: the main
// container with the runtime's environment, ports, resources, storage and
// default probes, and the frontend sidecar.
func podSpec(dcd *v1alpha1.DynamoComponentDeployment, graphPVCs []v1alpha1.GraphPVC, o Options, specPath *field.Path) (corev1.PodSpec, field.ErrorList) {
	spec := &dcd.Spec.DynamoComponentDeploymentSharedSpec
	var errs field.ErrorList
	env := runtimeEnv(dcd, o)
	resources, resErrs := resourceRequirements(spec.Resources, specPath.Child("resources"))
	errs = append(errs, resErrs...)
	volumes, mounts, volErrs := podStorage(spec, graphPVCs, specPath)
	errs = append(errs, volErrs...)

	c := specContract(spec)
	main := corev1.Container{
		Name:      MainContainerName,
		Ports:     containerPorts(spec),
		Env:       MergeEnv(env, spec.Envs),
		EnvFrom:   secretEnvFrom(spec.EnvFromSecret),
		Resources: resources,
		// The runtime's default probes, then the service's probes over
		// them; extraPodSpec.mainContainer's probes go over both.
		StartupProbe:   c.startup.DeepCopy(),
		LivenessProbe:  probes.Overlay(c.liveness, spec.LivenessProbe),
		ReadinessProbe: probes.Overlay(c.readiness, spec.ReadinessProbe),
		VolumeMounts:   mounts,
	}
	if dcd.Annotations[AnnotationKubeDiscoveryMode] == KubeDiscoveryModeContainer {
		// Each container registers on its own, under its name.
		main.Env = MergeEnv(main.Env, []corev1.EnvVar{
			{Name: "CONTAINER_NAME", Value: MainContainerName},
			{Name: "DYN_KUBE_DISCOVERY_MODE", Value: KubeDiscoveryModeContainer},
		})
	}
	pod := corev1.PodSpec{
		Containers:                    []corev1.Container{main},
		Volumes:                       volumes,
		TerminationGracePeriodSeconds: ptr.To[int64](terminationGracePeriodSeconds),
		SecurityContext:               &corev1.PodSecurityContext{FSGroup: ptr.To[int64](podFSGroup)},
	}
	if discoveryBackend(dcd) == DiscoveryKubernetes {
		pod.ServiceAccountName = DiscoveryServiceAccountName(graphName(dcd))
	}
	if spec.FrontendSidecar != nil {
		pod.Containers = append(pod.Containers, sidecarContainer(spec.FrontendSidecar, env))
	}
	eppPod(dcd, &pod)
	return pod, errs
}

// completeMerged checks the pod spec merged with extraPodSpec has its
// images, and completes its main container: the system port its probes
// follow, and the type's default process.
func completeMerged(spec *v1alpha1.DynamoComponentDeploymentSharedSpec, pod *corev1.PodSpec, specPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if c := findContainer(pod.Containers, MainContainerName); c == nil || c.Image == "" {
		errs = append(errs, field.Required(specPath.Child("extraPodSpec", "mainContainer", "image"),
			"set the service's image"))
	}
	if c := findContainer(pod.Containers, SidecarContainerName); spec.FrontendSidecar != nil && (c == nil || c.Image == "") {
		errs = append(errs, field.Required(specPath.Child("frontendSidecar", "image"),
			"set the frontend sidecar's image"))
	}
	main := findContainer(pod.Containers, MainContainerName)
	followSystemPort(main)
	errs = append(errs, handlerlessProbes(spec, main, specPath)...)
	// The type's default process, only when the user chose none: a
	// default command beside a user's args (or the reverse) could
	// run something nobody wrote.
	if c := contractOf(spec.ComponentType); main != nil && len(main.Command) == 0 && len(main.Args) == 0 && c.command != nil {
		main.Command, main.Args = slices.Clone(c.command), slices.Clone(c.args)
	}
	return errs
}

// podLabels are the labels of the component's pods.
func podLabels(dcd *v1alpha1.DynamoComponentDeployment) map[string]string {
	spec := &dcd.Spec.DynamoComponentDeploymentSharedSpec
	var extraLabels map[string]string
	if m := spec.ExtraPodMetadata; m != nil {
		extraLabels = m.Labels
	}
	labels := map[string]string{}
	if g := dcd.Labels[LabelGraphName]; g != "" {
		labels[LabelGraphName] = g
	}
	if spec.ComponentType != "" {
		labels[LabelComponentType] = string(spec.ComponentType)
	}
	if spec.SubComponentType != "" {
		labels[LabelSubComponentType] = spec.SubComponentType
	}
	// The runtime's labels win over the user's: PodMonitors and discovery
	// select on them. The selector label comes last: a user's value would
	// orphan the pods.
	return merged(labels, spec.Labels, extraLabels, contractLabels(dcd), selector(dcd))
}

// rolloutStrategy never lowers serving capacity: no old pod goes before its
// replacement is ready (maxUnavailable 0), which the readiness probe makes
// mean "model loaded". A pod that asks for GPUs surges one at a time: each
// surge pod needs a spare instance's worth of GPUs, and 25% of a large pool
// would rarely fit; a rollout without a spare GPU waits, Pending, and the
// graph says why, rather than taking a serving worker away. Other
// components surge 25%, Kubernetes' default, as CPU is cheap.
// progressDeadline gives a rollout Kubernetes' default 600 s on top of the
// longest startup probe's budget (initial delay + period × failure
// threshold): a pod still within it is loading its model, not stuck, and
// the Deployment must not be declared ProgressDeadlineExceeded (which the
// component reports as Stalled, kstatus as Failed) while it is. Real
// blockers (unschedulable, image pull, crash loop) are named in the
// component's conditions at once, whatever the deadline. nil (the default)
// when no container has a startup probe.
func progressDeadline(pod corev1.PodSpec) *int32 {
	var budget int32
	for _, c := range pod.Containers {
		if p := c.StartupProbe; p != nil {
			period, failure := p.PeriodSeconds, p.FailureThreshold
			if period == 0 {
				period = 10 // the API server's defaults
			}
			if failure == 0 {
				failure = 3
			}
			budget = max(budget, p.InitialDelaySeconds+period*failure)
		}
	}
	if budget == 0 {
		return nil
	}
	return ptr.To(600 + budget)
}

func rolloutStrategy(pod corev1.PodSpec) appsv1.DeploymentStrategy {
	surge := intstr.FromString("25%")
	if requestsGPUs(pod) || usesGMS(pod) {
		surge = intstr.FromInt32(1)
	}
	zero := intstr.FromInt32(0)
	return appsv1.DeploymentStrategy{
		Type:          appsv1.RollingUpdateDeploymentStrategyType,
		RollingUpdate: &appsv1.RollingUpdateDeployment{MaxUnavailable: &zero, MaxSurge: &surge},
	}
}

// requestsGPUs reports whether a container of the pod asks for an extended
// resource with "gpu" in its name (nvidia.com/gpu, amd.com/gpu, MIG slices).
func requestsGPUs(pod corev1.PodSpec) bool {
	for _, c := range pod.Containers {
		for _, list := range []corev1.ResourceList{c.Resources.Limits, c.Resources.Requests} {
			for name, q := range list {
				if strings.Contains(string(name), "gpu") && !q.IsZero() {
					return true
				}
			}
		}
	}
	return false
}

// handlerlessProbes reports the main container's probes that have no
// handler: a user's probe that only adjusts timings, on a component type
// without a default probe to adjust. The API server would refuse the pod
// template; naming the field the user wrote is clearer.
func handlerlessProbes(spec *v1alpha1.DynamoComponentDeploymentSharedSpec, main *corev1.Container, path *field.Path) field.ErrorList {
	if main == nil {
		return nil
	}
	var user *corev1.Container
	if spec.ExtraPodSpec != nil {
		user = spec.ExtraPodSpec.MainContainer
	}
	var errs field.ErrorList
	check := func(p *corev1.Probe, name string) {
		if p == nil || probes.HasHandler(p) {
			return
		}
		// The service's own livenessProbe and readinessProbe, unless
		// mainContainer's went over them.
		where := path.Child(name)
		if user != nil && userProbe(user, name) != nil {
			where = path.Child("extraPodSpec", "mainContainer", name)
		}
		errs = append(errs, field.Invalid(where, field.OmitValueType{}, fmt.Sprintf(
			"a probe without a handler (httpGet, tcpSocket, exec or grpc) can only adjust the default probe, "+
				"and componentType %q has no default %s: give it a handler", spec.ComponentType, name)))
	}
	check(main.StartupProbe, "startupProbe")
	check(main.LivenessProbe, "livenessProbe")
	check(main.ReadinessProbe, "readinessProbe")
	return errs
}

func userProbe(c *corev1.Container, name string) *corev1.Probe {
	switch name {
	case "startupProbe":
		return c.StartupProbe
	case "livenessProbe":
		return c.LivenessProbe
	}
	return c.ReadinessProbe
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
