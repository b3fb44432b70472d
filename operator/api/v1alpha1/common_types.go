package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
)

// ComponentType is the role a service plays in an inference graph. It is a
// free-form string, as in Dynamo's own CRD: the values below get the pod
// contract of Dynamo's runtime for that role, and any other value (such as
// `main`, which Dynamo's planner tests and recipes use) is accepted and
// rendered as a generic component.
type ComponentType string

const (
	ComponentTypeFrontend ComponentType = "frontend"
	ComponentTypeWorker   ComponentType = "worker"
	ComponentTypePrefill  ComponentType = "prefill"
	ComponentTypeDecode   ComponentType = "decode"
	ComponentTypePlanner  ComponentType = "planner"
	ComponentTypeEPP      ComponentType = "epp"
	ComponentTypeDefault  ComponentType = "default"
)

// ComponentTypes are the component types Dynamo gives a meaning; any other
// value is accepted and runs as a generic component.
var ComponentTypes = []ComponentType{
	ComponentTypeFrontend, ComponentTypeWorker, ComponentTypePrefill, ComponentTypeDecode,
	ComponentTypePlanner, ComponentTypeEPP, ComponentTypeDefault,
}

// BackendFramework is the inference engine a graph runs.
// +kubebuilder:validation:Enum=sglang;vllm;trtllm
type BackendFramework string

const (
	BackendFrameworkSGLang BackendFramework = "sglang"
	BackendFrameworkVLLM   BackendFramework = "vllm"
	BackendFrameworkTRTLLM BackendFramework = "trtllm"
)

// DefaultGPUType is the extended resource a GPU count is requested as when
// the service does not name another one.
const DefaultGPUType = "nvidia.com/gpu"

// Resources are a service's compute requests and limits in Dynamo's short form.
type Resources struct {
	// Requests are the minimum resources the main container asks for.
	// +optional
	Requests *ResourceItem `json:"requests,omitempty"`
	// Limits are the maximum resources the main container may use. A GPU
	// count is always applied as a limit of gpuType.
	// +optional
	Limits *ResourceItem `json:"limits,omitempty"`
	// Claims name dynamic resource claims of the pod the main container uses.
	// +optional
	// +listType=map
	// +listMapKey=name
	Claims []corev1.ResourceClaim `json:"claims,omitempty"`
}

// ResourceItem is one side (requests or limits) of Resources.
type ResourceItem struct {
	// CPU as a Kubernetes quantity, for example "500m" or "10".
	// +optional
	CPU string `json:"cpu,omitempty"`
	// Memory as a Kubernetes quantity, for example "20Gi".
	// +optional
	Memory string `json:"memory,omitempty"`
	// GPU is the number of GPUs, as a whole number in a string ("1").
	// +optional
	GPU string `json:"gpu,omitempty"`
	// GPUType is the extended resource name GPUs are requested as.
	// Defaults to nvidia.com/gpu.
	// +optional
	GPUType string `json:"gpuType,omitempty"`
	// Custom holds any other resource by its Kubernetes name, for example
	// ephemeral-storage.
	// +optional
	Custom map[string]string `json:"custom,omitempty"`
}

// ServicePVC is the per-service claim of the older documented form: a claim,
// created by the operator when create is true, mounted at mountPath.
//
// +kubebuilder:validation:XValidation:rule="!has(self.create) || !self.create || (has(self.name) && has(self.size))",message="create: true needs name and size"
type ServicePVC struct {
	// Create makes the operator create the claim. It is kept when the graph is
	// deleted, because model caches are expensive to fill again.
	// +optional
	Create *bool `json:"create,omitempty"`
	// Name of the claim.
	// +optional
	Name *string `json:"name,omitempty"`
	// StorageClass of a created claim; empty uses the cluster default.
	// +optional
	StorageClass string `json:"storageClass,omitempty"`
	// Size of a created claim.
	// +optional
	Size *resource.Quantity `json:"size,omitempty"`
	// VolumeAccessMode of a created claim; defaults to ReadWriteOnce.
	// +optional
	// +kubebuilder:validation:Enum=ReadWriteOnce;ReadOnlyMany;ReadWriteMany;ReadWriteOncePod
	VolumeAccessMode corev1.PersistentVolumeAccessMode `json:"volumeAccessMode,omitempty"`
	// MountPath is where the claim is mounted in the main container.
	// +optional
	MountPath *string `json:"mountPath,omitempty"`
}

// VolumeMount mounts one of the graph's spec.pvcs into a service.
type VolumeMount struct {
	// Name of an entry of spec.pvcs.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// MountPoint is the path in the main container.
	// +optional
	MountPoint string `json:"mountPoint,omitempty"`
	// UseAsCompilationCache marks the volume as the backend's compilation cache.
	// +optional
	UseAsCompilationCache bool `json:"useAsCompilationCache,omitempty"`
}

