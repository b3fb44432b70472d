// Package builders holds the test builders shared by every test of the
// project, in the style of kueue's pkg/util/testing wrappers:
//
//	graph := builders.MakeGraph("llm", ns).
//		Backend(v1alpha1.BackendFrameworkVLLM).
//		Service("Frontend", builders.MakeService().Type(v1alpha1.ComponentTypeFrontend)).
//		Service("Worker", builders.MakeService().Type(v1alpha1.ComponentTypeWorker).GPUs(1)).
//		Obj()
//
// Each builder wraps the API object it builds; methods set one field and
// return the builder, Obj returns the object. Extend a builder with a method
// rather than writing an object literal in a test.
package builders

import (
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

// GraphWrapper builds a DynamoGraphDeployment.
type GraphWrapper struct{ v1alpha1.DynamoGraphDeployment }

// MakeGraph starts a graph with no services.
func MakeGraph(name, namespace string) *GraphWrapper {
	return &GraphWrapper{v1alpha1.DynamoGraphDeployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "DynamoGraphDeployment"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec:       v1alpha1.DynamoGraphDeploymentSpec{Services: map[string]*v1alpha1.DynamoComponentDeploymentSharedSpec{}},
	}}
}

// Obj returns the graph.
func (g *GraphWrapper) Obj() *v1alpha1.DynamoGraphDeployment { return &g.DynamoGraphDeployment }

// Service adds (or replaces) a service; a nil s adds a service with no
// spec (for validation tests).
func (g *GraphWrapper) Service(name string, s *ServiceWrapper) *GraphWrapper {
	if s == nil {
		g.Spec.Services[name] = nil
		return g
	}
	g.Spec.Services[name] = s.Obj()
	return g
}

// Backend sets spec.backendFramework.
func (g *GraphWrapper) Backend(b v1alpha1.BackendFramework) *GraphWrapper {
	g.Spec.BackendFramework = b
	return g
}

// Env adds a global env var.
func (g *GraphWrapper) Env(name, value string) *GraphWrapper {
	g.Spec.Envs = append(g.Spec.Envs, corev1.EnvVar{Name: name, Value: value})
	return g
}

// Label sets a label on the graph's metadata.
func (g *GraphWrapper) Label(k, v string) *GraphWrapper {
	g.Labels = withKey(g.Labels, k, v)
	return g
}

// Annotation sets an annotation on the graph's metadata.
func (g *GraphWrapper) Annotation(k, v string) *GraphWrapper {
	g.Annotations = withKey(g.Annotations, k, v)
	return g
}

// PVC adds an entry of spec.pvcs.
func (g *GraphWrapper) PVC(p v1alpha1.GraphPVC) *GraphWrapper {
	g.Spec.PVCs = append(g.Spec.PVCs, p)
	return g
}

// DynamoComponent sets spec.dynamoComponent (name:version).
func (g *GraphWrapper) DynamoComponent(ref string) *GraphWrapper {
	g.Spec.DynamoComponent = ref
	return g
}

// Generation sets metadata.generation (for pure render and status tests).
func (g *GraphWrapper) Generation(n int64) *GraphWrapper {
	g.ObjectMeta.Generation = n
	return g
}

// UID sets metadata.uid (for pure render tests that check owner references).
func (g *GraphWrapper) UID(uid string) *GraphWrapper {
	g.ObjectMeta.UID = types.UID(uid)
	return g
}

// ServiceWrapper builds one service spec of a graph or component.
type ServiceWrapper struct {
	v1alpha1.DynamoComponentDeploymentSharedSpec
}

// MakeService starts a service with one replica and image "img:1".
func MakeService() *ServiceWrapper {
	return &ServiceWrapper{v1alpha1.DynamoComponentDeploymentSharedSpec{
		Replicas: ptr.To[int32](1),
		ExtraPodSpec: &v1alpha1.ExtraPodSpec{
			MainContainer: &corev1.Container{Image: "img:1"},
		},
	}}
}

// MakeEmptyService starts a service with nothing set, as a user may write
// it, for tests of validation and of what the operator fills in.
func MakeEmptyService() *ServiceWrapper {
	return &ServiceWrapper{}
}

// Obj returns the service spec.
func (s *ServiceWrapper) Obj() *v1alpha1.DynamoComponentDeploymentSharedSpec {
	return &s.DynamoComponentDeploymentSharedSpec
}

// Type sets componentType.
func (s *ServiceWrapper) Type(t v1alpha1.ComponentType) *ServiceWrapper {
	s.ComponentType = t
	return s
}

// SubType sets subComponentType.
func (s *ServiceWrapper) SubType(t string) *ServiceWrapper {
	s.SubComponentType = t
	return s
}

// Replicas sets replicas.
func (s *ServiceWrapper) Replicas(n int32) *ServiceWrapper {
	s.DynamoComponentDeploymentSharedSpec.Replicas = ptr.To(n)
	return s
}

