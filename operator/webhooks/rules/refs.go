package rules

import (
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

// objectName: a reference to a Secret or claim must be a name such an
// object can have (DNS-1123 subdomain), or it can never be found.
func objectName(path *field.Path, name, kind string) field.ErrorList {
	if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
		return field.ErrorList{field.Invalid(path, name, "must be a valid "+kind+" name: "+strings.Join(msgs, "; "))}
	}
	return nil
}

// graphClaims: the claims of spec.pvcs are created or mounted under their
// name, which must be a valid PersistentVolumeClaim name.
func graphClaims(spec *v1alpha1.DynamoGraphDeploymentSpec) field.ErrorList {
	var errs field.ErrorList
	for i, p := range spec.PVCs {
		errs = append(errs, objectName(field.NewPath("spec", "pvcs").Index(i).Child("name"), p.Name, "PersistentVolumeClaim")...)
	}
	return errs
}

// componentRefPattern is the pattern of DynamoComponent spec.dynamoComponent
// in the CRD schema: a reference that does not match it names an artifact
// that can never exist.
var componentRefPattern = regexp.MustCompile(`^[a-z0-9]([-a-z0-9_.]*[a-z0-9])?:[A-Za-z0-9_][-A-Za-z0-9_.]*$`)

// componentRef: spec.dynamoComponent of a graph or component deployment is
// name:version, like the DynamoComponent it refers to.
func componentRef(ref string, path *field.Path) field.ErrorList {
	if ref == "" || componentRefPattern.MatchString(ref) {
		return nil
	}
	return field.ErrorList{field.Invalid(path, ref,
		"must be <name>:<version> like a DynamoComponent's spec.dynamoComponent, e.g. frontend:jh2o6dqzpsgfued4")}
}

// componentBuild: the secrets a DynamoComponent's build uses must be valid
// Secret names, and its build timeout positive.
func componentBuild(spec *v1alpha1.DynamoComponentSpec) field.ErrorList {
	path := field.NewPath("spec")
	var errs field.ErrorList
	if spec.DockerConfigJSONSecretName != "" {
		errs = append(errs, objectName(path.Child("dockerConfigJsonSecretName"), spec.DockerConfigJSONSecretName, "Secret").WithOrigin(ReasonReference)...)
	}
	for i, s := range spec.ImagePullSecrets {
		errs = append(errs, objectName(path.Child("imagePullSecrets").Index(i).Child("name"), s.Name, "Secret").WithOrigin(ReasonReference)...)
	}
	if t := spec.ImageBuildTimeout; t != nil && t.Duration <= 0 {
		errs = append(errs, field.Invalid(path.Child("imageBuildTimeout"), t.Duration.String(),
			"must be greater than 0, e.g. 1h").WithOrigin(ReasonBuildTimeout))
	}
	return errs
}