// SharedMemorySpec sizes the memory-backed /dev/shm of a service's pods.
type SharedMemorySpec struct {
	// Disabled turns the /dev/shm volume off.
	// +optional
	Disabled bool `json:"disabled,omitempty"`
	// Size of /dev/shm; defaults to 8Gi.
	// +optional
	Size *resource.Quantity `json:"size,omitempty"`
}

// IngressTLSSpec names the Secret holding an Ingress certificate.
type IngressTLSSpec struct {
	// +optional
	SecretName string `json:"secretName,omitempty"`
}

// IngressSpec exposes a frontend outside the cluster.
type IngressSpec struct {
	// Enabled creates an Ingress for the service.
	// +optional
	Enabled bool `json:"enabled,omitempty"`
	// Host is the full host name; when empty it is built from hostPrefix, the
	// graph name and hostSuffix.
	// +optional
	Host string `json:"host,omitempty"`
	// +optional
	HostPrefix *string `json:"hostPrefix,omitempty"`
	// +optional
	HostSuffix *string `json:"hostSuffix,omitempty"`
	// UseVirtualService asks for an Istio VirtualService instead of an Ingress.
	// +optional
	UseVirtualService bool `json:"useVirtualService,omitempty"`
	// +optional
	VirtualServiceGateway *string `json:"virtualServiceGateway,omitempty"`
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// +optional
	TLS *IngressTLSSpec `json:"tls,omitempty"`
	// +optional
	IngressControllerClassName *string `json:"ingressControllerClassName,omitempty"`
}

// ExtraPodMetadata is added to the metadata of a service's pods.
type ExtraPodMetadata struct {
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
}

// ExtraPodSpec is merged into the generated pod: its PodSpec fields into the
// pod, mainContainer into the main container.
type ExtraPodSpec struct {
	// +optional
	*corev1.PodSpec `json:",inline"`
	// MainContainer is merged into the generated main container: image,
	// command, args, workingDir, env, ports, resources and the rest.
	// +optional
	MainContainer *corev1.Container `json:"mainContainer,omitempty"`
}

// ExternalService selects a Deployment outside the graph a service depends on.
type ExternalService struct {
	DeploymentSelectorKey   string `json:"deploymentSelectorKey"`
	DeploymentSelectorValue string `json:"deploymentSelectorValue"`
}

// MultinodeSpec spreads one service instance over several nodes.
type MultinodeSpec struct {
	// NodeCount is the number of nodes one instance spans.
	// +kubebuilder:validation:Minimum=2
	NodeCount int32 `json:"nodeCount"`
}

// ModelReference points a service at the model it serves.
type ModelReference struct {
	// Name is the base model name, for example Qwen/Qwen3-0.6B.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// +optional
	Revision string `json:"revision,omitempty"`
}

// FrontendSidecar runs a Dynamo frontend next to a worker in the same pod.
type FrontendSidecar struct {
	// +optional
	Image string `json:"image,omitempty"`
	// +optional
	Command []string `json:"command,omitempty"`
	// +optional
	Args []string `json:"args,omitempty"`
	// +optional
	Envs []corev1.EnvVar `json:"envs,omitempty"`
	// +optional
	EnvFromSecret *string `json:"envFromSecret,omitempty"`
}

// EPPConfig configures the endpoint picker of the Gateway API inference
// extension. The operator passes it through untouched.
type EPPConfig struct {
	// ConfigMapRef names a key of a ConfigMap holding the configuration.
	// +optional
	ConfigMapRef *corev1.ConfigMapKeySelector `json:"configMapRef,omitempty"`
	// Config is the endpoint picker configuration inline.
	// +optional
	Config *runtime.RawExtension `json:"config,omitempty"`
}

// EnabledSpec is a feature switch.
type EnabledSpec struct {
	// +optional
	Enabled bool `json:"enabled,omitempty"`
}

// Autoscaling is accepted for compatibility and has no effect: scale a
// service through its replicas or the DCD scale subresource instead.
type Autoscaling struct {
	// +optional
	Enabled bool `json:"enabled,omitempty"`
	// +optional
	MinReplicas int32 `json:"minReplicas,omitempty"`
	// +optional
	MaxReplicas int32 `json:"maxReplicas,omitempty"`
	// +optional
	Behavior *runtime.RawExtension `json:"behavior,omitempty"`
	// +optional
	Metrics []runtime.RawExtension `json:"metrics,omitempty"`
}
