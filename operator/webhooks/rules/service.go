package rules

import (
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/render"
)

// serviceRules applies every rule of one service spec, shared by the
// services of a graph and by a DynamoComponentDeployment. graphPVCs are the
// claims volumeMounts may name; checkMounts is false for a component
// deployment, which cannot see its graph's claims.
func serviceRules(spec *v1alpha1.DynamoComponentDeploymentSharedSpec, path *field.Path,
	graphPVCs []v1alpha1.GraphPVC, checkMounts bool) (field.ErrorList, []string) {
	var errs field.ErrorList
	errs = append(errs, serviceResources(spec, path).WithOrigin(ReasonResources)...)
	errs = append(errs, serviceResourceNames(spec, path).WithOrigin(ReasonResources)...)
	if checkMounts {
		errs = append(errs, serviceVolumeMounts(spec, graphPVCs, path).WithOrigin(ReasonVolumeMount)...)
	}
	errs = append(errs, serviceExtraPodSpec(spec, path).WithOrigin(ReasonExtraPodSpec)...)
	errs = append(errs, serviceSharedMemory(spec, path).WithOrigin(ReasonSharedMemory)...)
	errs = append(errs, serviceMetadata(spec, path).WithOrigin(ReasonMetadata)...)
	errs = append(errs, serviceReferences(spec, path).WithOrigin(ReasonReference)...)
	return errs, append(serviceDeprecations(spec, path), serviceGenericType(spec, path)...)
}

// serviceGenericType: a componentType Dynamo gives no meaning (such as main)
// is accepted, as Dynamo's CRD accepts any string; the user is told it runs
// as a generic component, without the default probes of the known types.
func serviceGenericType(spec *v1alpha1.DynamoComponentDeploymentSharedSpec, path *field.Path) []string {
	if spec.ComponentType == "" || slices.Contains(v1alpha1.ComponentTypes, spec.ComponentType) {
		return nil
	}
	return []string{path.Child("componentType").String() + ": \"" + string(spec.ComponentType) +
		"\" is not one of frontend, worker, prefill, decode, planner, epp, default: it runs as a generic component " +
		"(the runtime's env and system port, no default probes)"}
}

// serviceResources: quantities must parse and GPU counts be whole numbers,
// as rendering the container resources requires.
func serviceResources(spec *v1alpha1.DynamoComponentDeploymentSharedSpec, path *field.Path) field.ErrorList {
	return render.ValidateResources(spec.Resources, path.Child("resources"))
}

// serviceResourceNames: gpuType and custom resource names become keys of
// the container's resources, which the API server only accepts as
// qualified names (e.g. nvidia.com/gpu, ephemeral-storage).
func serviceResourceNames(spec *v1alpha1.DynamoComponentDeploymentSharedSpec, path *field.Path) field.ErrorList {
	if spec.Resources == nil {
		return nil
	}
	var errs field.ErrorList
	check := func(item *v1alpha1.ResourceItem, p *field.Path) {
		if item == nil {
			return
		}
		if item.GPUType != "" {
			if msgs := validation.IsQualifiedName(item.GPUType); len(msgs) > 0 {
				errs = append(errs, field.Invalid(p.Child("gpuType"), item.GPUType,
					"must be a resource name such as nvidia.com/gpu: "+strings.Join(msgs, "; ")))
			}
		}
		for _, name := range slices.Sorted(maps.Keys(item.Custom)) {
			if msgs := validation.IsQualifiedName(name); len(msgs) > 0 {
				errs = append(errs, field.Invalid(p.Child("custom").Key(name), name,
					"must be a resource name such as ephemeral-storage: "+strings.Join(msgs, "; ")))
			}
		}
	}
	check(spec.Resources.Requests, path.Child("resources", "requests"))
	check(spec.Resources.Limits, path.Child("resources", "limits"))
	return errs
}

// serviceVolumeMounts: each volumeMounts[].name must be an entry of the
// graph's spec.pvcs.
func serviceVolumeMounts(spec *v1alpha1.DynamoComponentDeploymentSharedSpec, graphPVCs []v1alpha1.GraphPVC, path *field.Path) field.ErrorList {
	return render.ValidateVolumeMounts(spec, graphPVCs, path)
}

// serviceExtraPodSpec: extraPodSpec must merge into the generated pod.
func serviceExtraPodSpec(spec *v1alpha1.DynamoComponentDeploymentSharedSpec, path *field.Path) field.ErrorList {
	return render.ValidateExtraPodSpec(spec.ExtraPodSpec, path.Child("extraPodSpec"))
}

// serviceSharedMemory: a /dev/shm size, when given and not disabled, must be
// positive; a zero-sized memory volume is never what was meant.
func serviceSharedMemory(spec *v1alpha1.DynamoComponentDeploymentSharedSpec, path *field.Path) field.ErrorList {
	shm := spec.SharedMemory
	if shm == nil || shm.Disabled || shm.Size == nil || shm.Size.Sign() > 0 {
		return nil
	}
	return field.ErrorList{field.Invalid(path.Child("sharedMemory", "size"), shm.Size.String(),
		"must be greater than 0; to run without /dev/shm set sharedMemory.disabled: true (in v1beta1, sharedMemorySize: \"0\")")}
}

// serviceDeprecations: autoscaling is accepted for compatibility but has no
// effect, which the user is told at admission.
func serviceDeprecations(spec *v1alpha1.DynamoComponentDeploymentSharedSpec, path *field.Path) []string {
	if spec.Autoscaling == nil {
		return nil
	}
	return []string{path.Child("autoscaling").String() +
		": deprecated and has no effect; scale with replicas, or through the service's DynamoComponentDeployment's scale subresource " +
		"(kubectl scale dcd, a HorizontalPodAutoscaler with scaleTargetRef kind DynamoComponentDeployment): " +
		"the graph then leaves that service's replicas alone until you change them in the graph"}
}

// serviceReferences: names of Secrets and claims the service refers to.
func serviceReferences(spec *v1alpha1.DynamoComponentDeploymentSharedSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if spec.EnvFromSecret != nil && *spec.EnvFromSecret != "" {
		errs = append(errs, objectName(path.Child("envFromSecret"), *spec.EnvFromSecret, "Secret")...)
	}
	if spec.FrontendSidecar != nil && spec.FrontendSidecar.EnvFromSecret != nil && *spec.FrontendSidecar.EnvFromSecret != "" {
		errs = append(errs, objectName(path.Child("frontendSidecar", "envFromSecret"), *spec.FrontendSidecar.EnvFromSecret, "Secret")...)
	}
	if spec.PVC != nil && spec.PVC.Name != nil && *spec.PVC.Name != "" {
		errs = append(errs, objectName(path.Child("pvc", "name"), *spec.PVC.Name, "PersistentVolumeClaim")...)
	}
	if spec.Ingress != nil && spec.Ingress.TLS != nil && spec.Ingress.TLS.SecretName != "" {
		errs = append(errs, objectName(path.Child("ingress", "tls", "secretName"), spec.Ingress.TLS.SecretName, "Secret")...)
	}
	return errs
}
