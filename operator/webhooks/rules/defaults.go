package rules

import (
	"maps"
	"slices"
	"strings"

	"gomodules.xyz/jsonpatch/v2"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

// OriginVersionAnnotation records the version of the operator that admitted
// a graph's creation, the key upstream Dynamo uses, so later versions can
// gate behaviour changes on the version a graph was created under.
const OriginVersionAnnotation = "nvidia.com/dynamo-operator-origin-version"

// GraphDefaults returns the JSON patch that defaults a graph: replicas 1 for
// every service without replicas and, on create, the origin-version
// annotation. An origin version already present is kept: a graph restored
// from a backup or re-created from an export keeps the version it was first
// created under.
func GraphDefaults(dgd *v1alpha1.DynamoGraphDeployment, create bool, version string) []jsonpatch.JsonPatchOperation {
	var ops []jsonpatch.JsonPatchOperation
	for _, name := range slices.Sorted(maps.Keys(dgd.Spec.Services)) {
		svc := dgd.Spec.Services[name]
		if svc == nil || svc.Replicas != nil {
			continue
		}
		ops = append(ops, jsonpatch.NewOperation("add", "/spec/services/"+pointerEscape(name)+"/replicas", 1))
	}
	if create && version != "" {
		if dgd.Annotations == nil {
			ops = append(ops, jsonpatch.NewOperation("add", "/metadata/annotations",
				map[string]string{OriginVersionAnnotation: version}))
		} else if _, set := dgd.Annotations[OriginVersionAnnotation]; !set {
			ops = append(ops, jsonpatch.NewOperation("add",
				"/metadata/annotations/"+pointerEscape(OriginVersionAnnotation), version))
		}
	}
	return ops
}

// pointerEscape escapes a JSON pointer token (RFC 6901).
func pointerEscape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
