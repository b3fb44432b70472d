package v1beta1

import (
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/conversion"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

// Annotations the conversion keeps, on an object of one version, what the
// object's other version holds that this one cannot: JSON of the parts
// that did not convert back equal (see the package doc).
const (
	// AnnotationAlphaSpec, on a v1beta1 object, holds the v1alpha1-only
	// parts of its spec.
	AnnotationAlphaSpec = "nvidia.com/v1alpha1-spec"
	// AnnotationAlphaStatus, on a v1beta1 object, holds the v1alpha1-only
	// parts of its status.
	AnnotationAlphaStatus = "nvidia.com/v1alpha1-status"
	// AnnotationBetaSpec, on a v1alpha1 object, holds the v1beta1-only parts
	// of its spec.
	AnnotationBetaSpec = "nvidia.com/v1beta1-spec"
	// AnnotationBetaStatus, on a v1alpha1 object, holds the v1beta1-only
	// parts of its status.
	AnnotationBetaStatus = "nvidia.com/v1beta1-status"
)

// ConversionAnnotations are the annotation keys the conversion owns. They
// describe the object they are on: the renderer does not copy them to the
// objects it creates.
var ConversionAnnotations = []string{AnnotationAlphaSpec, AnnotationAlphaStatus, AnnotationBetaSpec, AnnotationBetaStatus}

// IsConversionAnnotation reports whether key is one of ConversionAnnotations.
func IsConversionAnnotation(key string) bool {
	for _, k := range ConversionAnnotations {
		if k == key {
			return true
		}
	}
	return false
}

// ConvertTo converts this graph to the hub version, v1alpha1.
func (b *DynamoGraphDeployment) ConvertTo(hub conversion.Hub) error {
	dst, ok := hub.(*v1alpha1.DynamoGraphDeployment)
	if !ok {
		return fmt.Errorf("convert DynamoGraphDeployment to %T: want *v1alpha1.DynamoGraphDeployment", hub)
	}
	a, err := graphToAlpha(b)
	if err != nil {
		return fmt.Errorf("convert DynamoGraphDeployment %s/%s to v1alpha1: %w", b.Namespace, b.Name, err)
	}
	a.TypeMeta = dst.TypeMeta
	*dst = *a
	return nil
}

// ConvertFrom converts the hub version, v1alpha1, to this graph.
func (b *DynamoGraphDeployment) ConvertFrom(hub conversion.Hub) error {
	src, ok := hub.(*v1alpha1.DynamoGraphDeployment)
	if !ok {
		return fmt.Errorf("convert %T to DynamoGraphDeployment: want *v1alpha1.DynamoGraphDeployment", hub)
	}
	out, err := graphFromAlpha(src)
	if err != nil {
		return fmt.Errorf("convert DynamoGraphDeployment %s/%s to v1beta1: %w", src.Namespace, src.Name, err)
	}
	out.TypeMeta = b.TypeMeta
	*b = *out
	return nil
}

// graphToAlpha converts a v1beta1 graph down: the projection, the
// v1alpha1-only parts its annotations saved, and the annotations saving
// what of it the result cannot hold.
func graphToAlpha(in *DynamoGraphDeployment) (*alphaGraph, error) {
	b := in.DeepCopy()
	spec, status := takeSaved(&b.ObjectMeta, AnnotationAlphaSpec), takeSaved(&b.ObjectMeta, AnnotationAlphaStatus)
	a, err := graphDown(b)
	if err != nil {
		return nil, err
	}
	if err := restoreParts(alphaGraphParts, a, b, partsOf(spec)); err != nil {
		return nil, err
	}
	if err := restoreItems(alphaGraphServiceParts, a.Spec.Services, lookupPtr(components(b)), spec); err != nil {
		return nil, err
	}
	if err := restoreGraphStatusAlpha(&a.Status, &b.Status, status); err != nil {
		return nil, err
	}
	back := graphUp(a)
	var saveSpec, saveStatus saved
	if saveSpec.Parts, err = saveParts(betaGraphParts, b, back, a); err != nil {
		return nil, err
	}
	if err := saveItems(betaComponentParts, components(b), lookupPtr(components(back)), lookupPtr(a.Spec.Services), &saveSpec); err != nil {
		return nil, err
	}
	if err := saveGraphStatusBeta(&b.Status, &back.Status, &a.Status, &saveStatus); err != nil {
		return nil, err
	}
	if err := putSaved(&a.ObjectMeta, AnnotationBetaSpec, &saveSpec); err != nil {
		return nil, err
	}
	return a, putSaved(&a.ObjectMeta, AnnotationBetaStatus, &saveStatus)
}

// graphFromAlpha converts a v1alpha1 graph up, as graphToAlpha down.
func graphFromAlpha(in *alphaGraph) (*DynamoGraphDeployment, error) {
	a := in.DeepCopy()
	spec, status := takeSaved(&a.ObjectMeta, AnnotationBetaSpec), takeSaved(&a.ObjectMeta, AnnotationBetaStatus)
	b := graphUp(a)
	if err := restoreParts(betaGraphParts, b, a, partsOf(spec)); err != nil {
		return nil, err
	}
	if err := restoreItems(betaComponentParts, components(b), lookupPtr(a.Spec.Services), spec); err != nil {
		return nil, err
	}
	if err := restoreGraphStatusBeta(&b.Status, &a.Status, status); err != nil {
		return nil, err
	}
	back, err := graphDown(b)
	if err != nil {
		return nil, err
	}
	var saveSpec, saveStatus saved
	if saveSpec.Parts, err = saveParts(alphaGraphParts, a, back, b); err != nil {
		return nil, err
	}
	if err := saveItems(alphaGraphServiceParts, a.Spec.Services, lookupPtr(back.Spec.Services), lookupPtr(components(b)), &saveSpec); err != nil {
		return nil, err
	}
	if err := saveGraphStatusAlpha(&a.Status, &back.Status, &b.Status, &saveStatus); err != nil {
		return nil, err
	}
	if err := putSaved(&b.ObjectMeta, AnnotationAlphaSpec, &saveSpec); err != nil {
		return nil, err
	}
	return b, putSaved(&b.ObjectMeta, AnnotationAlphaStatus, &saveStatus)
}

func partsOf(s *saved) parts {
	if s == nil {
		return nil
	}
	return s.Parts
}

func restoreGraphStatusAlpha(a *alphaGraphStatus, b *DynamoGraphDeploymentStatus, in *saved) error {
	if err := restoreParts(alphaGraphStatusParts, a, b, partsOf(in)); err != nil {
		return err
	}
	services := entries(a.Services)
	if err := restoreItems(alphaReplicasParts, services, lookup(b.Components), in); err != nil {
		return err
	}
	writeBack(a.Services, services)
	return nil
}

func restoreGraphStatusBeta(b *DynamoGraphDeploymentStatus, a *alphaGraphStatus, in *saved) error {
	if err := restoreParts(betaGraphStatusParts, b, a, partsOf(in)); err != nil {
		return err
	}
	comps := entries(b.Components)
	if err := restoreItems(betaReplicasParts, comps, lookup(a.Services), in); err != nil {
		return err
	}
	writeBack(b.Components, comps)
	return nil
}

func saveGraphStatusAlpha(a, back *alphaGraphStatus, b *DynamoGraphDeploymentStatus, out *saved) error {
	var err error
	if out.Parts, err = saveParts(alphaGraphStatusParts, a, back, b); err != nil {
		return err
	}
	return saveItems(alphaReplicasParts, entries(a.Services), lookup(back.Services), lookup(b.Components), out)
}

func saveGraphStatusBeta(b, back *DynamoGraphDeploymentStatus, a *alphaGraphStatus, out *saved) error {
	var err error
	if out.Parts, err = saveParts(betaGraphStatusParts, b, back, a); err != nil {
		return err
	}
	return saveItems(betaReplicasParts, entries(b.Components), lookup(back.Components), lookup(a.Services), out)
}
