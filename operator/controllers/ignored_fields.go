package controllers

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/render"
)

// ConditionFieldsNotActedOn is True when the graph sets fields the operator
// accepts but does not act on (yet): users are told, never silently ignored.
const ConditionFieldsNotActedOn = "FieldsNotActedOn"

// ignoredFields lists, by field path, what the spec sets that the operator
// does not act on, with why. keptDeployment names the services whose
// multinode setting and engine features are not acted on yet: they still
// run as the Deployment an earlier version rendered (WorkloadPending), and
// are reported in that version's words, so that a graph's status reads the
// same to both (after a downgrade, that version finds its own status and
// has nothing to write). unreported names, by service, the components
// whose status does not say yet whether their workload is kept (just after
// an upgrade, the status is the earlier version's): what depends on it is
// named as not known yet, with the component, rather than guessed.
func ignoredFields(dgd *v1alpha1.DynamoGraphDeployment, keptDeployment map[string]bool, unreported map[string]string) []string {
	var out []string
	for name, svc := range dgd.Spec.Services {
		if svc == nil {
			continue
		}
		path := "spec.services." + name
		if svc.Autoscaling != nil {
			out = append(out, path+".autoscaling (deprecated, no effect; scale with replicas or the DCD scale subresource)")
		}
		if component, ok := unreported[name]; ok {
			for _, f := range fieldsActedOnIfRendered(svc) {
				out = append(out, fmt.Sprintf("%s.%s (not known yet: the component %s has not reported its workload)", path, f.field, component))
			}
			continue
		}
		if keptDeployment[name] {
			for _, f := range fieldsActedOnIfRendered(svc) {
				out = append(out, fmt.Sprintf("%s.%s (%s)", path, f.field, f.kept))
			}
			continue
		}
		out = append(out, engineFieldsNotActedOn(path, render.ComponentName(dgd.Name, name), svc, dgd.Spec.BackendFramework)...)
		if svc.EPPConfig != nil {
			out = append(out, eppConfigNotActedOn(path, dgd.Name, svc))
		}
		if i := svc.Ingress; i != nil && i.UseVirtualService && (i.VirtualServiceGateway == nil || *i.VirtualServiceGateway == "") {
			// With a gateway it is acted on: the component's VirtualService
			// condition says whether the cluster serves Istio's API.
			out = append(out, path+".ingress.useVirtualService (no virtualServiceGateway: an Ingress is created instead)")
		}
	}
	out = append(out, betaOnlyIgnoredFields(dgd)...)
	sort.Strings(out)
	return out
}

// renderedField is a field acted on only in a workload this version
// rendered, with what is said of it while the service runs as a Deployment
// an earlier version rendered: in the words of v0.2, which accepted these
// fields and rendered none of them (the kept pods have none, and nothing is
// created beside them until the service's spec changes).
type renderedField struct {
	field, kept string
	set         func(*v1alpha1.DynamoComponentDeploymentSharedSpec) bool
}

var renderedFields = []renderedField{
	{"eppConfig", "not passed to the endpoint picker yet",
		func(s *v1alpha1.DynamoComponentDeploymentSharedSpec) bool { return s.EPPConfig != nil }},
	{"failover", "not acted on yet",
		func(s *v1alpha1.DynamoComponentDeploymentSharedSpec) bool {
			return s.Failover != nil && s.Failover.Enabled
		}},
	{"gpuMemoryService", "not acted on yet",
		func(s *v1alpha1.DynamoComponentDeploymentSharedSpec) bool {
			return s.GPUMemoryService != nil && s.GPUMemoryService.Enabled
		}},
	{"ingress.useVirtualService", "an Ingress is created instead",
		func(s *v1alpha1.DynamoComponentDeploymentSharedSpec) bool {
			return s.Ingress != nil && s.Ingress.UseVirtualService
		}},
	{"multinode", "run as replicas x nodeCount pods of one Deployment, without leader/worker grouping",
		func(s *v1alpha1.DynamoComponentDeploymentSharedSpec) bool { return s.Multinode != nil }},
}

