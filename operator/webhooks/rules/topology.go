package rules

import (
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

// graphTopology: Dynamo's rules of a graph's topology constraints, so that
// a graph either operator accepts the other accepts too. A service's
// constraint needs the graph's (its topologyProfile); a graph's constraint
// without a packDomain places nothing by itself, so every service must then
// carry its own. Whether a packDomain is one of the operator's levels is the
// component's status to say (render.TopologyRequirements): the levels are
// the operator's flags, not the webhook's.
func graphTopology(spec *v1alpha1.DynamoGraphDeploymentSpec) field.ErrorList {
	var errs field.ErrorList
	graph := spec.TopologyConstraint
	services := field.NewPath("spec", "services")
	for _, name := range slices.Sorted(maps.Keys(spec.Services)) {
		svc := spec.Services[name]
		if svc == nil {
			continue
		}
		switch {
		case graph == nil && svc.TopologyConstraint != nil:
			errs = append(errs, field.Required(field.NewPath("spec", "topologyConstraint"),
				"a service's topologyConstraint ("+name+") needs the graph's, with its topologyProfile"))
		case graph != nil && graph.PackDomain == "" && svc.TopologyConstraint == nil:
			errs = append(errs, field.Required(services.Child(name, "topologyConstraint"),
				"spec.topologyConstraint sets no packDomain: set one there, or a topologyConstraint on every service"))
		}
	}
	return errs
}
