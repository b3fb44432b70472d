package controllers

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/render"
)

// The cache's field indexes. A label selector alone makes a cached List
// read every object of the namespace and test each one's labels: with 500
// graphs in a namespace, every graph reconcile (and every graph event,
// mapped to its components) read 2,000 components, and that scan was a
// quarter of the operator's CPU while graphs were being created. An index
// answers with the graph's own few.
const (
	// indexGraph indexes components by the graph they belong to (their
	// graph-name label).
	indexGraph = "dynamo.graph"
	// indexComponent indexes pods by the component they run (their
	// component label).
	indexComponent = "dynamo.component"
)

// indexedBy lists an index and the label whose value it holds.
var indexedBy = []struct {
	obj   client.Object
	field string
	label string
}{
	{&v1alpha1.DynamoComponentDeployment{}, indexGraph, render.LabelGraphName},
	{&corev1.Pod{}, indexComponent, render.LabelComponent},
}

func registerIndexes(ctx context.Context, mgr manager.Manager) error {
	for _, ix := range indexedBy {
		label := ix.label
		if err := mgr.GetFieldIndexer().IndexField(ctx, ix.obj, ix.field, func(o client.Object) []string {
			if v := o.GetLabels()[label]; v != "" {
				return []string{v}
			}
			return nil
		}); err != nil {
			return err
		}
	}
	return nil
}

// componentsOf lists the components carrying graph's label in ns: through
// the index when c reads from a cache that has it (indexed), else by label,
// as a client reading from the API server must.
func componentsOf(ctx context.Context, c client.Reader, indexed bool, ns, graph string) (*v1alpha1.DynamoComponentDeploymentList, error) {
	var list v1alpha1.DynamoComponentDeploymentList
	by := client.ListOption(client.MatchingLabels{render.LabelGraphName: graph})
	if indexed {
		by = client.MatchingFields{indexGraph: graph}
	}
	err := c.List(ctx, &list, client.InNamespace(ns), by)
	return &list, err
}

// podsOf is the pods option of a List of the pods selector selects: through
// the index when indexed and selector names a component.
func podsOf(indexed bool, selector map[string]string) []client.ListOption {
	opts := []client.ListOption{client.MatchingLabels(selector)}
	if c := selector[render.LabelComponent]; indexed && c != "" {
		opts = append(opts, client.MatchingFields{indexComponent: c})
	}
	return opts
}
