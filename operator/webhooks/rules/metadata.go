package rules

import (
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

// Labels and annotations written in a spec are copied onto child objects;
// the API server validates them only there, where the failure would be a
// reconcile error the user never sees at apply time. These rules check them
// where they are written.

// graphMetadata: spec.labels and spec.annotations, propagated to every child.
func graphMetadata(spec *v1alpha1.DynamoGraphDeploymentSpec) field.ErrorList {
	path := field.NewPath("spec")
	return propagated(spec.Labels, spec.Annotations, path)
}

// serviceMetadata: a service's labels and annotations (its workload and
// pods), extraPodMetadata (its pods) and ingress labels and annotations.
func serviceMetadata(spec *v1alpha1.DynamoComponentDeploymentSharedSpec, path *field.Path) field.ErrorList {
	errs := propagated(spec.Labels, spec.Annotations, path)
	if m := spec.ExtraPodMetadata; m != nil {
		errs = append(errs, propagated(m.Labels, m.Annotations, path.Child("extraPodMetadata"))...)
	}
	if in := spec.Ingress; in != nil {
		errs = append(errs, propagated(in.Labels, in.Annotations, path.Child("ingress"))...)
	}
	return errs
}

func propagated(labels, annotations map[string]string, path *field.Path) field.ErrorList {
	errs := metav1validation.ValidateLabels(labels, path.Child("labels"))
	return append(errs, apivalidation.ValidateAnnotations(annotations, path.Child("annotations"))...)
}
