package rules

import (
	"k8s.io/apimachinery/pkg/util/validation/field"
	"maps"
	"slices"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

// The Validate* functions apply every webhook rule of one kind to an object
// and return all violations and warnings. They are pure, so the rules are
// unit tested and fuzzed without an API server.

// ValidateGraph applies the rules of a DynamoGraphDeployment.
func ValidateGraph(dgd *v1alpha1.DynamoGraphDeployment) (field.ErrorList, []string) {
	errs := graphChildNames(dgd).WithOrigin(ReasonChildName)
	errs = append(errs, graphMetadata(&dgd.Spec).WithOrigin(ReasonMetadata)...)
	errs = append(errs, graphClaims(&dgd.Spec).WithOrigin(ReasonReference)...)
	errs = append(errs, componentRef(dgd.Spec.DynamoComponent, field.NewPath("spec", "dynamoComponent")).WithOrigin(ReasonComponentRef)...)
	errs = append(errs, graphTopology(&dgd.Spec).WithOrigin(ReasonTopology)...)
	var warnings []string
	for _, name := range slices.Sorted(maps.Keys(dgd.Spec.Services)) {
		svc := dgd.Spec.Services[name]
		if svc == nil {
			continue // graphChildNames reports it
		}
		e, w := serviceRules(svc, field.NewPath("spec", "services").Child(name), dgd.Spec.PVCs, true)
		errs = append(errs, e...)
		warnings = append(warnings, w...)
	}
	return errs, warnings
}

// ValidateGraphUpdate applies the rules of an update: the immutable fields
// and the rules of the new object, without the violations old already had.
func ValidateGraphUpdate(old, cur *v1alpha1.DynamoGraphDeployment) (field.ErrorList, []string) {
	errs, warnings := ValidateGraph(cur)
	oldErrs, _ := ValidateGraph(old)
	return append(graphImmutable(old, cur).WithOrigin(ReasonImmutable), ratchet(errs, oldErrs)...), warnings
}

// ValidateComponentDeployment applies the rules of a DynamoComponentDeployment.
func ValidateComponentDeployment(dcd *v1alpha1.DynamoComponentDeployment) (field.ErrorList, []string) {
	errs := componentChildNames(dcd).WithOrigin(ReasonChildName)
	errs = append(errs, componentRef(dcd.Spec.DynamoComponent, field.NewPath("spec", "dynamoComponent")).WithOrigin(ReasonComponentRef)...)
	// Its graph's claims are not visible here; the graph's webhook checks
	// volumeMounts against them.
	e, warnings := serviceRules(&dcd.Spec.DynamoComponentDeploymentSharedSpec, field.NewPath("spec"), nil, false)
	return append(errs, e...), warnings
}

// ValidateComponentDeploymentUpdate: immutable fields plus the new object's
// rules, ratcheted.
func ValidateComponentDeploymentUpdate(old, cur *v1alpha1.DynamoComponentDeployment) (field.ErrorList, []string) {
	errs, warnings := ValidateComponentDeployment(cur)
	oldErrs, _ := ValidateComponentDeployment(old)
	return append(componentImmutable(old, cur).WithOrigin(ReasonImmutable), ratchet(errs, oldErrs)...), warnings
}

// ValidateModel applies the rules of a DynamoModel. Its create-time rules
// are all in the CRD schema; the webhook judges its updates.
func ValidateModel(*v1alpha1.DynamoModel) (field.ErrorList, []string) { return nil, nil }

// ValidateModelUpdate: spec.modelType and spec.baseModelName are immutable.
func ValidateModelUpdate(old, cur *v1alpha1.DynamoModel) (field.ErrorList, []string) {
	errs, warnings := ValidateModel(cur)
	oldErrs, _ := ValidateModel(old)
	return append(modelImmutable(old, cur).WithOrigin(ReasonImmutable), ratchet(errs, oldErrs)...), warnings
}

// ValidateComponent applies the rules of a DynamoComponent.
func ValidateComponent(dc *v1alpha1.DynamoComponent) (field.ErrorList, []string) {
	return componentBuild(&dc.Spec), nil
}

// ValidateComponentUpdate: the new object's rules, ratcheted.
func ValidateComponentUpdate(old, cur *v1alpha1.DynamoComponent) (field.ErrorList, []string) {
	errs, warnings := ValidateComponent(cur)
	oldErrs, _ := ValidateComponent(old)
	return ratchet(errs, oldErrs), warnings
}

// Reasons name the rule a violation breaks, as errors' Origin and as the
// reason label of the denial metric.
const (
	ReasonChildName    = "child_name_invalid"
	ReasonResources    = "resource_invalid"
	ReasonVolumeMount  = "volume_mount_unknown_pvc"
	ReasonExtraPodSpec = "extra_pod_spec_unmergeable"
	ReasonSharedMemory = "shared_memory_size_invalid"
	ReasonMetadata     = "propagated_metadata_invalid"
	ReasonReference    = "reference_name_invalid"
	ReasonComponentRef = "component_ref_invalid"
	ReasonBuildTimeout = "build_timeout_invalid"
	ReasonImmutable    = "immutable_field_changed"
	ReasonTopology     = "topology_constraint_incomplete"
	// ReasonAdapterReplicas: the replicas of a service its scaling adapter
	// owns changed in the graph (AdapterReplicas).
	ReasonAdapterReplicas = "adapter_owned_replicas_changed"
)

// ratchet drops the violations the old object already had, so an object
// stored before a rule existed can still be updated (labels, finalizers, a
// fix elsewhere) without first fixing everything.
func ratchet(errs, old field.ErrorList) field.ErrorList {
	if len(old) == 0 {
		return errs
	}
	had := make(map[string]bool, len(old))
	for _, e := range old {
		had[e.Error()] = true
	}
	var out field.ErrorList
	for _, e := range errs {
		if !had[e.Error()] {
			out = append(out, e)
		}
	}
	return out
}
