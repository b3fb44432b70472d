package v1beta1

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

// A saved annotation is stale when the object was edited in the other
// version since it was written. Edited fields win; a saved part replaces
// its field only while the fields it is represented in are unchanged, and
// what the other version cannot express at all is restored regardless.
func TestStaleAnnotations(t *testing.T) {
	cases := map[string]struct {
		alpha *v1alpha1.DynamoGraphDeployment
		edit  func(*DynamoGraphDeployment)
		want  func(*v1alpha1.DynamoGraphDeployment)
	}{
		"an edited env replaces the envs and mainContainer.env split": {
			alpha: alphaGraph1(func(s *alphaService) {
				s.Envs = []corev1.EnvVar{{Name: "A", Value: "1"}}
				s.ExtraPodSpec.MainContainer.Env = []corev1.EnvVar{{Name: "B", Value: "2"}}
			}),
			edit: func(b *DynamoGraphDeployment) {
				b.Spec.Components[0].PodTemplate.Spec.Containers[0].Env[1].Value = "3"
			},
			want: func(a *v1alpha1.DynamoGraphDeployment) {
				s := a.Spec.Services["worker"]
				s.Envs = []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", Value: "3"}}
				s.ExtraPodSpec.MainContainer.Env = nil
			},
		},
		"what v1beta1 cannot express survives an edit": {
			alpha: alphaGraph1(func(s *alphaService) {
				s.Ingress = &v1alpha1.IngressSpec{Enabled: true, Host: "example.com"}
				s.DynamoNamespace = ptr.To("legacy")
			}),
			edit: func(b *DynamoGraphDeployment) { b.Spec.Components[0].Replicas = ptr.To[int32](5) },
			want: func(a *v1alpha1.DynamoGraphDeployment) { a.Spec.Services["worker"].Replicas = ptr.To[int32](5) },
		},
		"a disabled shared memory's size is kept until shared memory is edited": {
			alpha: alphaGraph1(func(s *alphaService) {
				s.SharedMemory = &v1alpha1.SharedMemorySpec{Disabled: true, Size: ptr.To(resource.MustParse("1Gi"))}
			}),
			edit: func(b *DynamoGraphDeployment) {
				b.Spec.Components[0].SharedMemorySize = ptr.To(resource.MustParse("4Gi"))
			},
			want: func(a *v1alpha1.DynamoGraphDeployment) {
				a.Spec.Services["worker"].SharedMemory = &v1alpha1.SharedMemorySpec{Size: ptr.To(resource.MustParse("4Gi"))}
			},
		},
		"claims stay when the compilation caches change, a new cache's claim is added": {
			alpha: alphaGraph1(func(s *alphaService) {
				s.VolumeMounts = []v1alpha1.VolumeMount{{Name: "cache", MountPoint: "/c", UseAsCompilationCache: true}}
			}, v1alpha1.GraphPVC{Name: "cache", Create: ptr.To(true), StorageClass: "fast",
				Size: ptr.To(resource.MustParse("10Gi")), VolumeAccessMode: corev1.ReadWriteMany}),
			edit: func(b *DynamoGraphDeployment) {
				b.Spec.Components[0].CompilationCache = &CompilationCacheConfig{PVCName: "other", MountPath: "/o"}
			},
			want: func(a *v1alpha1.DynamoGraphDeployment) {
				a.Spec.PVCs = append(a.Spec.PVCs, v1alpha1.GraphPVC{Name: "other"})
				a.Spec.Services["worker"].VolumeMounts = []v1alpha1.VolumeMount{{Name: "other", MountPoint: "/o", UseAsCompilationCache: true}}
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var b DynamoGraphDeployment
			if err := b.ConvertFrom(tc.alpha.DeepCopy()); err != nil {
				t.Fatal(err)
			}
			tc.edit(&b)
			var got v1alpha1.DynamoGraphDeployment
			if err := b.ConvertTo(&got); err != nil {
				t.Fatal(err)
			}
			want := tc.alpha.DeepCopy()
			tc.want(want)
			if d := semanticDiff(want, jsonRoundTrip(t, &got)); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

// The same, the other way: a v1beta1 graph edited in v1alpha1.
func TestStaleAnnotationsFromV1beta1(t *testing.T) {
	in := &DynamoGraphDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: "g", Namespace: "ns"},
		Spec: DynamoGraphDeploymentSpec{
			Restart: &Restart{ID: "1"},
			Components: []DynamoComponentDeploymentSharedSpec{
				{ComponentName: "z", ComponentType: ComponentTypeFrontend, ScalingAdapter: &ScalingAdapter{}},
				{ComponentName: "a", ComponentType: ComponentTypeWorker, PodTemplate: &corev1.PodTemplateSpec{
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "metrics", Image: "m"}, {Name: "main", Image: "i"}}},
				}},
			},
		},
	}
	var a v1alpha1.DynamoGraphDeployment
	if err := in.DeepCopy().ConvertTo(&a); err != nil {
		t.Fatal(err)
	}
	// In v1alpha1: a new service, a new image.
	a.Spec.Services["b"] = &alphaService{ComponentType: v1alpha1.ComponentTypePlanner}
	a.Spec.Services["a"].ExtraPodSpec.MainContainer.Image = "j"
	var got DynamoGraphDeployment
	if err := got.ConvertFrom(&a); err != nil {
		t.Fatal(err)
	}
	want := in.DeepCopy()
	// The restart converts; the order of components and the scaling
	// adapter, which v1alpha1 cannot express, are kept; the new service follows the saved
	// order; the edited main container is the edit, and the containers'
	// order, which the edit could not express, is kept.
	want.Spec.Components[1].PodTemplate.Spec.Containers[1].Image = "j"
	want.Spec.Components = append(want.Spec.Components, DynamoComponentDeploymentSharedSpec{
		ComponentName: "b", ComponentType: ComponentTypePlanner,
	})
	if d := cmp.Diff(want.Spec, got.Spec); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	if len(got.Annotations) != 0 {
		t.Errorf("annotations %v, want none", got.Annotations)
	}
}

// alphaGraph1 is a graph of one worker service with an image, changed by
// service, and the given claims.
func alphaGraph1(service func(*alphaService), pvcs ...v1alpha1.GraphPVC) *v1alpha1.DynamoGraphDeployment {
	s := &alphaService{
		ComponentType: v1alpha1.ComponentTypeWorker,
		Replicas:      ptr.To[int32](1),
		ExtraPodSpec:  &v1alpha1.ExtraPodSpec{MainContainer: &corev1.Container{Image: "i"}},
	}
	service(s)
	return &v1alpha1.DynamoGraphDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: "g", Namespace: "ns"},
		Spec: v1alpha1.DynamoGraphDeploymentSpec{
			Services: map[string]*alphaService{"worker": s},
			PVCs:     pvcs,
		},
	}
}
