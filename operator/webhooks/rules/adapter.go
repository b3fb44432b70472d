package rules

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/render"
)

// PlannerServiceAccount is the name of the ServiceAccount Dynamo's planner
// runs as in a graph's namespace. Dynamo's webhook lets it change a graph's
// replicas where an adapter owns them, and so does this one, with a warning.
const PlannerServiceAccount = "planner-serviceaccount"

// AdapterReplicas refuses, as Dynamo's webhook does, an update that changes
// the replicas (unset counts as 1) of a service that has a scaling adapter
// before or after it: the adapter owns them, and they are scaled through it
// (kubectl scale dgdsa, HPA, KEDA, the planner). Opting out and changing
// replicas are two edits. requester is the user the API server
// authenticated; a change by Dynamo's planner (PlannerServiceAccount) is let
// through with a warning that it has no effect while the adapter exists.
func AdapterReplicas(old, cur *v1alpha1.DynamoGraphDeployment, requester string) (field.ErrorList, []string) {
	owned := append(render.ScalingAdapterServices(old), render.ScalingAdapterServices(cur)...)
	slices.Sort(owned)
	var errs field.ErrorList
	var warnings []string
	for _, name := range slices.Compact(owned) {
		before, after := old.Spec.Services[name], cur.Spec.Services[name]
		if before == nil || after == nil || ptr.Deref(before.Replicas, 1) == ptr.Deref(after.Replicas, 1) {
			continue
		}
		path := field.NewPath("spec", "services").Child(name, "replicas")
		if isPlanner(requester) {
			warnings = append(warnings, path.String()+": the scaling adapter "+render.ScalingAdapterName(cur.Name, name)+
				" owns these replicas; the change takes effect only if the service opts out")
			continue
		}
		errs = append(errs, field.Forbidden(path, "cannot be modified directly when scaling adapter is enabled; "+
			"scale or update the related DynamoGraphDeploymentScalingAdapter "+render.ScalingAdapterName(cur.Name, name)+" instead"))
	}
	return errs.WithOrigin(ReasonAdapterReplicas), warnings
}

// isPlanner says whether user is a ServiceAccount named
// PlannerServiceAccount, in any namespace.
func isPlanner(user string) bool {
	parts := strings.Split(user, ":")
	return len(parts) == 4 && parts[0] == "system" && parts[1] == "serviceaccount" && parts[3] == PlannerServiceAccount
}
