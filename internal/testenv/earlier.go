package testenv

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/controllers"
)

// CreateEarlierRendering creates deploy as the operator's release version
// left it for the component dcd: controlled by it and stamped with that
// release's renderer and the input it rendered (controllers/adoption.go),
// as an upgrade finds it.
func (e *Env) CreateEarlierRendering(ctx context.Context, dcd *v1alpha1.DynamoComponentDeployment, deploy *appsv1.Deployment, version string) error {
	deploy.Annotations = map[string]string{
		controllers.AnnotationRenderer:    controllers.RendererID(version),
		controllers.AnnotationRenderedFor: controllers.WorkloadInput(dcd, nil),
	}
	if err := controllerutil.SetControllerReference(dcd, deploy, e.Scheme); err != nil {
		return err
	}
	return e.Client.Create(ctx, deploy)
}
