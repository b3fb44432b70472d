// Package v1beta1 holds the nvidia.com/v1beta1 API of DynamoGraphDeployment
// and DynamoComponentDeployment, the shape Dynamo's current releases document
// and write: a graph's components are a list keyed by name, each with a type
// and a native pod template whose container `main` receives the operator's
// defaults, in place of v1alpha1's map of services and its ten per-service
// pod fields. Field names, types, defaults and validation rules follow
// Dynamo's v1beta1 API, so its users' manifests apply unchanged.
//
// # Served, not stored
//
// nvidia.com/v1alpha1 stays the version the API server stores and the
// version the operator itself reads and writes; v1beta1 objects are
// converted to and from it by the operator's conversion webhook (the
// v1alpha1 kinds are the conversion hub, the kinds here implement
// ConvertTo/ConvertFrom). Keeping v1alpha1 stored means the operator's own
// watches and writes, at any scale, never wait on a conversion call, and
// v1alpha1 clients keep working while no conversion endpoint answers; only
// requests made in v1beta1 need the webhook. Fields one version has and the
// other lacks survive a round trip in annotations under the nvidia.com/
// prefix.
//
// # Conversion, field by field
//
// A v1alpha1 service and a v1beta1 component convert as Dynamo's own
// conversion does, so that a graph written in either version renders the
// children Dynamo renders for it (the pod template merged into the
// generated pod by container name, the user's values winning):
//
//	v1alpha1 (graph)                     v1beta1 (graph)
//	spec.services (map)                  spec.components (list, sorted by name; name = map key)
//	spec.envs                            spec.env
//	spec.backendFramework, annotations,  the same
//	labels
//	spec.pvcs                            - (saved); a claim a compilationCache names is added back
//	spec.dynamoComponent                 - (saved)
//	spec.restart                         the same
//	spec.topologyConstraint              spec.topologyConstraint (topologyProfile is
//	{topologyProfile, packDomain}        clusterTopologyName)
//	-                                    spec.providerOverride, priorityClassName,
//	                                     experimental (saved)
//	status.services[name]                status.components[name] (componentName is the last of
//	                                     componentNames)
//	status.observedGeneration, state,    the same
//	conditions, restart
//	status.rollingUpdate.updatedServices status.rollingUpdate.updatedComponents
//	-                                    status.checkpoints, placement (saved)
//
//	v1alpha1 (service)                   v1beta1 (component)
//	componentType worker +               type prefill / decode
//	subComponentType prefill / decode
//	componentType (any other)            type, as written; another subComponentType is saved
//	replicas, multinode, modelRef,       the same
//	eppConfig
//	sharedMemory {disabled}              sharedMemorySize "0"
//	sharedMemory {size}                  sharedMemorySize
//	volumeMounts, first with             compilationCache {pvcName, mountPath}
//	useAsCompilationCache
//	volumeMounts, the others             podTemplate: a volume of the claim, mounted in main
//	                                     (mountPath /mnt/<name> when mountPoint is empty)
//	extraPodMetadata                     podTemplate.metadata.labels, annotations
//	extraPodSpec (the pod)               podTemplate.spec, containers other than main
//	extraPodSpec.mainContainer           podTemplate container main
//	envs, mainContainer.env              main env (envs first, mainContainer's over them)
//	envFromSecret                        main envFrom, first entry (a whole Secret)
//	resources (short form)               main resources: cpu, memory, custom by name; gpu as
//	                                     limits/requests of gpuType (nvidia.com/gpu by default)
//	livenessProbe, readinessProbe        main probes (mainContainer's laid over the service's)
//	frontendSidecar {image, command,     frontendSidecar "frontend-sidecar" and a container of
//	args, envs, envFromSecret}           that name (extraPodSpec's container of that name over it)
//	gpuMemoryService {enabled: true}     experimental.gpuMemoryService {} (false: absent, saved)
//	failover {enabled: true}             experimental.failover {} (false: absent, saved)
//	scalingAdapter {enabled: true}       scalingAdapter {} (false: absent, saved)
//	topologyConstraint                   the same
//	serviceName                          - in a graph (saved); a component's name in a
//	                                     DynamoComponentDeployment (else metadata.name)
//	dynamoNamespace, autoscaling, pvc,   - (saved)
//	ingress, externalServices,
//	annotations, labels
//	-                                    providerOverride, runtimeVersionOverride,
//	                                     globalDynamoNamespace, minAvailable, roles,
//	                                     dynamoSidecar,
//	                                     experimental.grove, experimental.checkpoint (saved)
//
// Going down, the main container splits back: env to envs, a first envFrom
// entry naming a whole Secret to envFromSecret, probes to the service's,
// resources to the short form (cpu and memory by name; the limit of
// nvidia.com/gpu, else of the first resource named like a GPU, as gpu and
// gpuType when it is a whole positive count, and the request of it as gpu
// when equal; everything else as custom; claims stay in mainContainer), the
// rest to extraPodSpec.mainContainer. A DynamoComponentDeployment adds
// dynamoComponent and dynamoTag (saved) and the status's podSelector,
// selector and replica counts (saved: v1beta1's status has only
// component).
//
// # Annotations
//
// What one version holds that the other cannot is saved on the converted
// object, sparsely, as JSON under four keys (ConversionAnnotations):
// nvidia.com/v1alpha1-spec and nvidia.com/v1alpha1-status on a v1beta1
// object, nvidia.com/v1beta1-spec and nvidia.com/v1beta1-status on a
// v1alpha1 one. Each holds {"parts": {...}, "items": {name: {...}}}: the
// parts of the object and of each service or component (status entry) by
// name; a part is one field (or a few that convert together) that did not
// convert back equal, saved whole as {"value": ..., "of": ...}. An object
// whose conversion loses nothing carries none; converting back consumes
// them. The renderer never copies them to children.
//
// Parts: of a v1alpha1 service, componentType (with subComponentType),
// dynamoNamespace, annotations, labels, autoscaling, pvc, ingress,
// externalServices, replicas, multinode, modelRef, eppConfig, sharedMemory,
// gpuMemoryService, failover, scalingAdapter, resources, envs, envFromSecret,
// livenessProbe, readinessProbe, volumeMounts, extraPodMetadata,
// extraPodSpec and, apart from it, its mainContainer's name, env, envFrom,
// resources, livenessProbe and readinessProbe (which of envs and
// mainContainer.env a variable came from), frontendSidecar, topologyConstraint and, in a graph,
// serviceName; of a v1alpha1 graph, dynamoComponent, envs,
// backendFramework, annotations, labels, pvcs, topologyConstraint and servicesWithoutSpec (a
// null service). Of a v1beta1 component, each of its fields, experimental
// member by member (and an empty experimental), and the pod template in
// three: podTemplate (sorted containers), podTemplate.metadata (besides
// labels and annotations) and podTemplate.containerOrder; of a v1beta1
// graph, its fields besides components, and componentOrder. Status parts:
// each field, and each status entry whole.
//
// Fields that need an annotation to survive, in practice: from v1alpha1,
// pvcs, dynamoComponent, dynamoTag, serviceName, subComponentType other
// than prefill/decode under worker, dynamoNamespace, autoscaling, pvc,
// ingress, externalServices, a service's annotations and labels, a
// disabled gpuMemoryService, failover or scalingAdapter, sharedMemory {disabled, size} or
// {}, the split of the main container between envs, envFromSecret,
// resources, probes, volumeMounts and mainContainer, resources the
// renderer reads differently from how they were written (a GPU as a
// request only, "0.5" for "500m", values that do not parse), a null
// service, and the component status's podSelector, selector and counts;
// from v1beta1, providerOverride, priorityClassName,
// experimental (graph), a component's
// runtimeVersionOverride, globalDynamoNamespace, minAvailable, roles,
// dynamoSidecar, experimental.grove
// and .checkpoint, GPU memory service or failover settings, a
// frontendSidecar naming another container, pod template metadata besides
// labels and annotations, the order of components and of containers, and
// status.checkpoints, placement and a component
// entry's runtimeNamespace, GPU counts and scheduledReplicas.
//
// # Stale annotations
//
// "of" is a fingerprint of the fields of the other version the part is
// represented in. Going back, a saved part replaces the converted value
// only while those fields are unchanged. Once the object was edited in the
// other version there, the edit wins, and the part converts from it: the
// conversion's own form renders the same children. Parts the other version
// has nothing of (no "of") are restored whatever was edited, and the
// claims of spec.pvcs are kept when the compilation caches change, a new
// cache's claim added after them; the order of components and containers
// is kept for the names still there, new ones after.
//
// What does not survive: a status written through v1beta1 keeps the stored
// metadata, so v1beta1-only status fields written that way are not saved
// (the operator writes status in v1alpha1). Quantities come back in their
// canonical form ("0.5" as "500m"), as any decoding into Go types does.
//
// spec.restart was saved too before v1alpha1 had it: such a saved value is
// shown in v1beta1 while v1alpha1 holds none.
//
// No other kind of the group has a v1beta1 version here: DynamoModel,
// DynamoComponent and DynamoWorkerMetadata are served in v1alpha1 only.
//
// +kubebuilder:object:generate=true
// +groupName=nvidia.com
package v1beta1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the API group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: "nvidia.com", Version: "v1beta1"}

	// SchemeBuilder registers the kinds of this package with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the kinds of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
