// Package v1alpha1 holds the nvidia.com/v1alpha1 API: DynamoGraphDeployment,
// DynamoComponentDeployment, DynamoModel, DynamoComponent and DynamoWorkerMetadata. Field names and
// semantics follow Dynamo's documentation so users' manifests keep working.
//
// DynamoGraphDeployment and DynamoComponentDeployment are served in
// nvidia.com/v1beta1 too (package v1beta1). This version stays the one
// stored and the one the operator reads and writes: it is the conversion
// hub, and a v1beta1 object is converted to and from it by the operator's
// conversion webhook.
//
// # A status nobody has written yet
//
// The status of every kind the operator reports on defaults, in the CRD, to
// {observedGeneration: 0}, which the API server fills in whenever it returns
// an object whose status was never written. kstatus (Flux, kpt, cli-utils'
// wait) reads an object with no status at all and no conditions as Current,
// that is done; with observedGeneration 0 behind metadata.generation it reads
// it as InProgress, LatestGenerationNotObserved. The operator holds back the
// first report of a graph or component that is merely rolling out (a few
// seconds after its pods start, up to 2 minutes while they wait for the
// cluster, longer behind a burst) to save writes; the default makes that
// window read as in progress, not as done, at no write at all. Go clients
// see nothing: 0 is the zero value omitempty drops. A graph's status.state
// defaults to "initializing" as well, so that kubectl's State column says
// something meanwhile.
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
