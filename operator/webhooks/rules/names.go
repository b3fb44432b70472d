package rules

import (
	"strings"

	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/render"
)

// graphChildNames rejects graphs whose services would get component,
// Deployment or Service names Kubernetes refuses (DNS-1035 label, at most 63
// characters) or two services that would share one. The rule is the one
// render.Components applies when it names the children, so the webhook
// refuses exactly what the controller could not create.
func graphChildNames(dgd *v1alpha1.DynamoGraphDeployment) field.ErrorList {
	_, err := render.Components(dgd)
	return fieldErrors(err, field.NewPath("spec", "services"))
}

// componentChildNames rejects a DynamoComponentDeployment whose own name
// cannot name its Deployment and Service (DNS-1035 label), or, with a
// modelRef, its headless model Service.
func componentChildNames(dcd *v1alpha1.DynamoComponentDeployment) field.ErrorList {
	var errs field.ErrorList
	name := field.NewPath("metadata", "name")
	if msgs := validation.IsDNS1035Label(dcd.Name); len(msgs) > 0 {
		errs = append(errs, field.Invalid(name, dcd.Name,
			"the component's Deployment and Service take its name, which must be a DNS-1035 label: "+strings.Join(msgs, "; ")))
		return errs
	}
	if dcd.Spec.ModelRef != nil {
		model := render.ModelServiceName(dcd.Name)
		if msgs := validation.IsDNS1035Label(model); len(msgs) > 0 {
			errs = append(errs, field.Invalid(name, dcd.Name,
				"with spec.modelRef the component gets a Service named <name>-model ("+model+"): "+strings.Join(msgs, "; ")))
		}
	}
	return errs
}

// fieldErrors unpacks an aggregate of field errors made by render; anything
// else is reported as an internal error at path.
func fieldErrors(err error, path *field.Path) field.ErrorList {
	if err == nil {
		return nil
	}
	var out field.ErrorList
	agg, ok := err.(utilerrors.Aggregate)
	if !ok {
		return field.ErrorList{field.InternalError(path, err)}
	}
	for _, e := range agg.Errors() {
		if fe, ok := e.(*field.Error); ok {
			out = append(out, fe)
		} else {
			out = append(out, field.InternalError(path, e))
		}
	}
	return out
}
