// Package v1beta1 holds the nvidia.com/v1beta1 API of DynamoGraphDeployment
// and DynamoComponentDeployment, the shape Dynamo's current releases document
// and write: a graph's components are a list keyed by name, each with a type
// and a native pod template whose container `main` receives the operator's
// defaults, in place of v1alpha1's map of services and its ten per-service
// pod fields. Field names, types, defaults and validation rules follow
// Dynamo's v1beta1 API, so its users' manifests apply unchanged.
//
// # Served, not stored
//
// nvidia.com/v1alpha1 stays the version the API server stores and the
// version the operator itself reads and writes; v1beta1 objects are
// converted to and from it by the operator's conversion webhook (the
// v1alpha1 kinds are the conversion hub, the kinds here implement
// ConvertTo/ConvertFrom). Keeping v1alpha1 stored means the operator's own
// watches and writes, at any scale, never wait on a conversion call, and
// v1alpha1 clients keep working while no conversion endpoint answers; only
// requests made in v1beta1 need the webhook. Fields one version has and the
// other lacks survive a round trip in annotations under the nvidia.com/
// prefix.
//
// No other kind of the group has a v1beta1 version here: DynamoModel,
// DynamoComponent and DynamoWorkerMetadata are served in v1alpha1 only.
//
// +kubebuilder:object:generate=true
// +groupName=nvidia.com
package v1beta1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the API group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: "nvidia.com", Version: "v1beta1"}

	// SchemeBuilder registers the kinds of this package with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the kinds of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
