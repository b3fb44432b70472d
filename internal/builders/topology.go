package builders

import "github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"

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
