// Package crdinstall server-side applies the CRDs embedded in the operator
// binary (package crds) and waits until the API server serves them. The
// chart runs it as the operator pod's init container (dynamo-operator
// --apply-crds): Helm never upgrades CRDs it installed from a chart's crds/
// directory, and templating them would put ~2 MB of schema (DGD and DCD in
// two versions each) into every release Secret, twice its 1 MiB limit.
//
// The CRDs that convert by webhook name the operator that installs them as
// their conversion webhook (Conversion): the generated files carry a
// placeholder clientConfig, rewritten before applying. The caBundle is never
// applied but by an installer that provides the certificate (external
// mode), so the bundle the operator or cert-manager injects under its own
// field manager survives every re-apply.
package crdinstall

import (
	"context"
	"fmt"
	"io/fs"
	"sort"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/dynamoctl/dynamo-operator/crds"
)

// FieldOwner is the server-side apply field manager of the CRDs.
const FieldOwner = "dynamo-operator-crds"

// Load returns the embedded CRDs, sorted by name.
func Load() ([]*unstructured.Unstructured, error) { return LoadFS(crds.FS) }

// LoadFS returns the CRDs of the *.yaml files at the top of fsys, sorted by
// name.
func LoadFS(fsys fs.FS) ([]*unstructured.Unstructured, error) {
	files, err := fs.Glob(fsys, "*.yaml")
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	for _, f := range files {
		data, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, err
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(data, &u.Object); err != nil {
			return nil, fmt.Errorf("parsing %s: %w", f, err)
		}
		out = append(out, u)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GetName() < out[j].GetName() })
	return out, nil
}

// Names are the names of the embedded CRDs, which the chart's RBAC lists as
// resourceNames.
func Names() ([]string, error) {
	all, err := Load()
	if err != nil {
		return nil, err
	}
	names := make([]string, len(all))
	for i, u := range all {
		names[i] = u.GetName()
	}
	return names, nil
}

// Apply server-side applies every embedded CRD, forcing ownership of the
// fields (an older operator or `kubectl apply` may hold them), with the
// conversion webhook of those that convert by webhook pointed at conv, and
// waits up to timeout until each is Established. c must know
// apiextensions/v1.
func Apply(ctx context.Context, c client.Client, timeout time.Duration, conv Conversion) error {
	all, err := Load()
	if err != nil {
		return err
	}
	return ApplyCRDs(ctx, c, all, timeout, conv)
}

// ApplyCRDs is Apply with the given CRDs (e.g. read from a directory with
// LoadFS) instead of the embedded ones.
func ApplyCRDs(ctx context.Context, c client.Client, all []*unstructured.Unstructured, timeout time.Duration, conv Conversion) error {
	for _, crd := range all {
		u := crd.DeepCopy()
		if err := conv.rewrite(u); err != nil {
			return fmt.Errorf("CustomResourceDefinition %s: %w", u.GetName(), err)
		}
		err := apply(ctx, c, u)
		if apierrors.IsInvalid(err) && ConvertsByWebhook(u) {
			// Likely a Service and a URL at once: the one another field
			// manager set is cleared first (switchEndpoint).
			if err := switchEndpoint(ctx, c, u); err != nil {
				return fmt.Errorf("CustomResourceDefinition %s: %w", u.GetName(), err)
			}
			err = apply(ctx, c, u)
		}
		if err != nil {
			return fmt.Errorf("applying CustomResourceDefinition %s: %w", u.GetName(), err)
		}
	}
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		for _, u := range all {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := c.Get(ctx, client.ObjectKey{Name: u.GetName()}, crd); err != nil {
				return false, nil //nolint:nilerr // transient: keep polling until the timeout
			}
			if !established(crd) {
				return false, nil
			}
		}
		return true, nil
	})
}

func apply(ctx context.Context, c client.Client, u *unstructured.Unstructured) error {
	return c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u.DeepCopy()), client.FieldOwner(FieldOwner), client.ForceOwnership)
}

func established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
			return true
		}
	}
	return false
}
