package storagemigration

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

// retryable marks an error that transient must take as passing whatever
// its status code.
type retryable struct{ error }

func (r retryable) Unwrap() error { return r.error }

// counts are a pass's objects by result.
type counts map[string]int

func (c counts) String() string {
	if len(c) == 0 {
		return "no objects"
	}
	parts := make([]string, 0, len(c))
	for _, k := range slices.Sorted(maps.Keys(c)) {
		parts = append(parts, fmt.Sprintf("%d %s", c[k], k))
	}
	return strings.Join(parts, ", ")
}

// migrate runs one pass over the CRD name: nothing when storedVersions is
// already the storage version alone; otherwise every object rewritten,
// then storedVersions trimmed.
func (m *Migrator) migrate(ctx context.Context, name string) error {
	u, err := m.Client.Resource(crdResource).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		m.Log.V(1).Info("CRD not installed: nothing stored to migrate", "crd", name)
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading the CRD: %w", err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, crd); err != nil {
		return fmt.Errorf("decoding the CRD: %w", err)
	}
	staleVersionsGauge.WithLabelValues(name).Set(float64(len(staleVersions(crd))))
	if !needsMigration(crd) {
		passesTotal.WithLabelValues(name, passCurrent).Inc()
		m.Log.V(1).Info("stored versions are the storage version alone: nothing to migrate",
			"crd", name, "storedVersions", crd.Status.StoredVersions)
		return nil
	}
	storage := storageVersion(crd)
	start := m.Clock.Now()
	m.Log.Info("rewriting every object in the storage version", "crd", name, "storageVersion", storage,
		"storedVersions", crd.Status.StoredVersions)
	gvr := objectsResource(crd, storage)
	c, err := m.rewriteAll(ctx, name, gvr)
	if err != nil {
		return fmt.Errorf("rewriting objects in %s (%v so far): %w", storage, c, err)
	}
	if err := m.trim(ctx, crd); err != nil {
		return err
	}
	staleVersionsGauge.WithLabelValues(name).Set(0)
	passesTotal.WithLabelValues(name, passMigrated).Inc()
	m.Log.Info("stored versions trimmed: every object is held in the storage version", "crd", name,
		"storageVersion", storage, "from", crd.Status.StoredVersions, "objects", c.String(), "took", m.Clock.Since(start))
	m.event(u, corev1.EventTypeNormal, "StorageMigrated", "Rewrote the objects in %s (%v); storedVersions %v trimmed to [%s]",
		storage, c, crd.Status.StoredVersions, storage)
	return nil
}

// trim patches storedVersions to the storage version, unless the CRD
// changed since crd was read (see trimPatch): the API server then refuses
// the patch's tests, and the pass runs again.
func (m *Migrator) trim(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) error {
	patch, err := trimPatch(crd)
	if err != nil {
		return err
	}
	_, err = m.Client.Resource(crdResource).Patch(ctx, crd.Name, types.JSONPatchType, patch,
		metav1.PatchOptions{FieldManager: FieldManager}, "status")
	if apierrors.IsInvalid(err) || apierrors.IsConflict(err) {
		return retryable{fmt.Errorf("the CRD changed while its objects were rewritten: %w", err)}
	}
	if err != nil {
		return fmt.Errorf("trimming storedVersions: %w", err)
	}
	return nil
}

// objectsResource is the resource of the CRD's objects in version.
func objectsResource(crd *apiextensionsv1.CustomResourceDefinition, version string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: crd.Spec.Group, Version: version, Resource: crd.Spec.Names.Plural}
}

// rewriteAll writes back every object of gvr, listed a page at a time. A
// transient error ends the pass at once; an object refused for good is
// reported and the others are still rewritten, so one bad object does not
// hold the rest back.
func (m *Migrator) rewriteAll(ctx context.Context, crd string, gvr schema.GroupVersionResource) (counts, error) {
	ri := m.Client.Resource(gvr)
	c := counts{}
	var failed []error
	opts := metav1.ListOptions{Limit: m.PageSize}
	for {
		list, err := ri.List(ctx, opts)
		if err != nil {
			return c, fmt.Errorf("listing %s: %w", gvr.Resource, err)
		}
		for i := range list.Items {
			result, err := m.rewrite(ctx, ri, &list.Items[i])
			if err != nil && transient(err) {
				result = resultRetried
			}
			c[result]++
			objectsTotal.WithLabelValues(crd, result).Inc()
			switch {
			case err == nil:
			case result == resultRetried:
				return c, err
			default:
				m.Log.Error(err, "object not rewritten in the storage version", "crd", crd)
				failed = append(failed, err)
			}
		}
		if list.GetContinue() == "" {
			return c, summarize(failed)
		}
		opts.Continue = list.GetContinue()
	}
}

// rewrite writes obj back as read. On a conflict it reads the object again
// and writes that: whoever wrote it meanwhile may have written it in the
// storage version already, and then the API server writes nothing.
func (m *Migrator) rewrite(ctx context.Context, ri dynamic.NamespaceableResourceInterface, obj *unstructured.Unstructured) (string, error) {
	client := ri.Namespace(obj.GetNamespace())
	for attempt := 1; ; attempt++ {
		read := obj.GetResourceVersion()
		out, err := client.Update(ctx, obj, metav1.UpdateOptions{FieldManager: FieldManager})
		switch {
		case err == nil && out.GetResourceVersion() == read:
			return resultCurrent, nil
		case err == nil:
			return resultRewritten, nil
		case apierrors.IsNotFound(err):
			return resultGone, nil
		case !apierrors.IsConflict(err) || attempt == maxConflicts:
			return resultFailed, fmt.Errorf("%s: %w", key(obj), err)
		}
		obj, err = client.Get(ctx, obj.GetName(), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return resultGone, nil
		}
		if err != nil {
			return resultFailed, fmt.Errorf("%s: reading it again after a conflict: %w", key(obj), err)
		}
	}
}

func key(obj *unstructured.Unstructured) string {
	if obj.GetNamespace() == "" {
		return obj.GetName()
	}
	return obj.GetNamespace() + "/" + obj.GetName()
}

// summarize joins the first failures and counts the others.
func summarize(failed []error) error {
	if len(failed) <= maxReported {
		return errors.Join(failed...)
	}
	return errors.Join(append(slices.Clone(failed[:maxReported]),
		fmt.Errorf("and %d more objects", len(failed)-maxReported))...)
}

// report logs a pass that failed and counts it; one that needs someone to
// act is also an event on the CRD.
func (m *Migrator) report(name string, err error) {
	if transient(err) {
		passesTotal.WithLabelValues(name, passRetried).Inc()
		m.Log.Info("storage migration will be retried", "crd", name, "reason", err.Error())
		return
	}
	passesTotal.WithLabelValues(name, passFailed).Inc()
	m.Log.Error(err, "storage migration failed; it will be retried", "crd", name)
	crd := &unstructured.Unstructured{}
	crd.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
	crd.SetName(name)
	m.event(crd, corev1.EventTypeWarning, "StorageMigrationFailed",
		"Objects could not be rewritten in the storage version, so storedVersions is kept: %v", err)
}

func (m *Migrator) event(regarding runtime.Object, eventType, reason, note string, args ...any) {
	if m.Recorder != nil {
		m.Recorder.Eventf(regarding, nil, eventType, reason, "MigrateStorage", note, args...)
	}
}
