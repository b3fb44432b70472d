package steps

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/children"
)

// graphKinds are the kinds of object the scenarios take inventory of in a
// namespace of graphs: the graphs; every kind the operator makes for a
// graph or its components and finds again by the graph (operator/children,
// the one table of child kinds, whose GraphLabel ties a kind to a graph);
// the ReplicaSets the Deployment controller makes between a Deployment and
// its pods; and the ConfigMaps users keep beside their graphs, which the
// operator does not make. A kind the cluster does not serve (a
// LeaderWorkerSet or PodGroup API left out) is no error to the callers:
// they skip it (meta.IsNoMatchError).
func graphKinds() []schema.GroupVersionKind {
	out := []schema.GroupVersionKind{v1alpha1.GroupVersion.WithKind("DynamoGraphDeployment")}
	for _, k := range children.Kinds() {
		if k.GraphLabel != "" {
			out = append(out, k.GVK)
		}
	}
	return append(out, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"), corev1.SchemeGroupVersion.WithKind("ConfigMap"))
}
