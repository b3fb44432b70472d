package scope

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// GatedClient passes reads through and admits each write only while the
// gate allows the object's namespace, so a reconcile that was already
// running when the namespace changed hands stops at its next write.
func GatedClient(c client.Client, g *Gate) client.Client {
	return &gatedClient{Client: c, gate: g}
}

type gatedClient struct {
	client.Client
	gate *Gate
}

func (c *gatedClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	done, err := c.gate.enterConfirmed(ctx, obj.GetNamespace())
	if err != nil {
		return err
	}
	defer done()
	return c.Client.Create(ctx, obj, opts...)
}

func (c *gatedClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	done, err := c.gate.enterConfirmed(ctx, obj.GetNamespace())
	if err != nil {
		return err
	}
	defer done()
	return c.Client.Update(ctx, obj, opts...)
}

func (c *gatedClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	done, err := c.gate.enterConfirmed(ctx, obj.GetNamespace())
	if err != nil {
		return err
	}
	defer done()
	return c.Client.Patch(ctx, obj, patch, opts...)
}

func (c *gatedClient) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	ns, err := applyNamespace(obj)
	if err != nil {
		return err
	}
	done, err := c.gate.enterConfirmed(ctx, ns)
	if err != nil {
		return err
	}
	defer done()
	return c.Client.Apply(ctx, obj, opts...)
}

func (c *gatedClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	done, err := c.gate.enterConfirmed(ctx, obj.GetNamespace())
	if err != nil {
		return err
	}
	defer done()
	return c.Client.Delete(ctx, obj, opts...)
}

func (c *gatedClient) DeleteAllOf(ctx context.Context, obj client.Object, opts ...client.DeleteAllOfOption) error {
	// The namespace is an option here, not a field of obj.
	do := &client.DeleteAllOfOptions{}
	do.ApplyOptions(opts)
	done, err := c.gate.enterConfirmed(ctx, do.Namespace)
	if err != nil {
		return err
	}
	defer done()
	return c.Client.DeleteAllOf(ctx, obj, opts...)
}

func (c *gatedClient) Status() client.SubResourceWriter {
	return &gatedSubResource{SubResourceWriter: c.Client.Status(), gate: c.gate}
}

func (c *gatedClient) SubResource(subResource string) client.SubResourceClient {
	sc := c.Client.SubResource(subResource)
	return &gatedSubResourceClient{SubResourceClient: sc, w: gatedSubResource{SubResourceWriter: sc, gate: c.gate}}
}

type gatedSubResource struct {
	client.SubResourceWriter
	gate *Gate
}

func (w *gatedSubResource) Create(ctx context.Context, obj, sub client.Object, opts ...client.SubResourceCreateOption) error {
	done, err := w.gate.enterConfirmed(ctx, obj.GetNamespace())
	if err != nil {
		return err
	}
	defer done()
	return w.SubResourceWriter.Create(ctx, obj, sub, opts...)
}

func (w *gatedSubResource) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	done, err := w.gate.enterConfirmed(ctx, obj.GetNamespace())
	if err != nil {
		return err
	}
	defer done()
	return w.SubResourceWriter.Update(ctx, obj, opts...)
}

func (w *gatedSubResource) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	done, err := w.gate.enterConfirmed(ctx, obj.GetNamespace())
	if err != nil {
		return err
	}
	defer done()
	return w.SubResourceWriter.Patch(ctx, obj, patch, opts...)
}

func (w *gatedSubResource) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
	ns, err := applyNamespace(obj)
	if err != nil {
		return err
	}
	done, err := w.gate.enterConfirmed(ctx, ns)
	if err != nil {
		return err
	}
	defer done()
	return w.SubResourceWriter.Apply(ctx, obj, opts...)
}

type gatedSubResourceClient struct {
	client.SubResourceClient
	w gatedSubResource
}

func (c *gatedSubResourceClient) Create(ctx context.Context, obj, sub client.Object, opts ...client.SubResourceCreateOption) error {
	return c.w.Create(ctx, obj, sub, opts...)
}

func (c *gatedSubResourceClient) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	return c.w.Update(ctx, obj, opts...)
}

func (c *gatedSubResourceClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	return c.w.Patch(ctx, obj, patch, opts...)
}

func (c *gatedSubResourceClient) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
	return c.w.Apply(ctx, obj, opts...)
}

// applyNamespace reads the namespace of an apply configuration: typed ones
// expose a pointer, the unstructured one a string.
func applyNamespace(obj runtime.ApplyConfiguration) (string, error) {
	switch ac := obj.(type) {
	case interface{ GetNamespace() *string }:
		if ns := ac.GetNamespace(); ns != nil {
			return *ns, nil
		}
		return "", nil
	case interface{ GetNamespace() string }:
		return ac.GetNamespace(), nil
	}
	return "", fmt.Errorf("scope: apply configuration %T has no namespace accessor", obj)
}
