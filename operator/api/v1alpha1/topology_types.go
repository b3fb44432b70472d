package v1alpha1

// SpecTopologyConstraint is a graph's placement constraint, in Dynamo's
// v1alpha1 words (v1beta1 calls the profile clusterTopologyName).
type SpecTopologyConstraint struct {
	// TopologyProfile names the topology the levels come from. The operator
	// maps each level to a node label itself (its --topology-domain-labels),
	// so the name is kept but reads nothing.
	// +kubebuilder:validation:MinLength=1
	TopologyProfile string `json:"topologyProfile"`
	// PackDomain is the level every pod of the graph is placed within (one
	// domain of it for the whole graph); may be left out when only services
	// set one.
	// +optional
	PackDomain TopologyDomain `json:"packDomain,omitempty"`
}

// TopologyConstraint is a service's placement constraint: the level its pods
// are placed within (a multinode service: each group's pods); no wider than
// the graph's.
type TopologyConstraint struct {
	// PackDomain is the level, such as rack or block.
	PackDomain TopologyDomain `json:"packDomain"`
}

// TopologyDomain names a topology level, such as zone, block, rack or host.
// +kubebuilder:validation:Pattern=`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`
type TopologyDomain string
