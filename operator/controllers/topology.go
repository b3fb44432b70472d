package controllers

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/render"
)

// ReasonTopologyLabelMissing is the reason of a component's Available and
// Ready conditions while no node carries the label of a topology level its
// pods are placed within: the scheduler places none of them until one does.
const ReasonTopologyLabelMissing = "TopologyLabelMissing"

// topologyBlocker names the node labels of the component's topology levels
// that no node carries, or returns why unchanged. It looks only while the
// scheduler holds the component's pods back, or before any reports why
// (why nil): pods that were scheduled ran on nodes with the labels. Nodes
// are read from the API server, one node per label at most, and only
// then; without the right to list nodes (an install that grants none) it
// says nothing more than the scheduler.
func (r *ComponentReconciler) topologyBlocker(ctx context.Context, dcd *v1alpha1.DynamoComponentDeployment, why *blocker) *blocker {
	if why != nil && why.Reason != ReasonUnschedulable {
		return why
	}
	reqs, err := render.TopologyRequirements(dcd, r.Render)
	if err != nil || len(reqs) == 0 {
		return why
	}
	var missing []render.TopologyRequirement
	for _, req := range reqs {
		has, err := r.nodeHasLabel(ctx, req.Label)
		if err != nil {
			if !apierrors.IsForbidden(err) && ctx.Err() == nil {
				ctrl.LoggerFrom(ctx).Error(err, "cannot list nodes to look for a topology label", "label", req.Label)
			}
			return why
		}
		if !has {
			missing = append(missing, req)
		}
	}
	if len(missing) == 0 {
		return why
	}
	return &blocker{Reason: ReasonTopologyLabelMissing, Message: topologyMessage(missing)}
}

// topologyMessage names each missing label with the level it places pods by.
func topologyMessage(missing []render.TopologyRequirement) string {
	var parts []string
	for _, m := range missing {
		whose := "its own"
		if m.Graph {
			whose = "the graph's"
		}
		parts = append(parts, fmt.Sprintf("%s (%s packDomain %s)", m.Label, whose, m.Domain))
	}
	return "no node has the label " + strings.Join(parts, ", nor ") +
		": its pods are placed within one domain of each level and wait until nodes carry the label"
}

// nodeHasLabel asks the API server for one node carrying the label.
func (r *ComponentReconciler) nodeHasLabel(ctx context.Context, label string) (bool, error) {
	req, err := labels.NewRequirement(label, selection.Exists, nil)
	if err != nil {
		return false, err
	}
	nodes := &metav1.PartialObjectMetadataList{}
	nodes.SetGroupVersionKind(metav1.SchemeGroupVersion.WithKind("NodeList"))
	nodes.APIVersion, nodes.Kind = "v1", "NodeList"
	if err := r.Reader.List(ctx, nodes, client.MatchingLabelsSelector{Selector: labels.NewSelector().Add(*req)},
		client.Limit(1)); err != nil {
		return false, err
	}
	return len(nodes.Items) > 0, nil
}
