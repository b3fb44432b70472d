package render

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

// ComponentName is the name of the DynamoComponentDeployment of a graph's
// service, and of its workload and Service: "<graph>-<lowercased service>".
func ComponentName(graphName, serviceName string) string {
	return graphName + "-" + strings.ToLower(serviceName)
}

// ModelServiceName is the name of the headless Service of a component that
// serves a model (see ModelService).
func ModelServiceName(componentName string) string {
	return componentName + "-model"
}

// Components returns the desired DynamoComponentDeployments of a graph, one
// per service, sorted by name. They carry no owner reference: the controller
// sets it. The error, an aggregate of field errors, names each service whose
// children could not be created as named.
func Components(dgd *v1alpha1.DynamoGraphDeployment) ([]*v1alpha1.DynamoComponentDeployment, error) {
	servicesPath := field.NewPath("spec", "services")
	var errs field.ErrorList
	out := make([]*v1alpha1.DynamoComponentDeployment, 0, len(dgd.Spec.Services))
	serviceOf := map[string]string{} // component name -> service key
	for _, serviceName := range slices.Sorted(maps.Keys(dgd.Spec.Services)) {
		service := dgd.Spec.Services[serviceName]
		name := ComponentName(dgd.Name, serviceName)
		if err := checkComponentName(service, name, serviceOf, servicesPath.Child(serviceName)); err != nil {
			errs = append(errs, err)
			continue
		}
		serviceOf[name] = serviceName
		out = append(out, component(dgd, serviceName, name, service))
	}
	if len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// checkComponentName says what keeps the service at path from running as
// the component name: no spec, a name no Service can have, or one another
// service's component has already (serviceOf).
func checkComponentName(service *v1alpha1.DynamoComponentDeploymentSharedSpec, name string,
	serviceOf map[string]string, path *field.Path) *field.Error {
	if service == nil {
		return field.Required(path, "the service needs a spec")
	}
	// The component name is also its Service's name, which must be a
	// DNS-1035 label; that is the strictest of its children's rules.
	if msgs := validation.IsDNS1035Label(name); len(msgs) > 0 {
		return field.Invalid(path, name,
			"the component name <graph>-<lowercased service> is also its Service's name: "+strings.Join(msgs, "; "))
	}
	// Lowercasing can map two services to one name, and one component
	// would silently replace the other.
	if other, taken := serviceOf[name]; taken {
		return field.Invalid(path, name, "has the same component name as service "+other)
	}
	if service.ModelRef != nil {
		if msgs := validation.IsDNS1035Label(ModelServiceName(name)); len(msgs) > 0 {
			return field.Invalid(path.Child("modelRef"), ModelServiceName(name),
				"the model Service name <graph>-<lowercased service>-model is invalid: "+strings.Join(msgs, "; "))
		}
	}
	return nil
}

// component is the component of dgd, named name, that runs its service
// serviceName.
func component(dgd *v1alpha1.DynamoGraphDeployment, serviceName, name string,
	service *v1alpha1.DynamoComponentDeploymentSharedSpec) *v1alpha1.DynamoComponentDeployment {
	spec := service.DeepCopy()
	if spec.ServiceName == "" {
		spec.ServiceName = serviceName
	}
	if spec.Replicas == nil {
		spec.Replicas = ptr.To[int32](1)
	}
	spec.Envs = MergeEnv(dgd.Spec.Envs, service.Envs)

	// Spec labels are the explicit request to label children, so they win
	// over the graph's own metadata labels.
	dcdLabels := merged(propagated(dgd.Labels, dgd.Spec.Labels), map[string]string{
		LabelGraphName: dgd.Name,
		LabelComponent: name,
		LabelManagedBy: ManagedByValue,
	})
	if isWorker(spec.ComponentType) {
		dcdLabels[LabelWorkerHash] = WorkerHash(dgd)
	}
	annotations := merged(propagated(dgd.Annotations, dgd.Spec.Annotations))
	if t := dgd.Spec.TopologyConstraint; t != nil && t.PackDomain != "" {
		annotations = merged(annotations, map[string]string{AnnotationGraphPackDomain: string(t.PackDomain)})
	}
	return &v1alpha1.DynamoComponentDeployment{
		TypeMeta: metav1.TypeMeta{
			APIVersion: v1alpha1.GroupVersion.String(),
			Kind:       "DynamoComponentDeployment",
		},
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Namespace:   dgd.Namespace,
			Labels:      dcdLabels,
			Annotations: annotations,
		},
		Spec: v1alpha1.DynamoComponentDeploymentSpec{
			DynamoComponent:                     dgd.Spec.DynamoComponent,
			BackendFramework:                    dgd.Spec.BackendFramework,
			DynamoComponentDeploymentSharedSpec: *spec,
		},
	}
}

// WorkerHash is a digest of everything that shapes the pods of a graph's
// workers (worker, prefill and decode services): their specs without the
// replica count, the graph's envs and backend. Workers register in the
// runtime namespace DYN_NAMESPACE plus this suffix, and the frontend finds
// every namespace with the prefix; so during a rollout new prefill workers
// pair only with new decode workers, and old with old. A change to one
// worker therefore rolls every worker of the graph, as in Dynamo's operator
// (whose hash is computed differently: the value differs, the role does not).
// Scaling does not change it. Empty when the graph has no worker.
func WorkerHash(dgd *v1alpha1.DynamoGraphDeployment) string {
	type input struct {
		Backend v1alpha1.BackendFramework                                `json:"backend,omitempty"`
		Envs    []corev1.EnvVar                                          `json:"envs,omitempty"`
		Workers map[string]*v1alpha1.DynamoComponentDeploymentSharedSpec `json:"workers"`
	}
	in := input{Backend: dgd.Spec.BackendFramework, Envs: dgd.Spec.Envs,
		Workers: map[string]*v1alpha1.DynamoComponentDeploymentSharedSpec{}}
	for name, s := range dgd.Spec.Services {
		if s == nil || !isWorker(s.ComponentType) {
			continue
		}
		w := s.DeepCopy()
		// Neither scaling nor what lives outside the pods rolls workers.
		w.Replicas, w.Autoscaling, w.Ingress, w.ModelRef = nil, nil, nil, nil
		in.Workers[name] = w
	}
	if len(in.Workers) == 0 {
		return ""
	}
	// encoding/json sorts map keys, so equal specs hash equally.
	raw, err := json.Marshal(in)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])[:8]
}

// MergeEnv returns base with each variable of the overrides, in order,
// replacing the variable of the same name where it stands, or appended when
// new. A name appears once in the result. Every entry is a copy. It returns
// nil only when all inputs are empty.
func MergeEnv(base []corev1.EnvVar, overrides ...[]corev1.EnvVar) []corev1.EnvVar {
	var out []corev1.EnvVar
	index := map[string]int{}
	add := func(e corev1.EnvVar) {
		if i, ok := index[e.Name]; ok {
			out[i] = *e.DeepCopy()
			return
		}
		index[e.Name] = len(out)
		out = append(out, *e.DeepCopy())
	}
	for _, e := range base {
		add(e)
	}
	for _, list := range overrides {
		for _, e := range list {
			add(e)
		}
	}
	return out
}
