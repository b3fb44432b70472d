package render

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1beta1"
)

// ScalingAdapterName is the name of the DynamoGraphDeploymentScalingAdapter
// of a graph's service, as Dynamo names it: "<graph>-<lowercased service>",
// the name of the service's component too, so an HPA written for Dynamo's
// adapter targets ours unchanged.
func ScalingAdapterName(graphName, serviceName string) string {
	return ComponentName(graphName, serviceName)
}

// ScalingAdapterServices are the services of dgd that opt in to a scaling
// adapter, sorted: scalingAdapter enabled (v1alpha1) or present (v1beta1,
// stored as enabled). A graph stored before v1alpha1 had the field keeps a
// v1beta1 opt-in in the conversion's annotation (v1beta1.AnnotationBetaSpec),
// which is read too; a graph without the annotation costs no conversion.
func ScalingAdapterServices(dgd *v1alpha1.DynamoGraphDeployment) []string {
	var out []string
	for name, s := range dgd.Spec.Services {
		if s != nil && s.ScalingAdapter != nil && s.ScalingAdapter.Enabled {
			out = append(out, name)
		}
	}
	if _, ok := dgd.Annotations[v1beta1.AnnotationBetaSpec]; ok {
		beta := &v1beta1.DynamoGraphDeployment{}
		if err := beta.ConvertFrom(dgd.DeepCopy()); err == nil {
			for i := range beta.Spec.Components {
				c := &beta.Spec.Components[i]
				if c.ScalingAdapter != nil && dgd.Spec.Services[c.ComponentName] != nil {
					out = append(out, c.ComponentName)
				}
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// ScalingAdapter is the adapter of dgd's service serviceName as created:
// spec.replicas starts at replicas (what the service runs when it opts
// in) and never written by the operator again. It carries no owner
// reference: the controller sets it.
func ScalingAdapter(dgd *v1alpha1.DynamoGraphDeployment, serviceName string, replicas int32) *v1alpha1.DynamoGraphDeploymentScalingAdapter {
	return &v1alpha1.DynamoGraphDeploymentScalingAdapter{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "DynamoGraphDeploymentScalingAdapter"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      ScalingAdapterName(dgd.Name, serviceName),
			Namespace: dgd.Namespace,
			Labels:    map[string]string{LabelGraphName: dgd.Name, LabelManagedBy: ManagedByValue},
		},
		Spec: v1alpha1.DynamoGraphDeploymentScalingAdapterSpec{
			Replicas: replicas,
			DGDRef:   v1alpha1.DynamoGraphDeploymentServiceRef{Name: dgd.Name, ServiceName: serviceName},
		},
	}
}

// ServiceReplicas is the replicas a graph asks for its service (1 when
// unset, as its component is rendered).
func ServiceReplicas(dgd *v1alpha1.DynamoGraphDeployment, serviceName string) int32 {
	if s := dgd.Spec.Services[serviceName]; s != nil {
		return ptr.Deref(s.Replicas, 1)
	}
	return 1
}
