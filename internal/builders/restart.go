package builders

import (
	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

// Restart sets spec.restart: id, and a strategy of type t in order (t ""
// leaves the strategy out).
func (g *GraphWrapper) Restart(id string, t v1alpha1.RestartStrategyType, order ...string) *GraphWrapper {
	g.Spec.Restart = &v1alpha1.Restart{ID: id}
	if t != "" || len(order) > 0 {
		g.Spec.Restart.Strategy = &v1alpha1.RestartStrategy{Type: t, Order: order}
	}
	return g
}

// RestartStatus sets status.restart as the operator reports it.
func (g *GraphWrapper) RestartStatus(id string, phase v1alpha1.RestartPhase, inProgress ...string) *GraphWrapper {
	g.Status.Restart = &v1alpha1.RestartStatus{ObservedID: id, Phase: phase, InProgress: inProgress}
	return g
}

// PodAnnotation sets an annotation of the service's extraPodMetadata, which
// its pods carry.
func (s *ServiceWrapper) PodAnnotation(k, v string) *ServiceWrapper {
	spec := &s.DynamoComponentDeploymentSharedSpec
	if spec.ExtraPodMetadata == nil {
		spec.ExtraPodMetadata = &v1alpha1.ExtraPodMetadata{}
	}
	spec.ExtraPodMetadata.Annotations = withKey(spec.ExtraPodMetadata.Annotations, k, v)
	return s
}
