package controllers

import (
	"encoding/json"
	"strconv"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/render"
)

// AnnotationGraphReplicas records on a component the replicas its graph
// asked for when it last applied the component ("" when the graph set
// none). See yieldReplicas.
const AnnotationGraphReplicas = render.AnnotationGraphReplicas

// yieldReplicas decides whether the graph leaves a component's
// spec.replicas to whoever scaled it. The component's scale subresource is
// the scaling interface (kubectl scale dcd, a HorizontalPodAutoscaler, a
// planner): a write through it makes its author the field manager of
// spec.replicas. While another manager owns the field and the graph's own
// replicas for the service have not changed since the graph last applied
// them, the graph applies the component without replicas, so the scaled
// value stands across graph reconciles and graph changes elsewhere. A
// change of the service's replicas in the graph is a newer decision and
// wins: the graph applies it, forcing ownership back (an HPA still active
// then scales again on its next sync, as it does over a Deployment).
//
// A service that opts in to a scaling adapter is not decided here: its
// adapter owns its replicas (adapterReplicas). Dynamo's adapter writes
// the graph's spec, which GitOps tools own; here the graph's spec is never
// written, by either path.
//
// desired is the component as the graph renders it; live as stored, or
// nil. It returns whether replicas were left out of desired.
func yieldReplicas(desired, live *v1alpha1.DynamoComponentDeployment, fieldOwner string) bool {
	asked := recordGraphReplicas(desired)
	if live == nil || live.Annotations[AnnotationGraphReplicas] != asked || !replicasOwnedByOther(live, fieldOwner) {
		return false
	}
	desired.Spec.Replicas = nil
	return true
}

// recordGraphReplicas records on desired the replicas its graph asks for
// (AnnotationGraphReplicas), and returns them as recorded.
func recordGraphReplicas(desired *v1alpha1.DynamoComponentDeployment) string {
	asked := ""
	if desired.Spec.Replicas != nil {
		asked = strconv.Itoa(int(*desired.Spec.Replicas))
	}
	if desired.Annotations == nil {
		desired.Annotations = map[string]string{}
	}
	desired.Annotations[AnnotationGraphReplicas] = asked
	return asked
}

// replicasOwnedByOther reports whether a field manager other than
// fieldOwner manages the component's spec.replicas.
func replicasOwnedByOther(dcd *v1alpha1.DynamoComponentDeployment, fieldOwner string) bool {
	for _, mf := range dcd.ManagedFields {
		if mf.Manager == fieldOwner || mf.FieldsV1 == nil {
			continue
		}
		var fields struct {
			Spec map[string]json.RawMessage `json:"f:spec"`
		}
		if err := json.Unmarshal(mf.FieldsV1.Raw, &fields); err != nil {
			continue
		}
		if _, ok := fields.Spec["f:replicas"]; ok {
			return true
		}
	}
	return false
}