// ScalingAdapter sets scalingAdapter.enabled.
func (s *ServiceWrapper) ScalingAdapter(enabled bool) *ServiceWrapper {
	s.DynamoComponentDeploymentSharedSpec.ScalingAdapter = &v1alpha1.EnabledSpec{Enabled: enabled}
	return s
}

// NoReplicas leaves replicas unset (for defaulting tests).
func (s *ServiceWrapper) NoReplicas() *ServiceWrapper {
	s.DynamoComponentDeploymentSharedSpec.Replicas = nil
	return s
}

// GPUs sets a GPU limit of the default GPU type.
func (s *ServiceWrapper) GPUs(n int) *ServiceWrapper {
	spec := &s.DynamoComponentDeploymentSharedSpec
	if spec.Resources == nil {
		spec.Resources = &v1alpha1.Resources{}
	}
	if spec.Resources.Limits == nil {
		spec.Resources.Limits = &v1alpha1.ResourceItem{}
	}
	spec.Resources.Limits.GPU = strconv.Itoa(n)
	return s
}

// Image sets the main container's image.
func (s *ServiceWrapper) Image(image string) *ServiceWrapper {
	s.mainContainer().Image = image
	return s
}

// Command sets the main container's command and args.
func (s *ServiceWrapper) Command(command []string, args ...string) *ServiceWrapper {
	c := s.mainContainer()
	c.Command, c.Args = command, args
	return s
}

// Env adds a service env var.
func (s *ServiceWrapper) Env(name, value string) *ServiceWrapper {
	s.Envs = append(s.Envs, corev1.EnvVar{Name: name, Value: value})
	return s
}

// Multinode sets multinode.nodeCount.
func (s *ServiceWrapper) Multinode(nodeCount int32) *ServiceWrapper {
	s.DynamoComponentDeploymentSharedSpec.Multinode = &v1alpha1.MultinodeSpec{NodeCount: nodeCount}
	return s
}

// VLLMGroups makes the service a vLLM worker in groups of nodeCount pods
// of gpus GPUs each, its tensor parallelism spanning a whole group: what a
// multinode vLLM service needs to render (its launch flags come from the
// command).
func (s *ServiceWrapper) VLLMGroups(nodeCount int32, gpus int) *ServiceWrapper {
	return s.Type(v1alpha1.ComponentTypeWorker).GPUs(gpus).Multinode(nodeCount).
		Command([]string{"python3", "-m", "dynamo.vllm"}, "--tensor-parallel-size", strconv.Itoa(gpus*int(nodeCount)))
}

// ModelRef sets modelRef.name.
func (s *ServiceWrapper) ModelRef(name string) *ServiceWrapper {
	s.DynamoComponentDeploymentSharedSpec.ModelRef = &v1alpha1.ModelReference{Name: name}
	return s
}

// DynamoNamespace sets dynamoNamespace.
func (s *ServiceWrapper) DynamoNamespace(ns string) *ServiceWrapper {
	s.DynamoComponentDeploymentSharedSpec.DynamoNamespace = ptr.To(ns)
	return s
}

// VolumeMount mounts an entry of the graph's spec.pvcs.
func (s *ServiceWrapper) VolumeMount(name, mountPoint string) *ServiceWrapper {
	spec := &s.DynamoComponentDeploymentSharedSpec
	spec.VolumeMounts = append(spec.VolumeMounts, v1alpha1.VolumeMount{Name: name, MountPoint: mountPoint})
	return s
}

// Label sets a label of the service (copied to its workload and pods).
func (s *ServiceWrapper) Label(k, v string) *ServiceWrapper {
	s.Labels = withKey(s.Labels, k, v)
	return s
}

func (s *ServiceWrapper) mainContainer() *corev1.Container {
	e := s.extraPodSpec()
	if e.MainContainer == nil {
		e.MainContainer = &corev1.Container{}
	}
	return e.MainContainer
}

// ComponentWrapper builds a DynamoComponentDeployment.
type ComponentWrapper struct {
	v1alpha1.DynamoComponentDeployment
}

// MakeComponent starts a component from a service builder.
func MakeComponent(name, namespace string, s *ServiceWrapper) *ComponentWrapper {
	return &ComponentWrapper{v1alpha1.DynamoComponentDeployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "DynamoComponentDeployment"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec:       v1alpha1.DynamoComponentDeploymentSpec{DynamoComponentDeploymentSharedSpec: *s.Obj()},
	}}
}

// MakeGraphComponent starts the component the operator renders for service
// of graph: named <graph>-<service in lower case>, labelled as the operator
// labels it, its serviceName the service's.
func MakeGraphComponent(graph, service, namespace string, s *ServiceWrapper) *ComponentWrapper {
	return MakeComponent(graph+"-"+strings.ToLower(service), namespace, s.ServiceName(service)).InGraph(graph)
}

// Obj returns the component.
func (c *ComponentWrapper) Obj() *v1alpha1.DynamoComponentDeployment {
	return &c.DynamoComponentDeployment
}

