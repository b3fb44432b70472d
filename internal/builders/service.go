package builders

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

// The methods below set one field of a service spec each, for tests that
// render a service (operator/render) and check what a field becomes. A
// method named after a field of the spec shadows it: the field is reached
// through s.DynamoComponentDeploymentSharedSpec.

// ServiceName sets serviceName, the service's name in its graph.
func (s *ServiceWrapper) ServiceName(name string) *ServiceWrapper {
	s.DynamoComponentDeploymentSharedSpec.ServiceName = name
	return s
}

// ReplicasPtr sets replicas to p, nil included.
func (s *ServiceWrapper) ReplicasPtr(p *int32) *ServiceWrapper {
	s.DynamoComponentDeploymentSharedSpec.Replicas = p
	return s
}

// MultinodeSpec sets multinode to m, nil included.
func (s *ServiceWrapper) MultinodeSpec(m *v1alpha1.MultinodeSpec) *ServiceWrapper {
	s.DynamoComponentDeploymentSharedSpec.Multinode = m
	return s
}

// Resources sets resources.
func (s *ServiceWrapper) Resources(r *v1alpha1.Resources) *ServiceWrapper {
	s.DynamoComponentDeploymentSharedSpec.Resources = r
	return s
}

// Annotation sets an annotation of the service (copied to its workload and
// pods).
func (s *ServiceWrapper) Annotation(k, v string) *ServiceWrapper {
	s.Annotations = withKey(s.Annotations, k, v)
	return s
}

// EnvFromSecret sets envFromSecret.
func (s *ServiceWrapper) EnvFromSecret(name string) *ServiceWrapper {
	s.DynamoComponentDeploymentSharedSpec.EnvFromSecret = ptr.To(name)
	return s
}

// SharedMemory sets sharedMemory.
func (s *ServiceWrapper) SharedMemory(m *v1alpha1.SharedMemorySpec) *ServiceWrapper {
	s.DynamoComponentDeploymentSharedSpec.SharedMemory = m
	return s
}

// Ingress sets ingress.
func (s *ServiceWrapper) Ingress(i *v1alpha1.IngressSpec) *ServiceWrapper {
	s.DynamoComponentDeploymentSharedSpec.Ingress = i
	return s
}

// LivenessProbe sets livenessProbe.
func (s *ServiceWrapper) LivenessProbe(p *corev1.Probe) *ServiceWrapper {
	s.DynamoComponentDeploymentSharedSpec.LivenessProbe = p
	return s
}

// ReadinessProbe sets readinessProbe.
func (s *ServiceWrapper) ReadinessProbe(p *corev1.Probe) *ServiceWrapper {
	s.DynamoComponentDeploymentSharedSpec.ReadinessProbe = p
	return s
}

// FrontendSidecar sets frontendSidecar.
func (s *ServiceWrapper) FrontendSidecar(f *v1alpha1.FrontendSidecar) *ServiceWrapper {
	s.DynamoComponentDeploymentSharedSpec.FrontendSidecar = f
	return s
}

// ExtraPodSpec replaces extraPodSpec, nil included.
func (s *ServiceWrapper) ExtraPodSpec(e *v1alpha1.ExtraPodSpec) *ServiceWrapper {
	s.DynamoComponentDeploymentSharedSpec.ExtraPodSpec = e
	return s
}

// PodSpec sets extraPodSpec's pod spec, merged by the operator into the pod
// it renders.
func (s *ServiceWrapper) PodSpec(p *corev1.PodSpec) *ServiceWrapper {
	s.extraPodSpec().PodSpec = p
	return s
}

// MainContainer replaces extraPodSpec.mainContainer.
func (s *ServiceWrapper) MainContainer(c *corev1.Container) *ServiceWrapper {
	s.extraPodSpec().MainContainer = c
	return s
}

// ContainerEnv sets the main container's env.
func (s *ServiceWrapper) ContainerEnv(env []corev1.EnvVar) *ServiceWrapper {
	s.mainContainer().Env = env
	return s
}

// ContainerEnvFrom sets the main container's envFrom.
func (s *ServiceWrapper) ContainerEnvFrom(from []corev1.EnvFromSource) *ServiceWrapper {
	s.mainContainer().EnvFrom = from
	return s
}

// ContainerPorts sets the main container's ports.
func (s *ServiceWrapper) ContainerPorts(ports []corev1.ContainerPort) *ServiceWrapper {
	s.mainContainer().Ports = ports
	return s
}

// ContainerResources sets the main container's resources.
func (s *ServiceWrapper) ContainerResources(r corev1.ResourceRequirements) *ServiceWrapper {
	s.mainContainer().Resources = r
	return s
}

// ContainerVolumeMounts sets the main container's volume mounts.
func (s *ServiceWrapper) ContainerVolumeMounts(m []corev1.VolumeMount) *ServiceWrapper {
	s.mainContainer().VolumeMounts = m
	return s
}

// ContainerStartupProbe sets the main container's startup probe.
func (s *ServiceWrapper) ContainerStartupProbe(p *corev1.Probe) *ServiceWrapper {
	s.mainContainer().StartupProbe = p
	return s
}

// ContainerReadinessProbe sets the main container's readiness probe.
func (s *ServiceWrapper) ContainerReadinessProbe(p *corev1.Probe) *ServiceWrapper {
	s.mainContainer().ReadinessProbe = p
	return s
}

func (s *ServiceWrapper) extraPodSpec() *v1alpha1.ExtraPodSpec {
	if s.DynamoComponentDeploymentSharedSpec.ExtraPodSpec == nil {
		s.DynamoComponentDeploymentSharedSpec.ExtraPodSpec = &v1alpha1.ExtraPodSpec{}
	}
	return s.DynamoComponentDeploymentSharedSpec.ExtraPodSpec
}

// ExtraPodMetadata sets extraPodMetadata, the labels and annotations of the
// service's pods.
func (s *ServiceWrapper) ExtraPodMetadata(m *v1alpha1.ExtraPodMetadata) *ServiceWrapper {
	s.DynamoComponentDeploymentSharedSpec.ExtraPodMetadata = m
	return s
}

// PVC sets pvc, the service's own claim.
func (s *ServiceWrapper) PVC(p *v1alpha1.ServicePVC) *ServiceWrapper {
	s.DynamoComponentDeploymentSharedSpec.PVC = p
	return s
}

// Autoscaling sets autoscaling (deprecated in the API; set for tests of its
// warning).
func (s *ServiceWrapper) Autoscaling(a *v1alpha1.Autoscaling) *ServiceWrapper {
	s.DynamoComponentDeploymentSharedSpec.Autoscaling = a
	return s
}

// Failover sets failover.
func (s *ServiceWrapper) Failover(f *v1alpha1.EnabledSpec) *ServiceWrapper {
	s.DynamoComponentDeploymentSharedSpec.Failover = f
	return s
}

// GPUMemoryService sets gpuMemoryService.
func (s *ServiceWrapper) GPUMemoryService(g *v1alpha1.EnabledSpec) *ServiceWrapper {
	s.DynamoComponentDeploymentSharedSpec.GPUMemoryService = g
	return s
}

// EPPConfig sets eppConfig.
func (s *ServiceWrapper) EPPConfig(e *v1alpha1.EPPConfig) *ServiceWrapper {
	s.DynamoComponentDeploymentSharedSpec.EPPConfig = e
	return s
}
