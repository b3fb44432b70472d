// Package migration puts a cluster in the state Dynamo's own operator
// leaves it in (../shared/migration: its CRDs, the graphs and components
// with the statuses it wrote, the children it created), for the tests and
// scenarios of taking such a cluster over.
package migration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/onsi/gomega"
	yamlv3 "go.yaml.in/yaml/v3"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/dynamoctl/dynamo-operator/internal/await"
)

// Dir is ../shared/migration beside the repository root.
func Dir(repoRoot string) string { return filepath.Join(repoRoot, "..", "shared", "migration") }

// Fixtures are the migration files, read.
type Fixtures struct {
	// DynamoCRDs are Dynamo's CRDs as its chart installs them.
	DynamoCRDs []*apiextensionsv1.CustomResourceDefinition
	// Objects are the graphs, then the components, then their children, in
	// an order in which every owner comes before what it owns.
	Objects []*unstructured.Unstructured
}

// Load reads dir. A missing file is an error: tests must not pass on nothing.
func Load(dir string) (*Fixtures, error) {
	f := &Fixtures{}
	crdFiles, err := filepath.Glob(filepath.Join(dir, "crds", "*.yaml"))
	if err != nil {
		return nil, err
	}
	if len(crdFiles) == 0 {
		return nil, fmt.Errorf("no CRDs under %s/crds", dir)
	}
	for _, file := range crdFiles {
		crds, err := ReadCRDs(file)
		if err != nil {
			return nil, err
		}
		f.DynamoCRDs = append(f.DynamoCRDs, crds...)
	}
	for _, name := range []string{"graphs-and-components.yaml", "children.yaml"} {
		objs, err := readObjects(filepath.Join(dir, name))
		if err != nil {
			return nil, err
		}
		f.Objects = append(f.Objects, objs...)
	}
	return f, nil
}

// ReadCRDs reads the CRDs of one YAML file.
func ReadCRDs(file string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var out []*apiextensionsv1.CustomResourceDefinition
	err := eachDocument(file, func(raw []byte) error {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(raw, crd); err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		if crd.Kind == "" { // a document of comments only
			return nil
		}
		out = append(out, crd)
		return nil
	})
	return out, err
}

// readObjects reads the objects of a file, unpacking kubectl's List.
func readObjects(file string) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	err := eachDocument(file, func(raw []byte) error {
		// YAML 1.2, as the files were written: an env value `n` is the
		// string "n", not YAML 1.1's false.
		var m map[string]any
		if err := yamlv3.Unmarshal(raw, &m); err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		asJSON, err := json.Marshal(m)
		if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		u := &unstructured.Unstructured{}
		if err := json.Unmarshal(asJSON, &u.Object); err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		if u.Object == nil || u.GetKind() == "" { // a document of comments only
			return nil
		}
		if !u.IsList() {
			out = append(out, u)
			return nil
		}
		return u.EachListItem(func(o runtime.Object) error {
			out = append(out, o.(*unstructured.Unstructured))
			return nil
		})
	})
	if err == nil && len(out) == 0 {
		err = fmt.Errorf("%s holds no objects", file)
	}
	return out, err
}

func eachDocument(file string, each func([]byte) error) error {
	fh, err := os.Open(file)
	if err != nil {
		return err
	}
	defer func() { _ = fh.Close() }()
	reader := utilyaml.NewYAMLReader(bufio.NewReader(fh))
	for {
		raw, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		if len(bytes.TrimSpace(raw)) == 0 {
			continue
		}
		if err := each(raw); err != nil {
			return err
		}
	}
}

// InstallCRDs replaces the CRDs of the same names with crds (creating those
// missing), as `kubectl apply` of another chart's CRDs would, keeping the
// objects stored under them.
func InstallCRDs(ctx context.Context, c client.Client, crds []*apiextensionsv1.CustomResourceDefinition) error {
	for _, want := range crds {
		live := &apiextensionsv1.CustomResourceDefinition{}
		err := c.Get(ctx, client.ObjectKey{Name: want.Name}, live)
		switch {
		case apierrors.IsNotFound(err):
			if err := c.Create(ctx, want.DeepCopy()); err != nil {
				return fmt.Errorf("creating CRD %s: %w", want.Name, err)
			}
			continue
		case err != nil:
			return err
		}
		live.Spec = *want.Spec.DeepCopy()
		live.Labels, live.Annotations = want.Labels, want.Annotations
		if err := c.Update(ctx, live); err != nil {
			return fmt.Errorf("replacing CRD %s: %w", want.Name, err)
		}
	}
	return nil
}

// Create creates objs in namespace ns with the statuses they carry
// (through the status subresource, as their controllers wrote them).
// Owner references are pointed at the owners created here, by kind and
// name. The API server may still be switching to a CRD just installed, so
// a refused create is retried for up to a minute before it is reported.
func Create(ctx context.Context, c client.Client, ns string, objs []*unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	uids := map[string]types.UID{}
	var created []*unstructured.Unstructured
	for _, src := range objs {
		if src.GetKind() == "ServiceAccount" && src.GetName() == "default" {
			continue // every namespace has its own
		}
		u := src.DeepCopy()
		status, hasStatus := u.Object["status"]
		delete(u.Object, "status")
		u.SetNamespace(ns)
		for _, f := range []string{"uid", "resourceVersion", "creationTimestamp", "managedFields", "generation", "selfLink"} {
			unstructured.RemoveNestedField(u.Object, "metadata", f)
		}
		refs := u.GetOwnerReferences()
		for i := range refs {
			uid, ok := uids[refs[i].Kind+"/"+refs[i].Name]
			if !ok {
				return created, fmt.Errorf("%s %s: owner %s %s is not among the objects", u.GetKind(), u.GetName(), refs[i].Kind, refs[i].Name)
			}
			refs[i].UID = uid
		}
		u.SetOwnerReferences(refs)
		if err := retrying(ctx, func() error { return c.Create(ctx, u) }); err != nil {
			return created, fmt.Errorf("creating %s %s: %w", u.GetKind(), u.GetName(), err)
		}
		if hasStatus && status != nil {
			u.Object["status"] = status
			if err := retrying(ctx, func() error { return c.Status().Update(ctx, u) }); err != nil {
				return created, fmt.Errorf("writing the status of %s %s: %w", u.GetKind(), u.GetName(), err)
			}
		}
		uids[u.GetKind()+"/"+u.GetName()] = u.GetUID()
		created = append(created, u)
	}
	return created, nil
}

func retrying(ctx context.Context, f func() error) error {
	var last error
	err := await.Until(ctx, "a write the API server may refuse while it learns the CRDs", func() error {
		last = f()
		if last != nil && !(apierrors.IsInvalid(last) || apierrors.IsBadRequest(last) || apierrors.IsNotFound(last)) {
			return gomega.StopTrying("not a refusal that passes").Wrap(last)
		}
		return last
	}, await.Within(time.Minute), await.Every(100*time.Millisecond))
	if err != nil && last == nil { // ctx ended before the first try
		return err
	}
	// The caller reports the API server's own error, not the wait's.
	return last
}
