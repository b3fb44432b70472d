package rules

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/dynamoctl/dynamo-operator/internal/builders"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1beta1"
)

// graphWithDecode is a graph whose decode component has replicas (nil:
// unset) and, with adapter, a scaling adapter; written in v1beta1 and
// stored in v1alpha1.
func graphWithDecode(t *testing.T, replicas *int32, adapter bool) *v1alpha1.DynamoGraphDeployment {
	t.Helper()
	c := builders.MakeBetaComponent("decode").Type(v1beta1.ComponentTypeWorker)
	if replicas != nil {
		c = c.Replicas(*replicas)
	}
	if adapter {
		c = c.ScalingAdapter(&v1beta1.ScalingAdapter{})
	}
	dgd := &v1alpha1.DynamoGraphDeployment{}
	if err := builders.MakeBetaGraph("llm", "ns").Component(c).Obj().ConvertTo(dgd); err != nil {
		t.Fatal(err)
	}
	return dgd
}

func TestAdapterReplicas(t *testing.T) {
	one, two := int32(1), int32(2)
	const user = "alice"
	planner := "system:serviceaccount:team-a:" + PlannerServiceAccount
	forbidden := field.ErrorList{field.Forbidden(field.NewPath("spec", "services").Child("decode", "replicas"),
		"cannot be modified directly when scaling adapter is enabled; scale or update the related "+
			"DynamoGraphDeploymentScalingAdapter llm-decode instead").WithOrigin(ReasonAdapterReplicas)}
	cases := map[string]struct {
		old, cur     *v1alpha1.DynamoGraphDeployment
		requester    string
		wantErrs     field.ErrorList
		wantWarnings []string
	}{
		"no adapter: replicas change":                 {old: graphWithDecode(t, &one, false), cur: graphWithDecode(t, &two, false), requester: user},
		"adapter: replicas unchanged":                 {old: graphWithDecode(t, &two, true), cur: graphWithDecode(t, &two, true), requester: user},
		"adapter: unset is 1":                         {old: graphWithDecode(t, nil, true), cur: graphWithDecode(t, &one, true), requester: user},
		"adapter: a user's change is refused":         {old: graphWithDecode(t, &one, true), cur: graphWithDecode(t, &two, true), requester: user, wantErrs: forbidden},
		"opting in with a change is refused":          {old: graphWithDecode(t, &one, false), cur: graphWithDecode(t, &two, true), requester: user, wantErrs: forbidden},
		"opting out with a change is refused":         {old: graphWithDecode(t, &one, true), cur: graphWithDecode(t, &two, false), requester: user, wantErrs: forbidden},
		"opting out alone is allowed":                 {old: graphWithDecode(t, &one, true), cur: graphWithDecode(t, &one, false), requester: user},
		"a ServiceAccount of another name is refused": {old: graphWithDecode(t, &one, true), cur: graphWithDecode(t, &two, true), requester: "system:serviceaccount:team-a:ci", wantErrs: forbidden},
		"v1alpha1 scalingAdapter enabled: a user's change is refused": {
			old:       builders.MakeGraph("llm", "ns").Service("decode", builders.MakeService().Replicas(1).ScalingAdapter(true)).Obj(),
			cur:       builders.MakeGraph("llm", "ns").Service("decode", builders.MakeService().Replicas(2).ScalingAdapter(true)).Obj(),
			requester: user, wantErrs: forbidden,
		},
		"v1alpha1 scalingAdapter disabled: replicas change": {
			old:       builders.MakeGraph("llm", "ns").Service("decode", builders.MakeService().Replicas(1).ScalingAdapter(false)).Obj(),
			cur:       builders.MakeGraph("llm", "ns").Service("decode", builders.MakeService().Replicas(2).ScalingAdapter(false)).Obj(),
			requester: user,
		},
		"the planner's change is let through, warned": {
			old: graphWithDecode(t, &one, true), cur: graphWithDecode(t, &two, true), requester: planner,
			wantWarnings: []string{"spec.services.decode.replicas: the scaling adapter llm-decode owns these replicas; the change takes effect only if the service opts out"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			errs, warnings := AdapterReplicas(tc.old, tc.cur, tc.requester)
			if diff := cmp.Diff(tc.wantErrs, errs, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantWarnings, warnings, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}
