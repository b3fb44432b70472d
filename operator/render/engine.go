package render

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

// The engine features of a worker: the GPU memory service (gpuMemoryService)
// and failover. Both are rendered as Dynamo's operator renders them.
//
// gpuMemoryService: the main container's GPUs come from a DRA claim instead
// of the GPU extended resource, through a ResourceClaimTemplate
// <component>-gpu (GMSResourceClaimTemplate) of DeviceClass gpu.nvidia.com
// (or resources.limits.gpuType when set) for the service's GPU count, shared
// by every container of the pod. A sidecar, gms-weights (an init container
// that keeps running), runs two GPU memory service processes per GPU (tags
// weights and kv_cache) whose sockets it creates on an emptyDir gms-shared
// mounted at /shared; its startup probe waits for those sockets, so the
// engine starts only once they are there. The engine gets the same mount and
// TMPDIR=/shared. The GPU taint's toleration is added back: DRA bypasses
// the device plugin that otherwise adds it.
//
// failover: the main container (with the GPU memory service already laid
// over it) becomes two engines, engine-0 and engine-1, sharing the GPUs; the
// one holding the lock /shared/failover.lock serves, the other waits loaded
// and takes over when the first dies. Each has its own system port (9090,
// 9091, named system-0 and system-1, which its probes follow), ENGINE_ID,
// CONTAINER_NAME and a starting health status notready; vLLM engines also
// run in GMS shadow mode with their own NIXL side channel port (5600+id) and
// torch.distributed master port (29500, 29600). Only vLLM is supported, as
// in Dynamo.

const (
	gmsVolumeName = "gms-shared"
	gmsMountPath  = "/shared"
	// gmsClaimName is the pod's claim of the shared GPUs.
	gmsClaimName = "shared-gpu"
	// GMSDefaultDeviceClass is the DeviceClass of NVIDIA's DRA driver.
	GMSDefaultDeviceClass = "gpu.nvidia.com"
	// GMSContainerName is the GPU memory service's sidecar.
	GMSContainerName = "gms-weights"
	// gmsStartupSeconds is how long the sidecar may take to open its
	// sockets, probed every gmsProbePeriod seconds.
	gmsStartupSeconds = 120
	gmsProbePeriod    = 2

	// AnnotationKubeDiscoveryMode "container" makes each container of a
	// pod register on its own in Kubernetes discovery (failover's engines).
	AnnotationKubeDiscoveryMode = "nvidia.com/dynamo-kube-discovery-mode"
	KubeDiscoveryModeContainer  = "container"

	failoverEngines    = 2
	failoverLock       = gmsMountPath + "/failover.lock"
	vllmNIXLSideBase   = 5600
	vllmMasterPortNum  = 29500 // vllmMasterPort, vLLM's default
	vllmMasterStride   = 100
	vllmMasterPortFlag = "--master-port"
)

// EngineFeatures says what of a service's gpuMemoryService and failover is
// rendered, for a graph of backend framework: gms and failover are rendered
// when true; notRendered says, per field, why one that is set is not.
func EngineFeatures(spec *v1alpha1.DynamoComponentDeploymentSharedSpec, framework v1alpha1.BackendFramework) (gms, failover bool, notRendered map[string]string) {
	notRendered = map[string]string{}
	gmsSet := spec.GPUMemoryService != nil && spec.GPUMemoryService.Enabled
	failoverSet := spec.Failover != nil && spec.Failover.Enabled
	if gmsSet {
		if specGPUs(spec) < 1 {
			notRendered["gpuMemoryService"] = "the service asks for no GPUs to share: set resources.limits.gpu"
		} else {
			gms = true
		}
	}
	if !failoverSet {
		return gms, false, notRendered
	}
	var main *corev1.Container
	if spec.ExtraPodSpec != nil {
		main = spec.ExtraPodSpec.MainContainer
	}
	switch {
	case !gms:
		notRendered["failover"] = "the standby engine shares the active one's GPUs through the GPU memory service: enable gpuMemoryService too"
	case spec.Multinode != nil && spec.Multinode.NodeCount > 1:
		notRendered["failover"] = "not supported with multinode, as in Dynamo"
	case backendOf(framework, main) != v1alpha1.BackendFrameworkVLLM:
		notRendered["failover"] = "supported for vLLM only, as in Dynamo: set backendFramework vllm or run python3 -m dynamo.vllm"
	default:
		failover = true
	}
	return gms, failover, notRendered
}

