// Package v1alpha1 holds the nvidia.com/v1alpha1 API: DynamoGraphDeployment,
// DynamoComponentDeployment, DynamoModel, DynamoComponent and DynamoWorkerMetadata. Field names and
// semantics follow Dynamo's documentation so users' manifests keep working.
//
// +kubebuilder:object:generate=true
// +groupName=nvidia.com
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the API group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: "nvidia.com", Version: "v1alpha1"}

	// SchemeBuilder registers the kinds of this package with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the kinds of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
