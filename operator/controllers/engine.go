package controllers

import (
	"context"
	"fmt"

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
