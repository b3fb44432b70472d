// Package webhooks holds the operator's admission webhooks: a validating
// webhook for each kind of nvidia.com/v1alpha1 (DynamoGraphDeployment,
// DynamoComponentDeployment, DynamoModel, DynamoComponent) on CREATE and
// UPDATE, and a defaulting webhook for DynamoGraphDeployment; and the CRD
// conversion webhook (PathConvert) between nvidia.com/v1alpha1, the stored
// version, and the other served versions of DynamoGraphDeployment and
// DynamoComponentDeployment.
//
// # Where each rule lives
//
// Every rule is implemented once. What the structural schema and its CEL
// rules express well stays in the CRD (operator/api/v1alpha1 markers) and is
// enforced by the API server before the webhooks run; the webhooks add what
// needs Go, another object's shape, or the old object:
//
//	Rule                                                   Place
//	services required, 1..25                               CRD schema
//	componentType, backendFramework, modelType enums       CRD schema
//	replicas >= 0, multinode.nodeCount >= 2                CRD schema
//	pvcs[] create: true needs storageClass, size, mode     CRD CEL
//	services.*.pvc create: true needs name and size        CRD CEL
//	lora needs source.uri s3:// or hf://                   CRD CEL
//	DynamoComponent spec.dynamoComponent is name:version   CRD schema pattern
//	child names are DNS-1035 labels <= 63, no collisions   rules/names.go (render.Components)
//	DCD name usable as Deployment/Service name             rules/names.go
//	resource quantities and GPU counts parse               rules/service.go (render.ValidateResources)
//	resource names are valid Kubernetes resource names     rules/service.go
//	volumeMounts name an entry of spec.pvcs                rules/service.go (render.ValidateVolumeMounts)
//	extraPodSpec merges into the generated pod             rules/service.go (render.ValidateExtraPodSpec)
//	sharedMemory.size is positive                          rules/service.go
//	propagated labels and annotations are valid            rules/metadata.go
//	Secret, claim and component references are valid      rules/refs.go
//	imageBuildTimeout is positive                          rules/refs.go
//	autoscaling is deprecated: a warning                   rules/service.go
//	immutable fields                                       rules/immutable.go
//	a service's topologyConstraint needs the graph's;      rules/topology.go
//	  the graph's without packDomain needs every service's
//	packDomain is one of the operator's levels             the component's status (render)
//
// All violations of one object come back in one response, as a Kubernetes
// Invalid status listing each field path with its rule.
//
// # Updates
//
// On UPDATE a violation the old object already had is not reported again
// (ratcheting, as the API server does for CRD schemas since 1.30): objects
// stored before a rule existed keep accepting metadata changes, finalizer
// removal and status-neutral edits. Objects being deleted are not judged.
//
// # Lease-awareness
//
// A cluster-wide operator passes Options.NamespaceExcluded; in a namespace it
// returns true for (one owned by a namespace-scoped operator), the webhooks
// allow without judging or defaulting: that operator's own webhook does.
package webhooks
