package steps

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/cucumber/godog"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// Steps that change objects after they exist and watch them go.

func (w *world) object(kind, name string) (*unstructured.Unstructured, error) {
	gvk, err := ResolveKind(w.cluster.Client.RESTMapper(), w.cluster.Client.Scheme(), kind)
	if err != nil {
		return nil, err
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	obj.SetNamespace(w.namespace)
	obj.SetName(name)
	return obj, nil
}

// patchWith merge-patches an object with a YAML or JSON document, as
// kubectl patch --type merge does; null removes a field or map entry.
func (w *world) patchWith(ctx context.Context, kind, name string, doc *godog.DocString) error {
	obj, err := w.object(kind, name)
	if err != nil {
		return err
	}
	patch, err := yaml.YAMLToJSON([]byte(doc.Content))
	if err != nil {
		return fmt.Errorf("the patch in the feature file does not parse: %w", err)
	}
	w.lastErr = w.cluster.Client.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch))
	return w.lastErr
}

func (w *world) deleteWith(ctx context.Context, kind, name, propagation string) error {
	obj, err := w.object(kind, name)
	if err != nil {
		return err
	}
	policy := metav1.DeletionPropagation(strings.ToUpper(propagation[:1]) + propagation[1:])
	switch policy {
	case metav1.DeletePropagationForeground, metav1.DeletePropagationBackground, metav1.DeletePropagationOrphan:
	default:
		return fmt.Errorf("unknown propagation %q: use foreground, background or orphan", propagation)
	}
	return w.cluster.Client.Delete(ctx, obj, client.PropagationPolicy(policy))
}

func (w *world) exists(ctx context.Context, kind, name string) error {
	obj, err := w.object(kind, name)
	if err != nil {
		return err
	}
	return w.cluster.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj)
}

func (w *world) eventuallyGone(ctx context.Context, kind, name string) error {
	obj, err := w.object(kind, name)
	if err != nil {
		return err
	}
	return w.eventually(ctx, func() error {
		err := w.cluster.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return err
		default:
			return fmt.Errorf("%s %q still exists (finalizers %v, deleting since %v)", kind, name,
				obj.GetFinalizers(), obj.GetDeletionTimestamp())
		}
	})
}

func (w *world) eventuallyExists(ctx context.Context, kind, name string) error {
	return w.eventually(ctx, func() error { return w.exists(ctx, kind, name) })
}

// eventually retries check until it succeeds or the scenario's timeout
// passes, and returns its last error.
func (w *world) eventually(ctx context.Context, check func() error) error {
	timeout := w.cluster.EventualTimeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	return eventuallyWithin(ctx, timeout, check)
}

// eventuallyWithin retries check every 100 ms until it passes or timeout
// has passed.
func eventuallyWithin(ctx context.Context, timeout time.Duration, check func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %s: %w", timeout, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
