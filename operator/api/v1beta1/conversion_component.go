package v1beta1

import (
	"encoding/json"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

type (
	alphaService = v1alpha1.DynamoComponentDeploymentSharedSpec
	betaService  = DynamoComponentDeploymentSharedSpec
)

// componentUp is a v1alpha1 service as a v1beta1 component, without its
// name (the caller's: a graph's map key, a component's serviceName).
func componentUp(s *alphaService) betaService {
	c := betaService{
		ComponentType:    typeUp(s.ComponentType, s.SubComponentType),
		Replicas:         cloneInt32(s.Replicas),
		SharedMemorySize: sharedMemoryUp(s.SharedMemory),
		PodTemplate:      podTemplateUp(s),
		Experimental:     experimentalUp(s),
	}
	if s.Multinode != nil {
		c.Multinode = &MultinodeSpec{NodeCount: s.Multinode.NodeCount}
	}
	if s.ModelRef != nil {
		c.ModelRef = &ModelReference{Name: s.ModelRef.Name, Revision: s.ModelRef.Revision}
	}
	if s.EPPConfig != nil {
		c.EPPConfig = &EPPConfig{ConfigMapRef: s.EPPConfig.ConfigMapRef.DeepCopy(), Config: s.EPPConfig.Config.DeepCopy()}
	}
	if s.ScalingAdapter != nil && s.ScalingAdapter.Enabled {
		c.ScalingAdapter = &ScalingAdapter{}
	}
	if i := slices.IndexFunc(s.VolumeMounts, func(m v1alpha1.VolumeMount) bool { return m.UseAsCompilationCache }); i >= 0 {
		c.CompilationCache = &CompilationCacheConfig{PVCName: s.VolumeMounts[i].Name, MountPath: s.VolumeMounts[i].MountPoint}
	}
	if s.FrontendSidecar != nil {
		name := FrontendSidecarContainerName
		c.FrontendSidecar = &name
	}
	if t := s.TopologyConstraint; t != nil {
		c.TopologyConstraint = &TopologyConstraint{PackDomain: TopologyDomain(t.PackDomain)}
	}
	return c
}

// componentDown is a v1beta1 component as a v1alpha1 service, without its
// serviceName.
func componentDown(c *betaService) alphaService {
	s := alphaService{
		Replicas:     cloneInt32(c.Replicas),
		SharedMemory: sharedMemoryDown(c.SharedMemorySize),
	}
	s.ComponentType, s.SubComponentType = typeDown(c.ComponentType)
	if c.Multinode != nil {
		s.Multinode = &v1alpha1.MultinodeSpec{NodeCount: c.Multinode.NodeCount}
	}
	if c.ModelRef != nil {
		s.ModelRef = &v1alpha1.ModelReference{Name: c.ModelRef.Name, Revision: c.ModelRef.Revision}
	}
	if c.EPPConfig != nil {
		s.EPPConfig = &v1alpha1.EPPConfig{ConfigMapRef: c.EPPConfig.ConfigMapRef.DeepCopy(), Config: c.EPPConfig.Config.DeepCopy()}
	}
	if c.ScalingAdapter != nil {
		s.ScalingAdapter = &v1alpha1.EnabledSpec{Enabled: true}
	}
	if cc := c.CompilationCache; cc != nil {
		s.VolumeMounts = []v1alpha1.VolumeMount{{Name: cc.PVCName, MountPoint: cc.MountPath, UseAsCompilationCache: true}}
	}
	if e := c.Experimental; e != nil {
		if e.GPUMemoryService != nil {
			s.GPUMemoryService = &v1alpha1.EnabledSpec{Enabled: true}
		}
		if e.Failover != nil {
			s.Failover = &v1alpha1.EnabledSpec{Enabled: true}
		}
	}
	if t := c.TopologyConstraint; t != nil {
		s.TopologyConstraint = &v1alpha1.TopologyConstraint{PackDomain: v1alpha1.TopologyDomain(t.PackDomain)}
	}
	podTemplateDown(c.PodTemplate, c.FrontendSidecar, &s)
	return s
}

// typeUp promotes a worker whose subComponentType is prefill or decode to
// v1beta1's prefill or decode type. Any other type passes as written.
func typeUp(t v1alpha1.ComponentType, sub string) ComponentType {
	if t == v1alpha1.ComponentTypeWorker && (sub == string(ComponentTypePrefill) || sub == string(ComponentTypeDecode)) {
		return ComponentType(sub)
	}
	return ComponentType(t)
}

// typeDown is a prefill or decode component as the worker with that
// subComponentType Dynamo's v1alpha1 manifests write.
func typeDown(t ComponentType) (v1alpha1.ComponentType, string) {
	if t == ComponentTypePrefill || t == ComponentTypeDecode {
		return v1alpha1.ComponentTypeWorker, string(t)
	}
	return v1alpha1.ComponentType(t), ""
}

// sharedMemoryUp: disabled is size 0, a size is that size, neither is the
// default (absent).
func sharedMemoryUp(m *v1alpha1.SharedMemorySpec) *resource.Quantity {
	switch {
	case m == nil:
		return nil
	case m.Disabled:
		q := resource.MustParse("0")
		return &q
	case m.Size != nil:
		q := m.Size.DeepCopy()
		return &q
	}
	return nil
}

func sharedMemoryDown(q *resource.Quantity) *v1alpha1.SharedMemorySpec {
	switch {
	case q == nil:
		return nil
	case q.Sign() == 0:
		return &v1alpha1.SharedMemorySpec{Disabled: true}
	}
	size := q.DeepCopy()
	return &v1alpha1.SharedMemorySpec{Size: &size}
}

// experimentalUp: an enabled GPU memory service or failover is present in
// v1beta1 (presence enables it there); a disabled one is absent.
func experimentalUp(s *alphaService) *ExperimentalSpec {
	var e ExperimentalSpec
	if s.GPUMemoryService != nil && s.GPUMemoryService.Enabled {
		e.GPUMemoryService = &GPUMemoryServiceSpec{}
	}
	if s.Failover != nil && s.Failover.Enabled {
		e.Failover = &FailoverSpec{}
	}
	if e.GPUMemoryService == nil && e.Failover == nil {
		return nil
	}
	return &e
}

func cloneInt32(p *int32) *int32 {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// alphaPodFields are the v1beta1 fields a v1alpha1 service's pod fields
// are represented in.
func alphaPodFields(c *betaService) any {
	return []any{c.PodTemplate, c.FrontendSidecar, c.CompilationCache}
}

// betaPodFields are the v1alpha1 fields a v1beta1 component's pod template,
// frontendSidecar and compilationCache are represented in.
func betaPodFields(s *alphaService) any {
	return []any{s.Resources, s.Envs, s.EnvFromSecret, s.LivenessProbe, s.ReadinessProbe,
		s.ExtraPodMetadata, s.ExtraPodSpec, s.FrontendSidecar, s.VolumeMounts}
}

// alphaServiceParts are the fields of a v1alpha1 service, each with the
// v1beta1 fields it is represented in (nil: v1beta1 has no such field).
var alphaServiceParts = []part[alphaService, betaService]{
	alphaField("componentType",
		func(s *alphaService) [2]string { return [2]string{string(s.ComponentType), s.SubComponentType} },
		func(s *alphaService, v [2]string) {
			s.ComponentType, s.SubComponentType = v1alpha1.ComponentType(v[0]), v[1]
		},
		func(c *betaService) any { return c.ComponentType }),
	alphaField("dynamoNamespace", func(s *alphaService) *string { return s.DynamoNamespace },
		func(s *alphaService, v *string) { s.DynamoNamespace = v }, nil),
	alphaField("annotations", func(s *alphaService) map[string]string { return s.Annotations },
		func(s *alphaService, v map[string]string) { s.Annotations = v }, nil),
	alphaField("labels", func(s *alphaService) map[string]string { return s.Labels },
		func(s *alphaService, v map[string]string) { s.Labels = v }, nil),
	alphaField("autoscaling", func(s *alphaService) *v1alpha1.Autoscaling { return s.Autoscaling },
		func(s *alphaService, v *v1alpha1.Autoscaling) { s.Autoscaling = v }, nil),
	alphaField("pvc", func(s *alphaService) *v1alpha1.ServicePVC { return s.PVC },
		func(s *alphaService, v *v1alpha1.ServicePVC) { s.PVC = v }, nil),
	alphaField("ingress", func(s *alphaService) *v1alpha1.IngressSpec { return s.Ingress },
		func(s *alphaService, v *v1alpha1.IngressSpec) { s.Ingress = v }, nil),
	alphaField("externalServices", func(s *alphaService) map[string]v1alpha1.ExternalService { return s.ExternalServices },
		func(s *alphaService, v map[string]v1alpha1.ExternalService) { s.ExternalServices = v }, nil),
	alphaField("replicas", func(s *alphaService) *int32 { return s.Replicas },
		func(s *alphaService, v *int32) { s.Replicas = v }, func(c *betaService) any { return c.Replicas }),
	alphaField("multinode", func(s *alphaService) *v1alpha1.MultinodeSpec { return s.Multinode },
		func(s *alphaService, v *v1alpha1.MultinodeSpec) { s.Multinode = v }, func(c *betaService) any { return c.Multinode }),
	alphaField("modelRef", func(s *alphaService) *v1alpha1.ModelReference { return s.ModelRef },
		func(s *alphaService, v *v1alpha1.ModelReference) { s.ModelRef = v }, func(c *betaService) any { return c.ModelRef }),
	alphaField("eppConfig", func(s *alphaService) *v1alpha1.EPPConfig { return s.EPPConfig },
		func(s *alphaService, v *v1alpha1.EPPConfig) { s.EPPConfig = v }, func(c *betaService) any { return c.EPPConfig }),
	alphaField("sharedMemory", func(s *alphaService) *v1alpha1.SharedMemorySpec { return s.SharedMemory },
		func(s *alphaService, v *v1alpha1.SharedMemorySpec) { s.SharedMemory = v },
		func(c *betaService) any { return c.SharedMemorySize }),
	alphaField("gpuMemoryService", func(s *alphaService) *v1alpha1.EnabledSpec { return s.GPUMemoryService },
		func(s *alphaService, v *v1alpha1.EnabledSpec) { s.GPUMemoryService = v },
		func(c *betaService) any {
			return experimentalPart(c, func(e *ExperimentalSpec) any { return e.GPUMemoryService })
		}),
	alphaField("scalingAdapter", func(s *alphaService) *v1alpha1.EnabledSpec { return s.ScalingAdapter },
		func(s *alphaService, v *v1alpha1.EnabledSpec) { s.ScalingAdapter = v },
		func(c *betaService) any { return c.ScalingAdapter }),
	alphaField("failover", func(s *alphaService) *v1alpha1.EnabledSpec { return s.Failover },
		func(s *alphaService, v *v1alpha1.EnabledSpec) { s.Failover = v },
		func(c *betaService) any {
			return experimentalPart(c, func(e *ExperimentalSpec) any { return e.Failover })
		}),
	alphaField("resources", func(s *alphaService) *v1alpha1.Resources { return s.Resources },
		func(s *alphaService, v *v1alpha1.Resources) { s.Resources = v }, alphaPodFields),
	alphaField("envs", func(s *alphaService) []corev1.EnvVar { return s.Envs },
		func(s *alphaService, v []corev1.EnvVar) { s.Envs = v }, alphaPodFields),
	alphaField("envFromSecret", func(s *alphaService) *string { return s.EnvFromSecret },
		func(s *alphaService, v *string) { s.EnvFromSecret = v }, alphaPodFields),
	alphaField("livenessProbe", func(s *alphaService) *corev1.Probe { return s.LivenessProbe },
		func(s *alphaService, v *corev1.Probe) { s.LivenessProbe = v }, alphaPodFields),
	alphaField("readinessProbe", func(s *alphaService) *corev1.Probe { return s.ReadinessProbe },
		func(s *alphaService, v *corev1.Probe) { s.ReadinessProbe = v }, alphaPodFields),
	alphaField("volumeMounts", func(s *alphaService) []v1alpha1.VolumeMount { return s.VolumeMounts },
		func(s *alphaService, v []v1alpha1.VolumeMount) { s.VolumeMounts = v }, alphaPodFields),
	alphaField("extraPodMetadata", func(s *alphaService) *v1alpha1.ExtraPodMetadata { return s.ExtraPodMetadata },
		func(s *alphaService, v *v1alpha1.ExtraPodMetadata) { s.ExtraPodMetadata = v }, alphaPodFields),
	alphaField("extraPodSpec", extraPodSpecRest, setExtraPodSpecRest, alphaPodFields),
	mainContainerField("extraPodSpec.mainContainer.name", func(c *corev1.Container) *string { return &c.Name }),
	mainContainerField("extraPodSpec.mainContainer.env", func(c *corev1.Container) *[]corev1.EnvVar { return &c.Env }),
	mainContainerField("extraPodSpec.mainContainer.envFrom", func(c *corev1.Container) *[]corev1.EnvFromSource { return &c.EnvFrom }),
	mainContainerField("extraPodSpec.mainContainer.resources",
		func(c *corev1.Container) *corev1.ResourceRequirements { return &c.Resources }),
	mainContainerField("extraPodSpec.mainContainer.livenessProbe", func(c *corev1.Container) **corev1.Probe { return &c.LivenessProbe }),
	mainContainerField("extraPodSpec.mainContainer.readinessProbe", func(c *corev1.Container) **corev1.Probe { return &c.ReadinessProbe }),
	alphaField("frontendSidecar", func(s *alphaService) *v1alpha1.FrontendSidecar { return s.FrontendSidecar },
		func(s *alphaService, v *v1alpha1.FrontendSidecar) { s.FrontendSidecar = v }, alphaPodFields),
	alphaField("topologyConstraint", func(s *alphaService) *v1alpha1.TopologyConstraint { return s.TopologyConstraint },
		func(s *alphaService, v *v1alpha1.TopologyConstraint) { s.TopologyConstraint = v },
		func(c *betaService) any { return c.TopologyConstraint }),
}

// mainContainerMembers are the fields of mainContainer the conversion moves
// to or from the service's own fields; each is a part of its own, so that
// which of the two a value came from is saved apart from the rest of
// mainContainer.
var mainContainerMembers = []func(*corev1.Container){
	func(c *corev1.Container) { c.Name = "" },
	func(c *corev1.Container) { c.Env = nil },
	func(c *corev1.Container) { c.EnvFrom = nil },
	func(c *corev1.Container) { c.Resources = corev1.ResourceRequirements{} },
	func(c *corev1.Container) { c.LivenessProbe = nil },
	func(c *corev1.Container) { c.ReadinessProbe = nil },
}

// extraPodSpecRest is extraPodSpec without the members of mainContainer
// that are parts of their own.
func extraPodSpecRest(s *alphaService) *v1alpha1.ExtraPodSpec {
	if s.ExtraPodSpec == nil {
		return nil
	}
	out := s.ExtraPodSpec.DeepCopy()
	if out.MainContainer != nil {
		for _, clear := range mainContainerMembers {
			clear(out.MainContainer)
		}
	}
	return out
}

// setExtraPodSpecRest restores extraPodSpec, keeping the members of
// mainContainer the conversion gave (their own parts restore them).
func setExtraPodSpecRest(s *alphaService, v *v1alpha1.ExtraPodSpec) {
	current := s.ExtraPodSpec
	s.ExtraPodSpec = v
	if v == nil || v.MainContainer == nil || current == nil || current.MainContainer == nil {
		return
	}
	c, m := current.MainContainer, v.MainContainer
	m.Name, m.Env, m.EnvFrom, m.Resources = c.Name, c.Env, c.EnvFrom, c.Resources
	m.LivenessProbe, m.ReadinessProbe = c.LivenessProbe, c.ReadinessProbe
}

// mainContainerField is a part of one member of mainContainer; restoring a
// value creates mainContainer when needed.
func mainContainerField[T any](name string, member func(*corev1.Container) *T) part[alphaService, betaService] {
	return alphaField(name,
		func(s *alphaService) T {
			var zero T
			if s.ExtraPodSpec == nil || s.ExtraPodSpec.MainContainer == nil {
				return zero
			}
			return *member(s.ExtraPodSpec.MainContainer)
		},
		func(s *alphaService, v T) {
			var zero T
			if apiequality.Semantic.DeepEqual(v, zero) && (s.ExtraPodSpec == nil || s.ExtraPodSpec.MainContainer == nil) {
				return
			}
			if s.ExtraPodSpec == nil {
				s.ExtraPodSpec = &v1alpha1.ExtraPodSpec{}
			}
			if s.ExtraPodSpec.MainContainer == nil {
				s.ExtraPodSpec.MainContainer = &corev1.Container{}
			}
			*member(s.ExtraPodSpec.MainContainer) = v
		}, alphaPodFields)
}

func experimentalPart(c *betaService, get func(*ExperimentalSpec) any) any {
	if c.Experimental == nil {
		return nil
	}
	return get(c.Experimental)
}

// betaComponentParts are the fields of a v1beta1 component, each with the
// v1alpha1 fields it is represented in (nil: v1alpha1 has no such field).
// The order matters where parts share a parent: experimental's presence is
// restored before its members, the pod template before its container order.
var betaComponentParts = []part[betaService, alphaService]{
	betaField("providerOverride", func(c *betaService) *ProviderOverride { return c.ProviderOverride },
		func(c *betaService, v *ProviderOverride) { c.ProviderOverride = v }, nil),
	betaField("type", func(c *betaService) ComponentType { return c.ComponentType },
		func(c *betaService, v ComponentType) { c.ComponentType = v },
		func(s *alphaService) any { return []any{s.ComponentType, s.SubComponentType} }),
	betaField("runtimeVersionOverride", func(c *betaService) string { return c.RuntimeVersionOverride },
		func(c *betaService, v string) { c.RuntimeVersionOverride = v }, nil),
	betaField("globalDynamoNamespace", func(c *betaService) bool { return c.GlobalDynamoNamespace },
		func(c *betaService, v bool) { c.GlobalDynamoNamespace = v }, nil),
	betaField("replicas", func(c *betaService) *int32 { return c.Replicas },
		func(c *betaService, v *int32) { c.Replicas = v }, func(s *alphaService) any { return s.Replicas }),
	betaField("minAvailable", func(c *betaService) *int32 { return c.MinAvailable },
		func(c *betaService, v *int32) { c.MinAvailable = v }, nil),
	betaField("multinode", func(c *betaService) *MultinodeSpec { return c.Multinode },
		func(c *betaService, v *MultinodeSpec) { c.Multinode = v }, func(s *alphaService) any { return s.Multinode }),
	betaField("roles", func(c *betaService) []ComponentRoleSpec { return c.Roles },
		func(c *betaService, v []ComponentRoleSpec) { c.Roles = v }, nil),
	betaField("sharedMemorySize", func(c *betaService) *resource.Quantity { return c.SharedMemorySize },
		func(c *betaService, v *resource.Quantity) { c.SharedMemorySize = v }, func(s *alphaService) any { return s.SharedMemory }),
	betaField("modelRef", func(c *betaService) *ModelReference { return c.ModelRef },
		func(c *betaService, v *ModelReference) { c.ModelRef = v }, func(s *alphaService) any { return s.ModelRef }),
	betaField("scalingAdapter", func(c *betaService) *ScalingAdapter { return c.ScalingAdapter },
		func(c *betaService, v *ScalingAdapter) { c.ScalingAdapter = v }, func(s *alphaService) any { return s.ScalingAdapter }),
	betaField("eppConfig", func(c *betaService) *EPPConfig { return c.EPPConfig },
		func(c *betaService, v *EPPConfig) { c.EPPConfig = v }, func(s *alphaService) any { return s.EPPConfig }),
	betaField("dynamoSidecar", func(c *betaService) *string { return c.DynamoSidecar },
		func(c *betaService, v *string) { c.DynamoSidecar = v }, nil),
	betaField("topologyConstraint", func(c *betaService) *TopologyConstraint { return c.TopologyConstraint },
		func(c *betaService, v *TopologyConstraint) { c.TopologyConstraint = v },
		func(s *alphaService) any { return s.TopologyConstraint }),
	betaField("experimental", func(c *betaService) bool {
		return c.Experimental != nil && apiequality.Semantic.DeepEqual(*c.Experimental, ExperimentalSpec{})
	}, setExperimentalPresent, func(s *alphaService) any { return []any{s.GPUMemoryService, s.Failover} }),
	experimentalField("experimental.gpuMemoryService",
		func(e *ExperimentalSpec) **GPUMemoryServiceSpec { return &e.GPUMemoryService },
		func(s *alphaService) any { return s.GPUMemoryService }),
	experimentalField("experimental.failover",
		func(e *ExperimentalSpec) **FailoverSpec { return &e.Failover },
		func(s *alphaService) any { return s.Failover }),
	experimentalField("experimental.grove", func(e *ExperimentalSpec) **GroveSpec { return &e.Grove }, nil),
	experimentalField("experimental.checkpoint",
		func(e *ExperimentalSpec) **ComponentCheckpointConfig { return &e.Checkpoint }, nil),
	betaField("compilationCache", func(c *betaService) *CompilationCacheConfig { return c.CompilationCache },
		func(c *betaService, v *CompilationCacheConfig) { c.CompilationCache = v }, betaPodFields),
	betaField("frontendSidecar", func(c *betaService) *string { return c.FrontendSidecar },
		func(c *betaService, v *string) { c.FrontendSidecar = v }, betaPodFields),
	betaField("podTemplate", podTemplateRest, setPodTemplateRest, betaPodFields),
	betaField("podTemplate.metadata", podTemplateMeta, setPodTemplateMeta, nil),
	betaField("podTemplate.containerOrder", containerOrder, setContainerOrder, nil),
}

// setExperimentalPresent restores an experimental block that is present
// but empty (v1alpha1 has nothing of it).
func setExperimentalPresent(c *betaService, empty bool) {
	if empty && c.Experimental == nil {
		c.Experimental = &ExperimentalSpec{}
	}
}

// experimentalField is a part of one member of experimental; restoring it
// creates the block when needed.
func experimentalField[T any](name string, member func(*ExperimentalSpec) **T, of func(*alphaService) any) part[betaService, alphaService] {
	return betaField(name,
		func(c *betaService) *T {
			if c.Experimental == nil {
				return nil
			}
			return *member(c.Experimental)
		},
		func(c *betaService, v *T) {
			if c.Experimental == nil {
				if v == nil {
					return
				}
				c.Experimental = &ExperimentalSpec{}
			}
			*member(c.Experimental) = v
		}, of)
}

// podTemplateRest is the pod template without what the parts
// podTemplate.metadata and podTemplate.containerOrder hold: the metadata
// besides labels and annotations, and the order of the containers (sorted
// by name here).
func podTemplateRest(c *betaService) *corev1.PodTemplateSpec {
	if c.PodTemplate == nil {
		return nil
	}
	pt := &corev1.PodTemplateSpec{Spec: *c.PodTemplate.Spec.DeepCopy()}
	pt.Labels, pt.Annotations = c.PodTemplate.Labels, c.PodTemplate.Annotations
	slices.SortStableFunc(pt.Spec.Containers, func(a, b corev1.Container) int { return strings.Compare(a.Name, b.Name) })
	return pt
}

// setPodTemplateRest restores the pod template, keeping the metadata and
// the container order the conversion gave (their own parts restore them).
func setPodTemplateRest(c *betaService, v *corev1.PodTemplateSpec) {
	if v == nil {
		c.PodTemplate = nil
		return
	}
	var order []string
	meta := podTemplateMeta(c)
	if c.PodTemplate != nil {
		order = containerOrder(c)
	}
	c.PodTemplate = v
	setPodTemplateMeta(c, meta)
	setContainerOrder(c, order)
}

// podTemplateMeta is the pod template's metadata besides labels and
// annotations, which v1alpha1 cannot carry.
func podTemplateMeta(c *betaService) json.RawMessage {
	if c.PodTemplate == nil {
		return nil
	}
	m := c.PodTemplate.ObjectMeta.DeepCopy()
	m.Labels, m.Annotations = nil, nil
	raw, _ := json.Marshal(m)
	if string(raw) == "{}" || string(raw) == `{"creationTimestamp":null}` {
		return nil
	}
	return raw
}

func setPodTemplateMeta(c *betaService, raw json.RawMessage) {
	if c.PodTemplate == nil {
		if raw == nil {
			return
		}
		c.PodTemplate = &corev1.PodTemplateSpec{}
	}
	labels, annotations := c.PodTemplate.Labels, c.PodTemplate.Annotations
	c.PodTemplate.ObjectMeta = corev1.PodTemplateSpec{}.ObjectMeta
	if raw != nil {
		_ = json.Unmarshal(raw, &c.PodTemplate.ObjectMeta)
	}
	c.PodTemplate.Labels, c.PodTemplate.Annotations = labels, annotations
}

// containerOrder is the names of the pod template's containers in order.
func containerOrder(c *betaService) []string {
	if c.PodTemplate == nil {
		return nil
	}
	names := make([]string, 0, len(c.PodTemplate.Spec.Containers))
	for _, ct := range c.PodTemplate.Spec.Containers {
		names = append(names, ct.Name)
	}
	return names
}

// setContainerOrder puts the containers named in order first, in that
// order, and the others after them as they were: containers added since
// keep their place relative to each other.
func setContainerOrder(c *betaService, order []string) {
	if c.PodTemplate == nil || len(order) == 0 {
		return
	}
	rest := slices.Clone(c.PodTemplate.Spec.Containers)
	out := make([]corev1.Container, 0, len(rest))
	for _, name := range order {
		if i := slices.IndexFunc(rest, func(ct corev1.Container) bool { return ct.Name == name }); i >= 0 {
			out = append(out, rest[i])
			rest = slices.Delete(rest, i, i+1)
		}
	}
	c.PodTemplate.Spec.Containers = append(out, rest...)
}

func alphaField[T any](name string, get func(*alphaService) T, set func(*alphaService, T), of func(*betaService) any) part[alphaService, betaService] {
	return fieldPart(name, get, set, of)
}

func betaField[T any](name string, get func(*betaService) T, set func(*betaService, T), of func(*alphaService) any) part[betaService, alphaService] {
	return fieldPart(name, get, set, of)
}
