package webhooks

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// validator adapts the pure Validate functions of one kind to
// controller-runtime's admission.Validator.
type validator[T client.Object] struct {
	kind     schema.GroupKind
	create   func(T) (field.ErrorList, []string)
	update   func(old, cur T) (field.ErrorList, []string)
	excluded func(namespace string) bool
}

func (v *validator[T]) ValidateCreate(ctx context.Context, obj T) (admission.Warnings, error) {
	if v.skip(obj) {
		return nil, nil
	}
	errs, warnings := v.create(obj)
	recordReasons(ctx, errs)
	return warnings, v.invalid(obj, errs)
}

func (v *validator[T]) ValidateUpdate(ctx context.Context, old, cur T) (admission.Warnings, error) {
	// Removing the last finalizer of an object being deleted must never be
	// blocked, whatever the object holds.
	if v.skip(cur) || cur.GetDeletionTimestamp() != nil {
		return nil, nil
	}
	errs, warnings := v.update(old, cur)
	recordReasons(ctx, errs)
	return warnings, v.invalid(cur, errs)
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

// invalid is the Kubernetes Invalid status listing every violation, or nil.
func (v *validator[T]) invalid(obj T, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(v.kind, obj.GetName(), errs)
}
