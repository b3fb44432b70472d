package builders

import (
	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1beta1"
)

// Topology sets spec.topologyConstraint: the topology's name and the level
// every pod of the graph is placed within ("" for none).
func (g *GraphWrapper) Topology(profile, packDomain string) *GraphWrapper {
	g.Spec.TopologyConstraint = &v1alpha1.SpecTopologyConstraint{
		TopologyProfile: profile, PackDomain: v1alpha1.TopologyDomain(packDomain)}
	return g
}

// PackDomain sets the service's topologyConstraint.packDomain.
func (s *ServiceWrapper) PackDomain(domain string) *ServiceWrapper {
	s.TopologyConstraint = &v1alpha1.TopologyConstraint{PackDomain: v1alpha1.TopologyDomain(domain)}
	return s
}

// Topology sets the v1beta1 graph's spec.topologyConstraint.
func (g *BetaGraphWrapper) Topology(name, packDomain string) *BetaGraphWrapper {
	g.Spec.TopologyConstraint = &v1beta1.SpecTopologyConstraint{
		ClusterTopologyName: name, PackDomain: v1beta1.TopologyDomain(packDomain)}
	return g
}

// PackDomain sets the v1beta1 component's topologyConstraint.packDomain.
func (c *BetaComponentWrapper) PackDomain(domain string) *BetaComponentWrapper {
	c.TopologyConstraint = &v1beta1.TopologyConstraint{PackDomain: v1beta1.TopologyDomain(domain)}
	return c
}
