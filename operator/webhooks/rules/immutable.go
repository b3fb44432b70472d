package rules

import (
	"fmt"
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

// Fields that decide what kind of workload is built cannot change in place:
// the operator would have to replace running pods wholesale, which is what
// deleting and recreating the object does, explicitly.

// immutable returns the error for a changed immutable field of kind.
func immutable(path *field.Path, newValue any, kind string) *field.Error {
	return field.Invalid(path, newValue, fmt.Sprintf("field is immutable; delete and recreate the %s to change it", kind))
}

// graphImmutable: spec.backendFramework and each service's single- or
// multinode shape (whether multinode is set). A service added or removed is
// not a shape change; a changed nodeCount of a multinode service is allowed.
func graphImmutable(old, cur *v1alpha1.DynamoGraphDeployment) field.ErrorList {
	const kind = "DynamoGraphDeployment"
	var errs field.ErrorList
	if old.Spec.BackendFramework != cur.Spec.BackendFramework {
		errs = append(errs, immutable(field.NewPath("spec", "backendFramework"), cur.Spec.BackendFramework, kind))
	}
	for _, name := range slices.Sorted(maps.Keys(cur.Spec.Services)) {
		before, after := old.Spec.Services[name], cur.Spec.Services[name]
		if before == nil || after == nil {
			continue
		}
		if e := multinodeShape(before, after, field.NewPath("spec", "services").Child(name, "multinode"), kind); e != nil {
			errs = append(errs, e)
		}
	}
	return errs
}

// componentImmutable: spec.dynamoComponent, spec.backendFramework and the
// single- or multinode shape of a DynamoComponentDeployment.
func componentImmutable(old, cur *v1alpha1.DynamoComponentDeployment) field.ErrorList {
	const kind = "DynamoComponentDeployment"
	var errs field.ErrorList
	if old.Spec.DynamoComponent != cur.Spec.DynamoComponent {
		errs = append(errs, immutable(field.NewPath("spec", "dynamoComponent"), cur.Spec.DynamoComponent, kind))
	}
	if old.Spec.BackendFramework != cur.Spec.BackendFramework {
		errs = append(errs, immutable(field.NewPath("spec", "backendFramework"), cur.Spec.BackendFramework, kind))
	}
	if e := multinodeShape(&old.Spec.DynamoComponentDeploymentSharedSpec, &cur.Spec.DynamoComponentDeploymentSharedSpec,
		field.NewPath("spec", "multinode"), kind); e != nil {
		errs = append(errs, e)
	}
	return errs
}

// modelImmutable: spec.modelType and spec.baseModelName of a DynamoModel,
// which decide which workers load it and how.
func modelImmutable(old, cur *v1alpha1.DynamoModel) field.ErrorList {
	const kind = "DynamoModel"
	var errs field.ErrorList
	// An empty type is the schema default, base, on objects read without it.
	if modelType(old) != modelType(cur) {
		errs = append(errs, immutable(field.NewPath("spec", "modelType"), cur.Spec.ModelType, kind))
	}
	if old.Spec.BaseModelName != cur.Spec.BaseModelName {
		errs = append(errs, immutable(field.NewPath("spec", "baseModelName"), cur.Spec.BaseModelName, kind))
	}
	return errs
}

func modelType(m *v1alpha1.DynamoModel) v1alpha1.ModelType {
	if m.Spec.ModelType == "" {
		return v1alpha1.ModelTypeBase
	}
	return m.Spec.ModelType
}

func multinodeShape(before, after *v1alpha1.DynamoComponentDeploymentSharedSpec, path *field.Path, kind string) *field.Error {
	if (before.Multinode == nil) == (after.Multinode == nil) {
		return nil
	}
	shape := func(s *v1alpha1.DynamoComponentDeploymentSharedSpec) string {
		if s.Multinode == nil {
			return "single-node"
		}
		return "multinode"
	}
	return field.Invalid(path, field.OmitValueType{}, fmt.Sprintf(
		"field is immutable: the service was %s and would become %s; delete and recreate the %s to change it",
		shape(before), shape(after), kind))
}
