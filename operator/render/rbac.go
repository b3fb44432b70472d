package render

import (
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

// DiscoveryServiceAccountName is the ServiceAccount the pods of a graph run
// as, with the permissions Kubernetes-based discovery needs: the name
// Dynamo's operator gives it, so that a graph taken over keeps its identity.
func DiscoveryServiceAccountName(graph string) string { return graph + "-k8s-service-discovery" }

// DiscoveryRBAC are the ServiceAccount, Role and RoleBinding that let a
// graph's pods discover one another through the Kubernetes API, as Dynamo's
// runtime does with DYN_DISCOVERY_BACKEND=kubernetes: it watches the pods,
// endpoints and EndpointSlices of its namespace and writes its own
// DynamoWorkerMetadata records.
type DiscoveryRBAC struct {
	ServiceAccount *corev1.ServiceAccount
	Role           *rbacv1.Role
	RoleBinding    *rbacv1.RoleBinding
}

// GraphDiscoveryRBAC renders the discovery objects of a graph; nil when the
// graph uses etcd discovery. They carry no owner reference: the controller
// sets it.
func GraphDiscoveryRBAC(dgd *v1alpha1.DynamoGraphDeployment) *DiscoveryRBAC {
	if dgd.Annotations[AnnotationDiscoveryBackend] == DiscoveryEtcd ||
		dgd.Spec.Annotations[AnnotationDiscoveryBackend] == DiscoveryEtcd {
		return nil
	}
	return discoveryRBAC(dgd.Namespace, dgd.Name, merged(propagated(dgd.Labels, dgd.Spec.Labels),
		map[string]string{LabelGraphName: dgd.Name}))
}

// ComponentDiscoveryRBAC renders the discovery objects of a component that
// stands alone (no graph); nil for a component of a graph, whose graph
// renders them, and for one using etcd discovery.
func ComponentDiscoveryRBAC(dcd *v1alpha1.DynamoComponentDeployment) *DiscoveryRBAC {
	if dcd.Labels[LabelGraphName] != "" || discoveryBackend(dcd) != DiscoveryKubernetes {
		return nil
	}
	return discoveryRBAC(dcd.Namespace, dcd.Name, propagated(dcd.Labels, dcd.Spec.Labels))
}

func discoveryRBAC(namespace, graph string, labels map[string]string) *DiscoveryRBAC {
	name := DiscoveryServiceAccountName(graph)
	meta := func(objectName string) metav1.ObjectMeta {
		return metav1.ObjectMeta{
			Name:      objectName,
			Namespace: namespace,
			Labels: merged(labels, map[string]string{
				LabelManagedBy:                ManagedByValue,
				"app.kubernetes.io/component": "rbac",
				"app.kubernetes.io/name":      name,
			}),
		}
	}
	read := []string{"get", "list", "watch"}
	return &DiscoveryRBAC{
		ServiceAccount: &corev1.ServiceAccount{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
			ObjectMeta: meta(name),
		},
		Role: &rbacv1.Role{
			TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "Role"},
			ObjectMeta: meta(name + "-role"),
			Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{""}, Resources: []string{"endpoints", "pods"}, Verbs: read},
				{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: read},
				{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"dynamoworkermetadatas"},
					Verbs: []string{"create", "get", "list", "watch", "update", "patch", "delete"}},
			},
		},
		RoleBinding: &rbacv1.RoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "RoleBinding"},
			ObjectMeta: meta(name + "-binding"),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name + "-role"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: namespace}},
		},
	}
}
