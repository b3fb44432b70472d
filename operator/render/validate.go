package render

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

// The functions of this file let the admission webhooks reject, at the API
// server, what rendering would later fail on. They call the very code that
// renders the workload, so each rule lives in one place and the webhook and
// the controllers cannot disagree.

// ValidateResources reports the quantities and GPU counts of Dynamo's short
// resource form that cannot be turned into container resources.
func ValidateResources(res *v1alpha1.Resources, path *field.Path) field.ErrorList {
	_, errs := resourceRequirements(res, path)
	return errs
}

// ValidateVolumeMounts reports volumeMounts that name no entry of the
// graph's spec.pvcs. path is the service's path.
func ValidateVolumeMounts(spec *v1alpha1.DynamoComponentDeploymentSharedSpec, graphPVCs []v1alpha1.GraphPVC, path *field.Path) field.ErrorList {
	_, _, errs := podStorage(spec, graphPVCs, path)
	return errs
}

// ValidateExtraPodSpec reports an extraPodSpec that cannot be merged into a
// generated pod. path is the extraPodSpec's path.
func ValidateExtraPodSpec(extra *v1alpha1.ExtraPodSpec, path *field.Path) field.ErrorList {
	pod := corev1.PodSpec{Containers: []corev1.Container{{Name: MainContainerName}}}
	if _, err := mergeExtraPodSpec(pod, extra, path); err != nil {
		return field.ErrorList{err}
	}
	return nil
}