// fieldsActedOnIfRendered are the renderedFields svc sets.
func fieldsActedOnIfRendered(svc *v1alpha1.DynamoComponentDeploymentSharedSpec) []renderedField {
	var out []renderedField
	for _, f := range renderedFields {
		if f.set(svc) {
			out = append(out, f)
		}
	}
	return out
}

// workloadKept says what a component's status tells of its workload: kept
// as an earlier version rendered it (WorkloadPending True), and whether a
// report of this version says so at all. This version sets WorkloadPending
// on every report; a status with conditions but none of that type is
// another version's (the earlier one's, just after an upgrade, or Dynamo's
// operator's), which does not tell. A component with no status yet is new:
// this version renders its workload.
func workloadKept(dcd *v1alpha1.DynamoComponentDeployment) (kept, reported bool) {
	c := meta.FindStatusCondition(dcd.Status.Conditions, v1alpha1.ConditionWorkloadPending)
	if c == nil {
		return false, len(dcd.Status.Conditions) == 0
	}
	return c.Status == metav1.ConditionTrue, true
}

// setIgnoredFieldsCondition records ignoredFields in st, or removes the
// condition when there are none, from what each component's status tells
// of its workload (workloadKept).
func setIgnoredFieldsCondition(st *v1alpha1.DynamoGraphDeploymentStatus, dgd *v1alpha1.DynamoGraphDeployment,
	components []*v1alpha1.DynamoComponentDeployment, now metav1.Time) {
	kept, unreported := map[string]bool{}, map[string]string{}
	for _, dcd := range components {
		switch k, reported := workloadKept(dcd); {
		case !reported:
			unreported[dcd.Spec.ServiceName] = dcd.Name
		case k:
			kept[dcd.Spec.ServiceName] = true
		}
	}
	fields := ignoredFields(dgd, kept, unreported)
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

// engineFieldsNotActedOn names the engine features of a service that are
// not rendered, with why (render.EngineFeatures), and the part of a
// rendered GPU memory service the operator leaves to the cluster: the GPU
// sharing itself is the DRA driver's and the engines', which a pod's
// readiness shows but the operator neither provides nor checks.
func engineFieldsNotActedOn(path, component string, svc *v1alpha1.DynamoComponentDeploymentSharedSpec, framework v1alpha1.BackendFramework) []string {
	gms, _, notRendered := render.EngineFeatures(svc, framework)
	var out []string
	for _, field := range slices.Sorted(maps.Keys(notRendered)) {
		out = append(out, fmt.Sprintf("%s.%s (not rendered: %s)", path, field, notRendered[field]))
	}
	if gms {
		out = append(out, fmt.Sprintf("%s.gpuMemoryService (rendered: ResourceClaimTemplate %s of DeviceClass %s, sidecar %s; "+
			"sharing the GPUs needs a DRA driver serving that DeviceClass, which the operator does not check)",
			path, render.GMSResourceClaimTemplateName(component), render.GMSDeviceClass(svc), render.GMSContainerName))
	}
	return out
}

// eppConfigNotActedOn says what of an eppConfig the operator leaves to the
// cluster: the picker is rendered with its configuration and the graph owns
// the InferencePool it picks for (its InferencePool condition says whether
// the cluster serves that API), but the Gateway routing to the pool is the
// user's, which the operator does not create.
func eppConfigNotActedOn(path, graph string, svc *v1alpha1.DynamoComponentDeploymentSharedSpec) string {
	if svc.ComponentType != v1alpha1.ComponentTypeEPP {
		return path + ".eppConfig (not rendered: only a component of type epp runs an endpoint picker)"
	}
	return fmt.Sprintf("%s.eppConfig (rendered: the endpoint picker reads it from /etc/epp/%s and picks for the InferencePool %s, "+
		"which the graph's %s condition reports; the Gateway routing to the pool is not created by the operator)",
		path, render.EPPConfigKey, render.EPPPoolName(graph), ConditionInferencePool)
}
