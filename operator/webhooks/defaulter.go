package webhooks

import (
	"context"
	"net/http"
	"strings"

	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

// OriginVersionAnnotation records the version of the operator that admitted
// a graph's creation, the key upstream Dynamo uses, so later versions can
// gate behaviour changes on the version a graph was created under.
const OriginVersionAnnotation = "nvidia.com/dynamo-operator-origin-version"

// graphDefaulter is the defaulting webhook of DynamoGraphDeployment. It
// answers with explicit JSON patch operations for exactly the fields it
// sets, rather than diffing a re-serialised object: a typed round trip would
// rewrite what users wrote (quantities in canonical form, for one), and
// manifests must read back as written.
type graphDefaulter struct {
	decoder  admission.Decoder
	version  string
	excluded func(namespace string) bool
}

func (d *graphDefaulter) Handle(_ context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		return admission.Allowed("")
	}
	if d.excluded != nil && d.excluded(req.Namespace) {
		return admission.Allowed("namespace is served by a namespace-scoped operator")
	}
	dgd := &v1alpha1.DynamoGraphDeployment{}
	if err := d.decoder.Decode(req, dgd); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	ops := GraphDefaults(dgd, req.Operation == admissionv1.Create, d.version)
	if len(ops) == 0 {
		return admission.Allowed("")
	}
	return admission.Patched("", ops...)
}

// GraphDefaults returns the JSON patch that defaults a graph: replicas 1 for
// every service without replicas and, on create, the origin-version
// annotation. An origin version already present is kept: a graph restored
// from a backup or re-created from an export keeps the version it was first
// created under.
func GraphDefaults(dgd *v1alpha1.DynamoGraphDeployment, create bool, version string) []jsonpatch.JsonPatchOperation {
	var ops []jsonpatch.JsonPatchOperation
	for _, name := range sortedKeys(dgd.Spec.Services) {
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