// Backend sets spec.backendFramework.
func (c *ComponentWrapper) Backend(b v1alpha1.BackendFramework) *ComponentWrapper {
	c.Spec.BackendFramework = b
	return c
}

// Generation sets metadata.generation.
func (c *ComponentWrapper) Generation(n int64) *ComponentWrapper {
	c.ObjectMeta.Generation = n
	return c
}

// Label sets a label on the component's metadata.
func (c *ComponentWrapper) Label(k, v string) *ComponentWrapper {
	c.Labels = withKey(c.Labels, k, v)
	return c
}

// The labels a graph's component carries, as operator/render writes them
// (render's own tests fail if they differ).
const (
	labelGraphName = "nvidia.com/dynamo-graph-deployment-name"
	labelComponent = "nvidia.com/dynamo-component"
	labelManagedBy = "app.kubernetes.io/managed-by"
	managedBy      = "dynamo-operator"
)

// InGraph labels the component as the operator labels the components it
// renders for graph: the graph, the component (its own name) and the
// operator as their manager.
func (c *ComponentWrapper) InGraph(graph string) *ComponentWrapper {
	return c.Label(labelGraphName, graph).Label(labelComponent, c.Name).Label(labelManagedBy, managedBy)
}

// Annotation sets an annotation on the component's metadata.
func (c *ComponentWrapper) Annotation(k, v string) *ComponentWrapper {
	c.ObjectMeta.Annotations = withKey(c.ObjectMeta.Annotations, k, v)
	return c
}

// Annotations replaces the component's annotations, nil included.
func (c *ComponentWrapper) Annotations(a map[string]string) *ComponentWrapper {
	c.ObjectMeta.Annotations = a
	return c
}

// ModelWrapper builds a DynamoModel.
type ModelWrapper struct{ v1alpha1.DynamoModel }

// MakeModel starts a base model named modelName served by workers whose
// modelRef names baseModel.
func MakeModel(name, namespace, modelName, baseModel string) *ModelWrapper {
	return &ModelWrapper{v1alpha1.DynamoModel{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "DynamoModel"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec:       v1alpha1.DynamoModelSpec{ModelName: modelName, BaseModelName: baseModel, ModelType: v1alpha1.ModelTypeBase},
	}}
}

// Obj returns the model.
func (m *ModelWrapper) Obj() *v1alpha1.DynamoModel { return &m.DynamoModel }

// LoRA makes the model a LoRA adapter loaded from uri.
func (m *ModelWrapper) LoRA(uri string) *ModelWrapper {
	m.Spec.ModelType = v1alpha1.ModelTypeLoRA
	m.Spec.Source = &v1alpha1.ModelSource{URI: uri}
	return m
}

// Type sets spec.modelType; "" leaves it to the API server's default
// (base).
func (m *ModelWrapper) Type(t v1alpha1.ModelType) *ModelWrapper {
	m.Spec.ModelType = t
	return m
}

// Generation sets metadata.generation.
func (m *ModelWrapper) Generation(n int64) *ModelWrapper {
	m.ObjectMeta.Generation = n
	return m
}

// SpecLabel sets a label of spec.labels, which the graph's children carry.
func (g *GraphWrapper) SpecLabel(k, v string) *GraphWrapper {
	g.Spec.Labels = withKey(g.Spec.Labels, k, v)
	return g
}

// DynamoComponent sets spec.dynamoComponent (name:version).
func (c *ComponentWrapper) DynamoComponent(ref string) *ComponentWrapper {
	c.Spec.DynamoComponent = ref
	return c
}

// ServiceName sets spec.serviceName, the service the component renders.
func (c *ComponentWrapper) ServiceName(name string) *ComponentWrapper {
	c.Spec.ServiceName = name
	return c
}

// Condition sets a condition of the component's status, as its controller
// reports it.
func (c *ComponentWrapper) Condition(cond metav1.Condition) *ComponentWrapper {
	c.Status.Conditions = append(c.Status.Conditions, cond)
	return c
}

// ObservedGeneration sets status.observedGeneration, the generation the
// component's controller last reported on.
func (c *ComponentWrapper) ObservedGeneration(n int64) *ComponentWrapper {
	c.Status.ObservedGeneration = n
	return c
}

// DeploymentReplicas sets status.service as the controller reports a
// component run by a Deployment of replicas pods, ready of them ready.
func (c *ComponentWrapper) DeploymentReplicas(replicas, ready int32) *ComponentWrapper {
	c.Status.Service = &v1alpha1.ServiceReplicaStatus{ComponentKind: v1alpha1.ComponentKindDeployment,
		ComponentName: c.Name, Replicas: replicas, ReadyReplicas: ptr.To(ready)}
	return c
}

// withKey sets k to v in m, making m if it is nil: labels, annotations and
// selectors are set one key at a time.
func withKey(m map[string]string, k, v string) map[string]string {
	if m == nil {
		m = map[string]string{}
	}
	m[k] = v
	return m
}
