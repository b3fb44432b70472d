package steps

import (
	"context"
	"fmt"
	"strings"

	"github.com/cucumber/godog"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/dynamoctl/dynamo-operator/internal/await"
)

// Steps that read an object's fields, change objects after they exist and
// watch them come and go.

func registerLifecycleSteps(sc *godog.ScenarioContext, w *world) {
	sc.Step(`^the (\S+) `+quoted+` has `+anything+` equal to `+anything+`$`, unquote4(w.fieldEquals))
	sc.Step(`^the (\S+) `+quoted+` has `+anything+` containing `+anything+`$`, unquote4(w.fieldContains))
	sc.Step(`^I patch the (\S+) `+quoted+` with:$`, w.patchWith)
	sc.Step(`^I delete the (\S+) `+quoted+` with (\w+) propagation$`, w.deleteWith)
	sc.Step(`^the (\S+) `+quoted+` exists$`, w.exists)
	sc.Step(`^the (\S+) `+quoted+` eventually exists$`, w.eventuallyExists)
	sc.Step(`^the (\S+) `+quoted+` is eventually gone$`, w.eventuallyGone)
	sc.Step(`^the (\S+) `+quoted+` eventually has `+anything+` equal to `+anything+`$`, unquote4(w.fieldEventuallyEquals))
}

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
	return w.eventually(ctx, kind+" "+name+" gone", func() error {
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
	return w.eventually(ctx, kind+" "+name, func() error { return w.exists(ctx, kind, name) })
}

// eventually waits until check passes, up to the suite's EventualTimeout
// unless opts say otherwise; the error names what and check's last error.
func (w *world) eventually(ctx context.Context, what string, check func() error, opts ...await.Option) error {
	return await.Until(ctx, what, check, append([]await.Option{await.Within(w.timeout())}, opts...)...)
}

func (w *world) fieldEquals(ctx context.Context, kind, name, path, want string) error {
	got, err := w.readField(ctx, kind, name, path)
	if err != nil {
		return err
	}
	if got != want {
		return fmt.Errorf("%s %q %s: expected %q, got %q", kind, name, path, want, got)
	}
	return nil
}

func (w *world) fieldContains(ctx context.Context, kind, name, path, want string) error {
	got, err := w.readField(ctx, kind, name, path)
	if err != nil {
		return err
	}
	if !strings.Contains(got, want) {
		return fmt.Errorf("%s %q %s: expected it to contain %q, got %q", kind, name, path, want, got)
	}
	return nil
}

func (w *world) fieldEventuallyEquals(ctx context.Context, kind, name, path, want string) error {
	err := w.eventually(ctx, kind+" "+name+" with "+path+" equal to "+want, func() error { return w.fieldEquals(ctx, kind, name, path, want) })
	if err != nil {
		if status, serr := w.readField(ctx, kind, name, ".status"); serr == nil {
			err = fmt.Errorf("%w\nlast status: %s", err, truncate(status, 1500))
		}
	}
	return err
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

func (w *world) readField(ctx context.Context, kind, name, path string) (string, error) {
	obj, err := w.read(ctx, kind, name)
	if err != nil {
		return "", err
	}
	return JSONPathValue(obj.Object, path)
}

// read gets the object of a kind, named as a user writes it (ResolveKind),
// from the scenario's namespace.
func (w *world) read(ctx context.Context, kind, name string) (*unstructured.Unstructured, error) {
	obj, err := w.object(kind, name)
	if err != nil {
		return nil, err
	}
	return obj, w.cluster.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj)
}
