package metrics

import (
	"context"
	"errors"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestErrorType(t *testing.T) {
	gr := schema.GroupResource{Group: "apps", Resource: "deployments"}
	tests := []struct {
		err  error
		want string
	}{
		{apierrors.NewConflict(gr, "w", errors.New("changed")), "conflict"},
		{apierrors.NewNotFound(gr, "w"), "not_found"},
		{apierrors.NewAlreadyExists(gr, "w"), "already_exists"},
		{apierrors.NewForbidden(gr, "w", errors.New("rbac")), "forbidden"},
		{apierrors.NewUnauthorized("bad token"), "forbidden"},
		{apierrors.NewInvalid(schema.GroupKind{Kind: "Deployment"}, "w", field.ErrorList{field.Required(field.NewPath("spec"), "")}), "validation"},
		{apierrors.NewBadRequest("no"), "validation"},
		{apierrors.NewTooManyRequests("slow down", 1), "too_many_requests"},
		{apierrors.NewTimeoutError("slow", 1), "timeout"},
		{apierrors.NewServerTimeout(gr, "get", 1), "timeout"},
		{fmt.Errorf("waiting: %w", context.DeadlineExceeded), "timeout"},
		{apierrors.NewInternalError(errors.New("etcd")), "internal"},
		{apierrors.NewServiceUnavailable("down"), "internal"},
		// Wrapped as the controllers wrap them.
		{fmt.Errorf("applying Deployment w: %w", apierrors.NewConflict(gr, "w", errors.New("x"))), "conflict"},
		{errors.New("dial tcp: connection refused"), "other"},
	}
	for _, tt := range tests {
		if got := ErrorType(tt.err); got != tt.want {
			t.Errorf("ErrorType(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
}
