package v1beta1

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

// A restart saved in the annotation before v1alpha1 had the field is shown
// in v1beta1 while v1alpha1 holds none; a restart of v1alpha1 wins.
func TestLegacySavedRestart(t *testing.T) {
	legacy := `{"parts":{"restart":{"value":{"id":"old"}}}}`
	cases := map[string]struct {
		alpha *v1alpha1.Restart
		want  *Restart
	}{
		"none in v1alpha1": {want: &Restart{ID: "old"}},
		"one in v1alpha1": {
			alpha: &v1alpha1.Restart{ID: "new", Strategy: &v1alpha1.RestartStrategy{Type: v1alpha1.RestartStrategyTypeParallel}},
			want:  &Restart{ID: "new", Strategy: &RestartStrategy{Type: RestartStrategyTypeParallel}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			a := &v1alpha1.DynamoGraphDeployment{
				ObjectMeta: metav1.ObjectMeta{Name: "g", Annotations: map[string]string{AnnotationBetaSpec: legacy}},
				Spec: v1alpha1.DynamoGraphDeploymentSpec{
					Services: map[string]*v1alpha1.DynamoComponentDeploymentSharedSpec{"f": {ComponentType: v1alpha1.ComponentTypeFrontend}},
					Restart:  tc.alpha,
				},
			}
			var b DynamoGraphDeployment
			if err := b.ConvertFrom(a); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, b.Spec.Restart); diff != "" {
				t.Errorf("spec.restart (-want +got):\n%s", diff)
			}
		})
	}
}
