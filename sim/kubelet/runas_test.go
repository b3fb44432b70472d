package kubelet

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// TestRunAs: the container's user and group, else the pod's; with neither
// naming a user, runAsNonRoot runs the image's user (imageUser), as the
// chart's operator pod does on a kubelet, and no securityContext runs the
// simulator's own.
func TestRunAs(t *testing.T) {
	type ids struct{ UID, GID *int64 }
	for name, tc := range map[string]struct {
		pod       *corev1.PodSecurityContext
		container *corev1.SecurityContext
		want      ids
	}{
		"nothing said": {want: ids{}},
		"the pod's user": {pod: &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1000), RunAsGroup: ptr.To[int64](2000)},
			want: ids{ptr.To[int64](1000), ptr.To[int64](2000)}},
		"the container's user over the pod's": {pod: &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1000)},
			container: &corev1.SecurityContext{RunAsUser: ptr.To[int64](65532), RunAsGroup: ptr.To[int64](65532)},
			want:      ids{ptr.To[int64](65532), ptr.To[int64](65532)}},
		"runAsNonRoot on the pod, no user (the chart's)": {pod: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true)},
			container: &corev1.SecurityContext{RunAsNonRoot: ptr.To(true)},
			want:      ids{ptr.To(imageUser), ptr.To(imageUser)}},
		"runAsNonRoot with a group": {container: &corev1.SecurityContext{RunAsNonRoot: ptr.To(true), RunAsGroup: ptr.To[int64](3000)},
			want: ids{ptr.To(imageUser), ptr.To[int64](3000)}},
		"runAsNonRoot false on the container": {pod: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true)},
			container: &corev1.SecurityContext{RunAsNonRoot: ptr.To(false)}, want: ids{}},
	} {
		t.Run(name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{SecurityContext: tc.pod}}
			var got ids
			got.UID, got.GID = runAs(pod, &corev1.Container{Name: "c", SecurityContext: tc.container})
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("user and group (-want +got):\n%s", d)
			}
		})
	}
}
