package builders

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1beta1"
)

// BetaGraphWrapper builds a DynamoGraphDeployment as a v1beta1 client
// writes it, for tests of conversion and of what the operator reports at
// v1beta1 paths.
type BetaGraphWrapper struct{ v1beta1.DynamoGraphDeployment }

// MakeBetaGraph starts a v1beta1 graph with no components.
func MakeBetaGraph(name, namespace string) *BetaGraphWrapper {
	return &BetaGraphWrapper{v1beta1.DynamoGraphDeployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1beta1.GroupVersion.String(), Kind: "DynamoGraphDeployment"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
	}}
}

// Obj returns the graph.
func (g *BetaGraphWrapper) Obj() *v1beta1.DynamoGraphDeployment { return &g.DynamoGraphDeployment }

// Component appends a component.
func (g *BetaGraphWrapper) Component(c *BetaComponentWrapper) *BetaGraphWrapper {
	g.Spec.Components = append(g.Spec.Components, c.DynamoComponentDeploymentSharedSpec)
	return g
}

// PriorityClassName sets spec.priorityClassName.
func (g *BetaGraphWrapper) PriorityClassName(name string) *BetaGraphWrapper {
	g.Spec.PriorityClassName = name
	return g
}

// BetaComponentWrapper builds one component of a v1beta1 graph.
type BetaComponentWrapper struct {
	v1beta1.DynamoComponentDeploymentSharedSpec
}

// MakeBetaComponent starts a component with its name alone.
func MakeBetaComponent(name string) *BetaComponentWrapper {
	return &BetaComponentWrapper{v1beta1.DynamoComponentDeploymentSharedSpec{ComponentName: name}}
}

// Type sets the component's type.
func (c *BetaComponentWrapper) Type(t v1beta1.ComponentType) *BetaComponentWrapper {
	c.ComponentType = t
	return c
}

// ScalingAdapter sets scalingAdapter.
func (c *BetaComponentWrapper) ScalingAdapter(a *v1beta1.ScalingAdapter) *BetaComponentWrapper {
	c.DynamoComponentDeploymentSharedSpec.ScalingAdapter = a
	return c
}

// Failover sets experimental.failover.
func (c *BetaComponentWrapper) Failover(f *v1beta1.FailoverSpec) *BetaComponentWrapper {
	if c.Experimental == nil {
		c.Experimental = &v1beta1.ExperimentalSpec{}
	}
	c.Experimental.Failover = f
	return c
}

// Replicas sets replicas.
func (c *BetaComponentWrapper) Replicas(n int32) *BetaComponentWrapper {
	c.DynamoComponentDeploymentSharedSpec.Replicas = &n
	return c
}

// Image sets the image of the pod template's main container.
func (c *BetaComponentWrapper) Image(image string) *BetaComponentWrapper {
	c.PodTemplate = &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: image}}}}
	return c
}
