package apitest

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/internal/builders"
)

// The API server sends a multinode group's pods, on creation, to the pod
// webhook, which names the group's gang PodGroup; other pods are not sent
// or are left as they are.
func TestPodWebhookNamesAGroupsPodGroup(t *testing.T) {
	operator(t)
	ctx := context.Background()
	ns := env.Namespace(t, "podgroup")
	for name, tc := range map[string]struct {
		pod  *corev1.Pod
		want *corev1.PodSchedulingGroup
	}{
		"a group's leader": {builders.MakePod("leader", ns).InGroup("g-w", "leader", "g-w", "1").Obj(),
			&corev1.PodSchedulingGroup{PodGroupName: ptr.To("g-w-1")}},
		"a group's worker": {builders.MakePod("worker", ns).InGroup("g-w", "worker", "g-w", "0").Obj(),
			&corev1.PodSchedulingGroup{PodGroupName: ptr.To("g-w-0")}},
		"a pod whose group index is not set yet": {builders.MakePod("no-index", ns).InGroup("g-w", "leader", "g-w", "").Obj(), nil},
		"a LeaderWorkerSet pod of someone else's": {builders.MakePod("other", ns).Labels(map[string]string{
			"leaderworkerset.sigs.k8s.io/name": "other", "leaderworkerset.sigs.k8s.io/group-index": "0"}).Obj(), nil},
		"a pod naming its own group": {builders.MakePod("own", ns).InGroup("g-w", "worker", "g-w", "2").SchedulingGroup("mine").Obj(),
			&corev1.PodSchedulingGroup{PodGroupName: ptr.To("mine")}},
	} {
		t.Run(name, func(t *testing.T) {
			if err := env.Client.Create(ctx, tc.pod); err != nil {
				t.Fatal(err)
			}
			got := &corev1.Pod{}
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(tc.pod), got); err != nil {
				t.Fatal(err)
			}
			if tc.want == nil && got.Spec.SchedulingGroup != nil {
				t.Errorf("schedulingGroup %+v, want none", got.Spec.SchedulingGroup)
			}
			if tc.want != nil && (got.Spec.SchedulingGroup == nil || *got.Spec.SchedulingGroup.PodGroupName != *tc.want.PodGroupName) {
				t.Errorf("schedulingGroup %+v, want podGroupName %s", got.Spec.SchedulingGroup, *tc.want.PodGroupName)
			}
		})
	}
}
