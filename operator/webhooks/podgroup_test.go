package webhooks

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"gomodules.xyz/jsonpatch/v2"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestSchedulingGroupPatch(t *testing.T) {
	group := map[string]string{
		"leaderworkerset.sigs.k8s.io/name":        "g-worker",
		"leaderworkerset.sigs.k8s.io/group-index": "3",
	}
	named := []jsonpatch.JsonPatchOperation{{Operation: "add", Path: "/spec/schedulingGroup",
		Value: map[string]any{"podGroupName": "g-worker-3"}}}
	for name, tc := range map[string]struct {
		labels   map[string]string
		hasGroup bool
		served   bool
		want     []jsonpatch.JsonPatchOperation
	}{
		"a group's pod is named its group's PodGroup":              {group, false, true, named},
		"not when the API is not served":                           {group, false, false, nil},
		"not over a scheduling group the pod names":                {group, true, true, nil},
		"not before LeaderWorkerSet's webhook set the group index": {map[string]string{"leaderworkerset.sigs.k8s.io/name": "g-worker"}, false, true, nil},
		"not without the LeaderWorkerSet's name":                   {map[string]string{"leaderworkerset.sigs.k8s.io/group-index": "0"}, false, true, nil},
		"not with a group index that is no number":                 {map[string]string{"leaderworkerset.sigs.k8s.io/name": "g", "leaderworkerset.sigs.k8s.io/group-index": "x"}, false, true, nil},
	} {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, schedulingGroupPatch(tc.labels, tc.hasGroup, tc.served)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// The pod webhook must never stand between the cluster and its pods, and
// sees only our multinode pods, on creation, in the operator's namespaces.
func TestPodGroupWebhookConfiguration(t *testing.T) {
	for _, ns := range []string{"", "team-a"} {
		_, m := Configurations(ConfigurationOptions{RestrictNamespace: ns, ServiceNamespace: "dynamo", ServiceName: "svc"})
		if len(m.Webhooks) != 2 {
			t.Fatalf("mutating webhooks: %d", len(m.Webhooks))
		}
		w := m.Webhooks[1]
		want := admissionregistrationv1.MutatingWebhook{
			Name: "podgroup.pods.nvidia.com",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
				Namespace: "dynamo", Name: "svc", Path: ptr.To(PathMutatePod), Port: ptr.To[int32](443)}},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"},
					Scope: ptr.To(admissionregistrationv1.NamespacedScope)},
			}},
			FailurePolicy:           ptr.To(admissionregistrationv1.Ignore),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
			NamespaceSelector:       NamespaceSelector(ns),
			ObjectSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "nvidia.com/dynamo-multinode-role", Operator: metav1.LabelSelectorOpExists},
				{Key: "nvidia.com/dynamo-component", Operator: metav1.LabelSelectorOpExists},
			}},
			TimeoutSeconds:     ptr.To[int32](3),
			ReinvocationPolicy: ptr.To(admissionregistrationv1.IfNeededReinvocationPolicy),
		}
		if diff := cmp.Diff(want, w); diff != "" {
			t.Errorf("namespace %q: (-want +got):\n%s", ns, diff)
		}
	}
}
