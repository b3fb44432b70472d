package webhooks

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"

	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/dynamoctl/dynamo-operator/operator/render"
)

// podGroupNamer is the mutating webhook that puts a multinode group's pod in
// its group's gang PodGroup: it sets spec.schedulingGroup.podGroupName to
// render.PodGroupName(<LeaderWorkerSet>, <group index>), the PodGroup the
// component controller applies for that group. One LeaderWorkerSet
// template serves every group, and the field can only be set when the pod is
// created, so it is set here, from the labels LeaderWorkerSet's own pod
// webhook adds. That webhook may run after this one (configurations are
// called in name order): the configuration asks to be reinvoked then
// (reinvocationPolicy IfNeeded), and a pod without the labels yet is let
// through untouched. The webhook's failurePolicy is Ignore: at worst a pod is
// placed on its own, as without gang scheduling, never refused.
type podGroupNamer struct {
	// served says whether the cluster serves the PodGroup API; without
	// it the field names a PodGroup nobody creates (or is dropped).
	served   func() bool
	excluded func(namespace string) bool
}

// podForGroup is the part of a pod the webhook reads: decoding the whole
// pod into the operator's k8s.io/api types could drop fields of a newer
// API server.
type podForGroup struct {
	Metadata struct {
		Labels map[string]string `json:"labels"`
	} `json:"metadata"`
	Spec struct {
		SchedulingGroup json.RawMessage `json:"schedulingGroup"`
	} `json:"spec"`
}

func (h *podGroupNamer) Handle(_ context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create {
		return admission.Allowed("")
	}
	if h.excluded != nil && h.excluded(req.Namespace) {
		return admission.Allowed("namespace is served by a namespace-scoped operator")
	}
	var pod podForGroup
	if err := json.Unmarshal(req.Object.Raw, &pod); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	ops := schedulingGroupPatch(pod.Metadata.Labels, len(pod.Spec.SchedulingGroup) > 0 && string(pod.Spec.SchedulingGroup) != "null",
		h.served == nil || h.served())
	if len(ops) == 0 {
		return admission.Allowed("")
	}
	return admission.Patched("", ops...)
}

// schedulingGroupPatch is the JSON patch that names a pod's gang PodGroup,
// or nothing: when the API is not served, when the pod already names a
// scheduling group (the user's, or this webhook's on reinvocation), or when
// it does not (yet) carry its LeaderWorkerSet's name and a group index.
func schedulingGroupPatch(labels map[string]string, hasGroup, served bool) []jsonpatch.JsonPatchOperation {
	if !served || hasGroup {
		return nil
	}
	lws, index := labels[lwsv1.SetNameLabelKey], labels[lwsv1.GroupIndexLabelKey]
	i, err := strconv.Atoi(index)
	if lws == "" || err != nil || i < 0 {
		return nil
	}
	return []jsonpatch.JsonPatchOperation{{
		Operation: "add",
		Path:      "/spec/schedulingGroup",
		Value:     map[string]any{"podGroupName": render.PodGroupName(lws, i)},
	}}
}
