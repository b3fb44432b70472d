package controllers

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

// ConditionFieldsNotActedOn is True when the graph sets fields the operator
// accepts but does not act on (yet): users are told, never silently ignored.
const ConditionFieldsNotActedOn = "FieldsNotActedOn"

// ignoredFields lists, by field path, what the spec sets that the operator
// does not act on, with why. keptDeployment names the services whose
// multinode setting is not acted on yet: they still run as the Deployment
// an earlier version rendered (WorkloadPending), and are reported in that
// version's words, so that a graph's status reads the same to both.
func ignoredFields(dgd *v1alpha1.DynamoGraphDeployment, keptDeployment map[string]bool) []string {
	var out []string
	for name, svc := range dgd.Spec.Services {
		if svc == nil {
			continue
		}
		path := "spec.services." + name
		if svc.Multinode != nil && keptDeployment[name] {
			out = append(out, path+".multinode (run as replicas x nodeCount pods of one Deployment, without leader/worker grouping)")
		}
		if svc.Autoscaling != nil {
			out = append(out, path+".autoscaling (deprecated, no effect; scale with replicas or the DCD scale subresource)")
		}
		if svc.Failover != nil && svc.Failover.Enabled {
			out = append(out, path+".failover (not acted on yet)")
		}
		if svc.GPUMemoryService != nil && svc.GPUMemoryService.Enabled {
			out = append(out, path+".gpuMemoryService (not acted on yet)")
		}
		if svc.EPPConfig != nil {
			out = append(out, path+".eppConfig (not passed to the endpoint picker yet)")
		}
		if svc.Ingress != nil && svc.Ingress.UseVirtualService {
			out = append(out, path+".ingress.useVirtualService (an Ingress is created instead)")
		}
	}
	out = append(out, betaOnlyIgnoredFields(dgd)...)
	sort.Strings(out)
	return out
}

// setIgnoredFieldsCondition records ignoredFields in st, or removes the
// condition when there are none.
func setIgnoredFieldsCondition(st *v1alpha1.DynamoGraphDeploymentStatus, dgd *v1alpha1.DynamoGraphDeployment,
	components []*v1alpha1.DynamoComponentDeployment, now metav1.Time) {
	kept := map[string]bool{}
	for _, dcd := range components {
		if meta.IsStatusConditionTrue(dcd.Status.Conditions, v1alpha1.ConditionWorkloadPending) {
			kept[dcd.Spec.ServiceName] = true
		}
	}
	fields := ignoredFields(dgd, kept)
	if len(fields) == 0 {
		meta.RemoveStatusCondition(&st.Conditions, ConditionFieldsNotActedOn)
		return
	}
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{
		Type:               ConditionFieldsNotActedOn,
		Status:             metav1.ConditionTrue,
		Reason:             "AcceptedNotActedOn",
		Message:            fmt.Sprintf("accepted but not acted on: %s", strings.Join(fields, "; ")),
		ObservedGeneration: dgd.Generation,
		LastTransitionTime: now,
	})
}
