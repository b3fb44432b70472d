package scope

import (
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestLeaseExpiry(t *testing.T) {
	created := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	acquired := created.Add(time.Second)
	renewed := created.Add(20 * time.Second)
	lease := func(duration *int32, acquire, renew *time.Time) *coordinationv1.Lease {
		l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(created)}}
		l.Spec.LeaseDurationSeconds = duration
		if acquire != nil {
			l.Spec.AcquireTime = ptr.To(metav1.NewMicroTime(*acquire))
		}
		if renew != nil {
			l.Spec.RenewTime = ptr.To(metav1.NewMicroTime(*renew))
		}
		return l
	}
	tests := map[string]struct {
		lease       *coordinationv1.Lease
		want        time.Time
		wantExpires bool
	}{
		"timed from the last renewal":                    {lease(ptr.To[int32](30), &acquired, &renewed), renewed.Add(30 * time.Second), true},
		"no renewal: timed from acquisition":             {lease(ptr.To[int32](30), &acquired, nil), acquired.Add(30 * time.Second), true},
		"neither (older operators): timed from creation": {lease(ptr.To[int32](30), nil, nil), created.Add(30 * time.Second), true},
		"no duration: never expires":                     {lease(nil, &acquired, &renewed), time.Time{}, false},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			got, expires := LeaseExpiry(tt.lease)
			if !got.Equal(tt.want) || expires != tt.wantExpires {
				t.Errorf("LeaseExpiry = %v, %v; want %v, %v", got, expires, tt.want, tt.wantExpires)
			}
		})
	}
}
