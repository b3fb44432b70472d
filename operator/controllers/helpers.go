package controllers

import (
	"context"
	"reflect"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// specOrMetadataChanged passes creations, deletions and updates that change
// the spec (generation), labels or annotations: not the status writes a
// controller makes itself, which would only wake it to find nothing to do,
// and sometimes before its cache shows what it just created.
func specOrMetadataChanged() predicate.Predicate {
	return predicate.Or(predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{},
		predicate.AnnotationChangedPredicate{})
}

// FieldOwner is the field manager of every write the operator makes.
const FieldOwner = "dynamo-operator"

// getOptional reads obj from the cache; nil without error when it does not exist.
func getOptional[T client.Object](ctx context.Context, c client.Client, key client.ObjectKey, obj T) (T, error) {
	var zero T
	if err := c.Get(ctx, key, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return zero, nil
		}
		return zero, err
	}
	return obj, nil
}

// lookup is getOptional from the cache, then, when the cache has no such
// object and reader is set, from the API server: the cache holds only the
// children that carry this operator's label, and an object another
// operator made under the same name must be found, not applied over blind.
func lookup[T client.Object](ctx context.Context, c client.Client, reader client.Reader, key client.ObjectKey, obj T) (T, error) {
	found, err := getOptional(ctx, c, key, obj)
	if err != nil || asObject(found) != nil || reader == nil {
		return found, err
	}
	var zero T
	if err := reader.Get(ctx, key, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return zero, nil
		}
		return zero, err
	}
	return obj, nil
}

// asObject returns obj as a client.Object that is nil when obj is nil,
// including a nil pointer held in an interface, so callers can test == nil.
func asObject(obj client.Object) client.Object {
	if obj == nil {
		return nil
	}
	if v := reflect.ValueOf(obj); v.Kind() == reflect.Pointer && v.IsNil() {
		return nil
	}
	return obj
}

// patchStatus applies mutate to obj and patches the status subresource with
// the difference, saying whether it wrote. A status that did not change is
// not written at all. The
// merge patch carries no resourceVersion: status has one writer, this
// controller, so there is nothing to conflict with.
func patchStatus[T client.Object](ctx context.Context, c client.Client, obj T, mutate func(T)) (wrote bool, err error) {
	orig := obj.DeepCopyObject().(T)
	mutate(obj)
	if equality.Semantic.DeepEqual(orig, obj) {
		return false, nil
	}
	return true, c.Status().Patch(ctx, obj, client.MergeFrom(orig), client.FieldOwner(FieldOwner))
}

// quietWhenTerminating drops an error of a write refused because its
// namespace is being deleted: the objects are going away, there is nothing
// to retry and nothing to report.
func quietWhenTerminating(res reconcile.Result, err error) (reconcile.Result, error) {
	if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
		return reconcile.Result{}, nil
	}
	return res, err
}

// isUserError reports whether the API server refused a write for a reason
// only a change of the user's spec can fix (an invalid object, a webhook
// denial), as opposed to a transient failure worth retrying.
func isUserError(err error) bool {
	return apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) || isWebhookDenial(err)
}

// isWebhookDenial matches the API server's wording for a denial by any
// validating admission webhook, such as a policy engine's.
func isWebhookDenial(err error) bool {
	return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "admission webhook") &&
		strings.Contains(err.Error(), "denied the request")
}

func conditionsEqual(a, b []metav1.Condition) bool {
	return equality.Semantic.DeepEqual(a, b)
}