// backendOf is the backend of a service: framework when set, else the
// Dynamo worker module its main container runs; empty when neither says.
func backendOf(framework v1alpha1.BackendFramework, main *corev1.Container) v1alpha1.BackendFramework {
	if framework != "" || main == nil {
		return framework
	}
	words := commandLine(main)
	for _, l := range launchers {
		if slices.Contains(words, l.module) {
			return l.framework
		}
	}
	return ""
}

// specGPUs is the GPU count a service asks for: resources.limits.gpu, else
// requests.gpu, else its mainContainer's GPU resource.
func specGPUs(spec *v1alpha1.DynamoComponentDeploymentSharedSpec) int64 {
	if r := spec.Resources; r != nil {
		for _, item := range []*v1alpha1.ResourceItem{r.Limits, r.Requests} {
			if item != nil && item.GPU != "" {
				n, err := strconv.ParseInt(item.GPU, 10, 64)
				if err != nil {
					return 0
				}
				return n
			}
		}
	}
	if spec.ExtraPodSpec != nil {
		return gpusOf(spec.ExtraPodSpec.MainContainer)
	}
	return 0
}

// GMSDeviceClass is the DeviceClass the shared GPUs are claimed from.
func GMSDeviceClass(spec *v1alpha1.DynamoComponentDeploymentSharedSpec) string {
	if r := spec.Resources; r != nil && r.Limits != nil && r.Limits.GPUType != "" && r.Limits.GPUType != v1alpha1.DefaultGPUType {
		return r.Limits.GPUType
	}
	return GMSDefaultDeviceClass
}

// gpuResourceName is the extended resource the service's GPUs are counted in.
func gpuResourceName(spec *v1alpha1.DynamoComponentDeploymentSharedSpec) corev1.ResourceName {
	if r := spec.Resources; r != nil && r.Limits != nil && r.Limits.GPUType != "" {
		return corev1.ResourceName(r.Limits.GPUType)
	}
	return v1alpha1.DefaultGPUType
}

// GMSResourceClaimTemplateName is the name of the ResourceClaimTemplate of
// a component's shared GPUs.
func GMSResourceClaimTemplateName(componentName string) string {
	return componentName + "-gpu"
}

// GMSResourceClaimTemplate is the template of the claim through which every
// container of the component's pods shares its GPUs; nil when the component
// renders no GPU memory service.
func GMSResourceClaimTemplate(dcd *v1alpha1.DynamoComponentDeployment) *resourcev1.ResourceClaimTemplate {
	spec := &dcd.Spec.DynamoComponentDeploymentSharedSpec
	if gms, _, _ := EngineFeatures(spec, dcd.Spec.BackendFramework); !gms {
		return nil
	}
	return &resourcev1.ResourceClaimTemplate{
		TypeMeta: metav1.TypeMeta{APIVersion: resourcev1.SchemeGroupVersion.String(), Kind: "ResourceClaimTemplate"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      GMSResourceClaimTemplateName(dcd.Name),
			Namespace: dcd.Namespace,
			Labels:    workloadLabels(dcd),
		},
		Spec: resourcev1.ResourceClaimTemplateSpec{
			Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
				Requests: []resourcev1.DeviceRequest{{
					Name: "gpus",
					Exactly: &resourcev1.ExactDeviceRequest{
						DeviceClassName: GMSDeviceClass(spec),
						AllocationMode:  resourcev1.DeviceAllocationModeExactCount,
						Count:           specGPUs(spec),
					},
				}},
			}},
		},
	}
}

// applyEngineFeatures lays the GPU memory service, then failover, over the
// merged pod of a component (see the top of this file).
func applyEngineFeatures(dcd *v1alpha1.DynamoComponentDeployment, pod *corev1.PodSpec) {
	spec := &dcd.Spec.DynamoComponentDeploymentSharedSpec
	gms, failover, _ := EngineFeatures(spec, dcd.Spec.BackendFramework)
	main := findContainer(pod.Containers, MainContainerName)
	if main == nil {
		return
	}
	if gms {
		applyGMS(pod, main, spec, GMSResourceClaimTemplateName(dcd.Name))
	}
	if failover {
		applyFailover(pod)
	}
}

