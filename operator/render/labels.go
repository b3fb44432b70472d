package render

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"strings"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1beta1"
)

// Labels and names the operator puts on the objects it renders.
const (
	// LabelGraphName carries the DynamoGraphDeployment name, on every child.
	LabelGraphName = "nvidia.com/dynamo-graph-deployment-name"
	// LabelComponent carries the DynamoComponentDeployment name; it is the
	// pod selector of the component's workload and Services.
	LabelComponent        = "nvidia.com/dynamo-component"
	LabelComponentType    = "nvidia.com/dynamo-component-type"
	LabelSubComponentType = "nvidia.com/dynamo-sub-component-type"
	// LabelBaseModelHash marks the headless Service of a model's pods, see
	// BaseModelHash.
	LabelBaseModelHash = "nvidia.com/dynamo-base-model-hash"
	LabelManagedBy     = "app.kubernetes.io/managed-by"
	ManagedByValue     = "dynamo-operator"
	// LabelPVCRetained is "true" on claims the operator created; they are
	// kept after the graph is deleted, and the label finds them for cleanup.
	LabelPVCRetained = "nvidia.com/dynamo-pvc-retained"

	MainContainerName    = "main"
	SidecarContainerName = "frontend-sidecar"

	SystemPortName = "system"
	SystemPort     = 9090
	HTTPPortName   = "http"
	HTTPPort       = 8000
)

// lastAppliedHashAnnotation mirrors apply.HashAnnotation. The applier writes
// it on each object with that object's own hash, so it must never be copied
// from a parent to a child: the child would then never match its hash and be
// written on every reconcile.
const lastAppliedHashAnnotation = "nvidia.com/last-applied-hash"

// AnnotationGraphReplicas records on a component the replicas its graph
// last asked for (see the graph controller's yieldReplicas); it describes
// the component itself and is not copied to its workload.
const AnnotationGraphReplicas = "nvidia.com/graph-replicas"

// kubectlPrefix marks keys kubectl keeps about the object itself, such as
// last-applied-configuration, which mean nothing on another object.
const kubectlPrefix = "kubectl.kubernetes.io/"

// operatorKeys are the keys the operator owns; a user's value for one of
// them is not propagated, so it cannot redirect a selector or an ownership
// query.
var operatorKeys = map[string]bool{
	LabelGraphName:            true,
	LabelComponent:            true,
	LabelComponentType:        true,
	LabelSubComponentType:     true,
	LabelBaseModelHash:        true,
	LabelManagedBy:            true,
	LabelPVCRetained:          true,
	LabelWorkerHash:           true,
	lastAppliedHashAnnotation: true,
	AnnotationGraphPackDomain: true,
}

// BaseModelHash is a label-safe digest of a base model name (model names such
// as Qwen/Qwen3-0.6B contain characters a label value may not): the first 8
// hex characters of its SHA-256, the value Dynamo's operator writes, so pods
// and Services either operator labelled find each other.
func BaseModelHash(baseModelName string) string {
	sum := sha256.Sum256([]byte(baseModelName))
	return hex.EncodeToString(sum[:])[:8]
}

// propagated returns the entries of the given maps, later maps winning, that
// may be copied from a parent object to a child: without kubectl's
// bookkeeping, the operator's own keys and the conversion's (what a graph
// written in v1beta1 keeps of that version describes the graph, not its
// components). It returns nil when none remain.
func propagated(sources ...map[string]string) map[string]string {
	var out map[string]string
	for _, src := range sources {
		for k, v := range src {
			if operatorKeys[k] || strings.HasPrefix(k, kubectlPrefix) || v1beta1.IsConversionAnnotation(k) {
				continue
			}
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	return out
}

// inheritedAnnotations returns a parent's annotations as a child rendered
// from it carries them: without the keys that describe the parent object
// itself (kubectl's, the applier's hash, the conversion's). It returns nil when none remain.
func inheritedAnnotations(parent map[string]string) map[string]string {
	var out map[string]string
	for k, v := range parent {
		if k == lastAppliedHashAnnotation || k == AnnotationGraphReplicas || k == AnnotationGraphPackDomain ||
			strings.HasPrefix(k, kubectlPrefix) ||
			v1beta1.IsConversionAnnotation(k) {
			continue
		}
		if out == nil {
			out = make(map[string]string, len(parent))
		}
		out[k] = v
	}
	return out
}

// merged returns the union of the given maps, later maps winning, or nil
// when all are empty.
func merged(sources ...map[string]string) map[string]string {
	var out map[string]string
	for _, src := range sources {
		if len(src) == 0 {
			continue
		}
		if out == nil {
			out = make(map[string]string, len(src))
		}
		maps.Copy(out, src)
	}
	return out
}
