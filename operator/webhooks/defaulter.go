package webhooks

import (
	"context"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/webhooks/rules"
)

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
	ops := rules.GraphDefaults(dgd, req.Operation == admissionv1.Create, d.version)
	if len(ops) == 0 {
		return admission.Allowed("")
	}
	return admission.Patched("", ops...)
}