func applyGMS(pod *corev1.PodSpec, main *corev1.Container, spec *v1alpha1.DynamoComponentDeploymentSharedSpec, template string) {
	gpu := gpuResourceName(spec)
	delete(main.Resources.Limits, gpu)
	delete(main.Resources.Requests, gpu)
	main.Resources.Claims = mergeClaims(main.Resources.Claims, []corev1.ResourceClaim{{Name: gmsClaimName}})
	mount := corev1.VolumeMount{Name: gmsVolumeName, MountPath: gmsMountPath}
	main.VolumeMounts = append(main.VolumeMounts, mount)
	main.Env = MergeEnv(main.Env, []corev1.EnvVar{{Name: "TMPDIR", Value: gmsMountPath}})

	gpus := specGPUs(spec)
	pod.InitContainers = append(pod.InitContainers, corev1.Container{
		Name:          GMSContainerName,
		Image:         main.Image,
		Command:       []string{"bash", "-c"},
		Args:          []string{gmsScript(gpus)},
		RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways),
		Env:           []corev1.EnvVar{{Name: "TMPDIR", Value: gmsMountPath}},
		VolumeMounts:  []corev1.VolumeMount{mount},
		// Two sockets per GPU (weights and kv_cache) once it serves.
		StartupProbe: &corev1.Probe{
			ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{
				"sh", "-c", fmt.Sprintf("test $(ls %s/gms_*.sock 2>/dev/null | wc -l) -ge %d", gmsMountPath, 2*gpus),
			}}},
			PeriodSeconds:    gmsProbePeriod,
			FailureThreshold: gmsStartupSeconds / gmsProbePeriod,
		},
		Resources: corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: gmsClaimName}}},
	})
	pod.Volumes = append(pod.Volumes, corev1.Volume{Name: gmsVolumeName,
		VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	pod.Tolerations = append(pod.Tolerations, corev1.Toleration{
		Key: v1alpha1.DefaultGPUType, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule,
	})
	pod.ResourceClaims = append(pod.ResourceClaims, corev1.PodResourceClaim{
		Name: gmsClaimName, ResourceClaimTemplateName: ptr.To(template),
	})
}

// gmsScript runs the GPU memory service's two processes per GPU and ends
// (taking the others with it) when any of them ends, so that the kubelet
// restarts the sidecar whole.
func gmsScript(gpus int64) string {
	devices := make([]string, gpus)
	for i := range devices {
		devices[i] = strconv.Itoa(i)
	}
	return strings.Join([]string{
		"trap 'kill 0 2>/dev/null || true' EXIT",
		"for dev in " + strings.Join(devices, " ") + "; do",
		"  for tag in weights kv_cache; do",
		`    python3 -m gpu_memory_service --device "$dev" --tag "$tag" &`,
		`    echo "GPU memory service device=$dev tag=$tag pid=$!"`,
		"  done",
		"done",
		"wait -n",
		`echo "a GPU memory service process ended: stopping the others"`,
	}, "\n")
}

// usesGMS says whether the pod claims its GPUs through the GPU memory
// service: it asks for no GPU resource, yet its engines hold GPUs.
func usesGMS(pod corev1.PodSpec) bool {
	return slices.ContainsFunc(pod.ResourceClaims, func(c corev1.PodResourceClaim) bool { return c.Name == gmsClaimName })
}

// failoverEnvDropped are the main container's variables each engine sets
// to its own value, or must not inherit.
var failoverEnvDropped = []string{
	"DYN_SYSTEM_USE_ENDPOINT_HEALTH_STATUS", "DYN_SYSTEM_PORT", "DYN_SYSTEM_ENABLED",
	"DYN_HEALTH_CHECK_ENABLED", "CONTAINER_NAME",
}

// applyFailover replaces the main container by the active and the standby
// engine; the other containers (a frontend sidecar) stay after them.
func applyFailover(pod *corev1.PodSpec) {
	i := slices.IndexFunc(pod.Containers, func(c corev1.Container) bool { return c.Name == MainContainerName })
	main := pod.Containers[i]
	others := slices.Delete(slices.Clone(pod.Containers), i, i+1)
	engines := make([]corev1.Container, 0, failoverEngines+len(others))
	for id := range failoverEngines {
		engines = append(engines, failoverEngine(main, id))
	}
	pod.Containers = append(engines, others...)
}

// failoverEngineName is the container of the engine id (0 starts active).
func failoverEngineName(id int) string { return fmt.Sprintf("engine-%d", id) }

func failoverEngine(main corev1.Container, id int) corev1.Container {
	e := *main.DeepCopy()
	e.Name = failoverEngineName(id)
	port := SystemPort + id
	portName := fmt.Sprintf("%s-%d", SystemPortName, id)
	e.Ports = []corev1.ContainerPort{{Name: portName, ContainerPort: int32(port), Protocol: corev1.ProtocolTCP}}
	e.Env = slices.DeleteFunc(e.Env, func(v corev1.EnvVar) bool { return slices.Contains(failoverEnvDropped, v.Name) })
	e.Env = append(e.Env,
		corev1.EnvVar{Name: "ENGINE_ID", Value: strconv.Itoa(id)},
		corev1.EnvVar{Name: "CONTAINER_NAME", Value: e.Name},
		corev1.EnvVar{Name: "FAILOVER_LOCK_PATH", Value: failoverLock},
		// The standby is not ready until it holds the lock and serves.
		corev1.EnvVar{Name: "DYN_SYSTEM_STARTING_HEALTH_STATUS", Value: "notready"},
		corev1.EnvVar{Name: "DYN_SYSTEM_PORT", Value: strconv.Itoa(port)},
		corev1.EnvVar{Name: "DYN_SYSTEM_ENABLED", Value: "true"},
		// vLLM: shadow mode, and ports of their own in the pod's one
		// network namespace.
		corev1.EnvVar{Name: "DYN_VLLM_GMS_SHADOW_MODE", Value: "true"},
		corev1.EnvVar{Name: "VLLM_NIXL_SIDE_CHANNEL_PORT", Value: strconv.Itoa(vllmNIXLSideBase + id)},
	)
	for _, p := range []*corev1.Probe{e.StartupProbe, e.LivenessProbe, e.ReadinessProbe} {
		if p != nil && p.HTTPGet != nil {
			p.HTTPGet.Port = intstr.FromString(portName)
		}
	}
	if id > 0 && !shiftFlag(&e, vllmMasterPortFlag, id*vllmMasterStride) {
		e.Args = append(e.Args, vllmMasterPortFlag, strconv.Itoa(vllmMasterPortNum+id*vllmMasterStride))
	}
	return e
}

// shiftFlag adds offset to the numeric value of flag (as "--flag N", a
// word of args, or inside a shell string of args or command); false when
// the container does not set flag.
func shiftFlag(c *corev1.Container, flag string, offset int) bool {
	for i := range c.Args {
		if c.Args[i] == flag && i+1 < len(c.Args) {
			if n, err := strconv.Atoi(c.Args[i+1]); err == nil {
				c.Args[i+1] = strconv.Itoa(n + offset)
				return true
			}
		}
	}
	for _, words := range [][]string{c.Args, c.Command} {
		for i, s := range words {
			if shifted, ok := shiftInString(s, flag, offset); ok {
				words[i] = shifted
				return true
			}
		}
	}
	return false
}

func shiftInString(s, flag string, offset int) (string, bool) {
	at := strings.Index(s, flag+" ")
	if at < 0 {
		return s, false
	}
	start := at + len(flag) + 1
	end := start
	for end < len(s) && s[end] >= '0' && s[end] <= '9' {
		end++
	}
	n, err := strconv.Atoi(s[start:end])
	if err != nil {
		return s, false
	}
	return s[:start] + strconv.Itoa(n+offset) + s[end:], true
}

// EngineFieldsNotIn names the fields of the component's spec that this
// version renders into its pods (gpuMemoryService, failover, eppConfig)
// and that pod, another version's rendering kept until the service's next
// spec change, lacks: a version that did not render them yet leaves none of
// their marks (the claim, the engines, the picker's configuration volume).
func EngineFieldsNotIn(dcd *v1alpha1.DynamoComponentDeployment, pod *corev1.PodSpec) []string {
	spec := &dcd.Spec.DynamoComponentDeploymentSharedSpec
	gms, failover, _ := EngineFeatures(spec, dcd.Spec.BackendFramework)
	var out []string
	if gms && !usesGMS(*pod) {
		out = append(out, "gpuMemoryService")
	}
	if failover && findContainer(pod.Containers, failoverEngineName(0)) == nil {
		out = append(out, "failover")
	}
	if usesEPPConfig(spec) && !slices.ContainsFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == eppConfigVolume }) {
		out = append(out, "eppConfig")
	}
	return out
}
