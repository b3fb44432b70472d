package controllers

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/render"
)

// applyGMSClaimTemplate makes the ResourceClaimTemplate of a component's
// shared GPUs exist (render.GMSResourceClaimTemplate) before its pods, which
// name it, and deletes it when the component stops asking for it. A
// template's spec is immutable: one for another GPU count or DeviceClass is
// deleted and created anew; claims made from it already keep theirs, so
// running pods are untouched.
func (r *ComponentReconciler) applyGMSClaimTemplate(ctx context.Context, dcd *v1alpha1.DynamoComponentDeployment, changes *changeSet) error {
	desired := render.GMSResourceClaimTemplate(dcd)
	name := render.GMSResourceClaimTemplateName(dcd.Name)
	if desired != nil {
		live, err := getOptional(ctx, r.Client, types.NamespacedName{Namespace: dcd.Namespace, Name: name}, &resourcev1.ResourceClaimTemplate{})
		if err != nil {
			return err
		}
		if live != nil && metav1.IsControlledBy(live, dcd) && !equality.Semantic.DeepEqual(live.Spec, desired.Spec) {
			err := r.Client.Delete(ctx, live, client.Preconditions{UID: ptr.To(live.UID)})
			if client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("deleting ResourceClaimTemplate %s for a new spec: %w", name, err)
			}
			r.Applier.Forget(live)
			changes.deleted = append(changes.deleted, "ResourceClaimTemplate/"+name)
		}
	}
	return r.applyOrDelete(ctx, dcd, desired, name, &resourcev1.ResourceClaimTemplate{}, changes)
}

// applyEPPConfigMap applies the ConfigMap of a configured endpoint picker's
// inline configuration (render.EPPConfigMap) before its pods, which mount
// it, and deletes the one it made when the configuration moves to a
// configMapRef or goes. (The schema keeps eppConfig.config an object, so
// rendering it cannot fail on a stored graph.)
func (r *ComponentReconciler) applyEPPConfigMap(ctx context.Context, dcd *v1alpha1.DynamoComponentDeployment, changes *changeSet) error {
	desired, err := render.EPPConfigMap(dcd)
	if err != nil {
		return err
	}
	name := render.EPPConfigMapName(dcd.Labels[render.LabelGraphName])
	return r.applyOrDelete(ctx, dcd, desired, name, &corev1.ConfigMap{}, changes)
}

// ReasonEngineFeaturesAtNextChange: a service runs as the Deployment an
// earlier version rendered without the engine features its spec sets, until
// its spec changes.
const ReasonEngineFeaturesAtNextChange = "EngineFeaturesAtNextSpecChange"

// keptWithoutEngineFeatures is the WorkloadPending condition of a kept
// Deployment that lacks engine features its spec sets
// (render.EngineFieldsNotIn); nil when it lacks none. An upgrade keeps such
// a Deployment as it is (adoption.go), and nothing its new pod template
// would name (the claim template, the picker's ConfigMap) is created beside
// it; the graph's FieldsNotActedOn keeps naming those fields in the words
// of the version that does not render them (ignoredFields), which that
// version, after a downgrade, finds as it wrote them.
func keptWithoutEngineFeatures(dcd *v1alpha1.DynamoComponentDeployment, live *appsv1.Deployment, now time.Time) *metav1.Condition {
	missing := render.EngineFieldsNotIn(dcd, &live.Spec.Template.Spec)
	if len(missing) == 0 {
		return nil
	}
	renderer := live.Annotations[AnnotationRenderer]
	if renderer == "" {
		renderer = "an earlier version"
	}
	return &metav1.Condition{
		Type:               v1alpha1.ConditionWorkloadPending,
		Status:             metav1.ConditionTrue,
		Reason:             ReasonEngineFeaturesAtNextChange,
		ObservedGeneration: dcd.Generation,
		LastTransitionTime: metav1.NewTime(now),
		Message: fmt.Sprintf("runs as the Deployment %s that %s rendered, without %s, kept so that the upgrade restarts nothing; "+
			"at the service's next spec change its pods are rendered with them", live.Name, renderer, strings.Join(missing, ", ")),
	}
}
