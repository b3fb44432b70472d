package render

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/dynamoctl/dynamo-operator/internal/builders"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

func TestPVCs(t *testing.T) {
	size := func(s string) *resource.Quantity { q := resource.MustParse(s); return &q }
	dgd := builders.MakeGraph("g", "ns").
		Service("b-worker", builders.MakeEmptyService().PVC(&v1alpha1.ServicePVC{Create: ptr.To(true), Name: ptr.To("svc-cache"), Size: size("10Gi")})).
		Service("a-worker", builders.MakeEmptyService().PVC(&v1alpha1.ServicePVC{Create: ptr.To(true), Name: ptr.To("models"), Size: size("1Gi"), StorageClass: "slow"})).
		Service("c-worker", builders.MakeEmptyService().PVC(&v1alpha1.ServicePVC{Create: ptr.To(false), Name: ptr.To("not-created"), Size: size("1Gi")})).
		Service("d-worker", builders.MakeEmptyService().PVC(&v1alpha1.ServicePVC{Create: ptr.To(true), Size: size("1Gi")})).
		Service("e-worker", builders.MakeEmptyService().PVC(&v1alpha1.ServicePVC{Name: ptr.To("create-unset")})).
		Service("f-worker", nil).
		Service("g-worker", builders.MakeEmptyService()).
		Service("h-worker", builders.MakeEmptyService().PVC(&v1alpha1.ServicePVC{Create: ptr.To(true), Name: ptr.To("svc-cache"), Size: size("99Gi")})).
		Obj()
	dgd.Labels = map[string]string{"team": "a", "kubectl.kubernetes.io/x": "y"}
	dgd.Spec.Labels = map[string]string{"team": "spec"}
	dgd.Spec.PVCs = []v1alpha1.GraphPVC{
		{Name: "models", Create: ptr.To(true), StorageClass: "fast", Size: size("100Gi"), VolumeAccessMode: corev1.ReadWriteMany},
		{Name: "existing"},
		{Name: "explicitly-not", Create: ptr.To(false), StorageClass: "fast", Size: size("1Gi")},
	}

	got := PVCs(dgd)
	var names []string
	for _, p := range got {
		names = append(names, p.Name)
	}
	if diff := cmp.Diff([]string{"models", "svc-cache"}, names); diff != "" {
		t.Fatalf("claims (-want +got):\n%s", diff)
	}
	for _, p := range got {
		if p.APIVersion != "v1" || p.Kind != "PersistentVolumeClaim" {
			t.Errorf("%s: TypeMeta %+v", p.Name, p.TypeMeta)
		}
		if p.Namespace != "ns" || len(p.OwnerReferences) != 0 {
			t.Errorf("%s: namespace %q, owners %v", p.Name, p.Namespace, p.OwnerReferences)
		}
		want := map[string]string{LabelGraphName: "g", LabelManagedBy: ManagedByValue, LabelPVCRetained: "true", "team": "spec"}
		if diff := cmp.Diff(want, p.Labels); diff != "" {
			t.Errorf("%s: labels (-want +got):\n%s", p.Name, diff)
		}
	}

	// spec.pvcs wins over a service's claim of the same name.
	models := got[0]
	if diff := cmp.Diff([]corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}, models.Spec.AccessModes); diff != "" {
		t.Errorf("models access modes (-want +got):\n%s", diff)
	}
	if models.Spec.StorageClassName == nil || *models.Spec.StorageClassName != "fast" {
		t.Errorf("models storage class %v", models.Spec.StorageClassName)
	}
	if q := models.Spec.Resources.Requests[corev1.ResourceStorage]; q.String() != "100Gi" {
		t.Errorf("models size %s", q.String())
	}

	// A service claim: ReadWriteOnce by default, the cluster's default class,
	// and the first service in name order wins a repeated name.
	cache := got[1]
	if diff := cmp.Diff([]corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, cache.Spec.AccessModes); diff != "" {
		t.Errorf("svc-cache access modes (-want +got):\n%s", diff)
	}
	if cache.Spec.StorageClassName != nil {
		t.Errorf("svc-cache storage class %q, want the cluster default", *cache.Spec.StorageClassName)
	}
	if q := cache.Spec.Resources.Requests[corev1.ResourceStorage]; q.String() != "10Gi" {
		t.Errorf("svc-cache size %s", q.String())
	}
}

func TestPVCsNone(t *testing.T) {
	if got := PVCs(builders.MakeGraph("g", "ns").Service("a", builders.MakeEmptyService()).Obj()); len(got) != 0 {
		t.Errorf("claims %v", got)
	}
}

func TestPVCsDoNotShareStorage(t *testing.T) {
	q := resource.MustParse("1Gi")
	dgd := builders.MakeGraph("g", "ns").Obj()
	dgd.Spec.PVCs = []v1alpha1.GraphPVC{{Name: "m", Create: ptr.To(true), StorageClass: "s", Size: &q}}
	got := PVCs(dgd)
	got[0].Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("5Gi")
	*got[0].Spec.StorageClassName = "changed"
	if dgd.Spec.PVCs[0].Size.String() != "1Gi" || dgd.Spec.PVCs[0].StorageClass != "s" {
		t.Error("a rendered claim shares storage with the graph")
	}
}
