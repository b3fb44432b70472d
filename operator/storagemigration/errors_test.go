package storagemigration

import (
	"errors"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestTransient(t *testing.T) {
	gr := schema.GroupResource{Group: "nvidia.com", Resource: "dynamographdeployments"}
	for name, tc := range map[string]struct {
		err  error
		want bool
	}{
		"conversion webhook unreachable": {apierrors.NewInternalError(errors.New(`conversion webhook for nvidia.com/v1beta1 failed: service "dynamo-operator-webhook" not found`)), true},
		"conflict after re-reads":        {apierrors.NewConflict(gr, "g", errors.New("modified")), true},
		"server timeout":                 {apierrors.NewServerTimeout(gr, "list", 1), true},
		"timeout":                        {apierrors.NewTimeoutError("slow", 1), true},
		"throttled":                      {apierrors.NewTooManyRequests("slow down", 1), true},
		"unavailable":                    {apierrors.NewServiceUnavailable("starting"), true},
		"continue token expired":         {apierrors.NewResourceExpired("too old"), true},
		"bad gateway":                    {apierrors.NewGenericServerResponse(502, "list", gr, "", "", 0, false), true},
		"connection refused":             {errors.New("dial tcp 127.0.0.1:6443: connect: connection refused"), true},
		"wrapped server error":           {fmt.Errorf("listing: %w", apierrors.NewInternalError(errors.New("etcd"))), true},
		"marked retryable":               {retryable{apierrors.NewInvalid(schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}, "x", nil)}, true},
		"refused as invalid":             {apierrors.NewInvalid(schema.GroupKind{Group: "nvidia.com", Kind: "DynamoGraphDeployment"}, "g", field.ErrorList{field.Required(field.NewPath("spec"), "")}), false},
		"forbidden":                      {apierrors.NewForbidden(gr, "g", errors.New("RBAC")), false},
		"denied by an admission webhook": {apierrors.NewBadRequest("admission webhook denied the request"), false},
	} {
		t.Run(name, func(t *testing.T) {
			if got := transient(tc.err); got != tc.want {
				t.Errorf("transient(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}
