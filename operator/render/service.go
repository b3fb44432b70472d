package render

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

// Service renders the ClusterIP Service of a component: the OpenAI HTTP port
// on a frontend, and the runtime's system port on every component. Ports
// target the container ports by name, so a user who moves a port in
// extraPodSpec.mainContainer keeps the Service working.
func Service(dcd *v1alpha1.DynamoComponentDeployment) *corev1.Service {
	var ports []corev1.ServicePort
	if dcd.Spec.ComponentType == v1alpha1.ComponentTypeFrontend {
		ports = append(ports, namedServicePort(HTTPPortName, HTTPPort))
	}
	if usesEPPConfig(&dcd.Spec.DynamoComponentDeploymentSharedSpec) {
		// The InferencePool's endpoint picker port, as Dynamo's
		// <graph>-epp Service exposes it, and the picker's health.
		grpc := namedServicePort(EPPGRPCPortName, EPPGRPCPort)
		grpc.AppProtocol = ptr.To("http2")
		ports = append(ports, grpc, namedServicePort(eppHealthPortName, eppHealthPort))
	}
	ports = append(ports, namedServicePort(SystemPortName, SystemPort))
	return &corev1.Service{
		TypeMeta: serviceTypeMeta(),
		ObjectMeta: metav1.ObjectMeta{
			Name:      dcd.Name,
			Namespace: dcd.Namespace,
			Labels:    workloadLabels(dcd),
		},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: servingSelector(dcd),
			Ports:    ports,
		},
	}
}

// ModelService renders the headless Service through whose EndpointSlices
// DynamoModels find the pods serving a base model; nil unless the component
// has a modelRef. The label carries a hash because model names are not valid
// label values. Only ready pods are published: a LoRA can only be loaded into
// a pod that is serving.
func ModelService(dcd *v1alpha1.DynamoComponentDeployment) *corev1.Service {
	ref := dcd.Spec.ModelRef
	if ref == nil {
		return nil
	}
	labels := workloadLabels(dcd)
	labels[LabelBaseModelHash] = BaseModelHash(ref.Name)
	return &corev1.Service{
		TypeMeta: serviceTypeMeta(),
		ObjectMeta: metav1.ObjectMeta{
			Name:      ModelServiceName(dcd.Name),
			Namespace: dcd.Namespace,
			Labels:    labels,
		},
		Spec: corev1.ServiceSpec{
			Type:                     corev1.ServiceTypeClusterIP,
			ClusterIP:                corev1.ClusterIPNone,
			Selector:                 servingSelector(dcd),
			Ports:                    []corev1.ServicePort{namedServicePort(SystemPortName, SystemPort)},
			PublishNotReadyAddresses: false,
		},
	}
}

func namedServicePort(name string, port int32) corev1.ServicePort {
	return corev1.ServicePort{
		Name:       name,
		Port:       port,
		TargetPort: intstr.FromString(name),
		Protocol:   corev1.ProtocolTCP,
	}
}

func serviceTypeMeta() metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: corev1.SchemeGroupVersion.String(), Kind: "Service"}
}
