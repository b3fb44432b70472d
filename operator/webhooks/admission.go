package webhooks

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1beta1"
)

// validator adapts the pure Validate functions of one kind to
// controller-runtime's admission.Validator.
type validator[T client.Object] struct {
	kind   schema.GroupKind
	create func(T) (field.ErrorList, []string)
	update func(old, cur T) (field.ErrorList, []string)
	// updateBy, when set, are the rules of an update that depend on who
	// makes it (the user the API server authenticated).
	updateBy func(old, cur T, user string) (field.ErrorList, []string)
	excluded func(namespace string) bool
	// beta moves the paths of violations found on the v1alpha1 form of an
	// object to where a user who wrote it in v1beta1 wrote each field; nil
	// for kinds served in v1alpha1 only.
	beta func(T, field.ErrorList) field.ErrorList
}

func (v *validator[T]) ValidateCreate(ctx context.Context, obj T) (admission.Warnings, error) {
	if v.skip(obj) {
		return nil, nil
	}
	errs, warnings := v.create(obj)
	recordReasons(ctx, errs)
	return warnings, v.invalid(ctx, obj, errs)
}

func (v *validator[T]) ValidateUpdate(ctx context.Context, old, cur T) (admission.Warnings, error) {
	// Removing the last finalizer of an object being deleted must never be
	// blocked, whatever the object holds.
	if v.skip(cur) || cur.GetDeletionTimestamp() != nil {
		return nil, nil
	}
	errs, warnings := v.update(old, cur)
	if v.updateBy != nil {
		e, w := v.updateBy(old, cur, requester(ctx))
		errs, warnings = append(errs, e...), append(warnings, w...)
	}
	recordReasons(ctx, errs)
	return warnings, v.invalid(ctx, cur, errs)
}

// ValidateDelete allows every deletion; the configurations do not even send
// DELETE, this satisfies the interface.
func (v *validator[T]) ValidateDelete(context.Context, T) (admission.Warnings, error) {
	return nil, nil
}

// skip is true in a namespace a namespace-scoped operator owns: its own
// webhook judges the object there.
func (v *validator[T]) skip(obj T) bool {
	return v.excluded != nil && v.excluded(obj.GetNamespace())
}

// invalid is the Kubernetes Invalid status listing every violation, or nil,
// each at its path in the version the request was written in.
func (v *validator[T]) invalid(ctx context.Context, obj T, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	if v.beta != nil && requestedVersion(ctx) == v1beta1.GroupVersion.Version {
		errs = v.beta(obj, errs)
	}
	return apierrors.NewInvalid(v.kind, obj.GetName(), errs)
}

// requestedVersion is the API version the request was made in, before the
// API server converted it to the version the webhook is registered for.
func requestedVersion(ctx context.Context) string {
	req, err := admission.RequestFromContext(ctx)
	if err != nil || req.RequestKind == nil {
		return ""
	}
	return req.RequestKind.Version
}

// requester is the user who made the request, as the API server
// authenticated it.
func requester(ctx context.Context) string {
	req, err := admission.RequestFromContext(ctx)
	if err != nil {
		return ""
	}
	return req.UserInfo.Username
}
