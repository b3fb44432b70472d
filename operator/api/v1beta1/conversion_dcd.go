package v1beta1

import (
	"fmt"
	"maps"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/conversion"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

type (
	alphaComponent       = v1alpha1.DynamoComponentDeployment
	alphaComponentStatus = v1alpha1.DynamoComponentDeploymentStatus
)

// ConvertTo converts this component to the hub version, v1alpha1.
func (b *DynamoComponentDeployment) ConvertTo(hub conversion.Hub) error {
	dst, ok := hub.(*v1alpha1.DynamoComponentDeployment)
	if !ok {
		return fmt.Errorf("convert DynamoComponentDeployment to %T: want *v1alpha1.DynamoComponentDeployment", hub)
	}
	a, err := componentToAlpha(b)
	if err != nil {
		return fmt.Errorf("convert DynamoComponentDeployment %s/%s to v1alpha1: %w", b.Namespace, b.Name, err)
	}
	a.TypeMeta = dst.TypeMeta
	*dst = *a
	return nil
}

// ConvertFrom converts the hub version, v1alpha1, to this component.
func (b *DynamoComponentDeployment) ConvertFrom(hub conversion.Hub) error {
	src, ok := hub.(*v1alpha1.DynamoComponentDeployment)
	if !ok {
		return fmt.Errorf("convert %T to DynamoComponentDeployment: want *v1alpha1.DynamoComponentDeployment", hub)
	}
	out, err := componentFromAlpha(src)
	if err != nil {
		return fmt.Errorf("convert DynamoComponentDeployment %s/%s to v1beta1: %w", src.Namespace, src.Name, err)
	}
	out.TypeMeta = b.TypeMeta
	*b = *out
	return nil
}

// dcdUp is a v1alpha1 component as v1beta1's, without anything saved. A
// component without serviceName is named after its object, as the
// renderer names it.
func dcdUp(a *alphaComponent) *DynamoComponentDeployment {
	b := &DynamoComponentDeployment{
		ObjectMeta: withoutConversionAnnotations(a.ObjectMeta),
		Spec: DynamoComponentDeploymentSpec{
			BackendFramework:                    string(a.Spec.BackendFramework),
			DynamoComponentDeploymentSharedSpec: componentUp(&a.Spec.DynamoComponentDeploymentSharedSpec),
		},
		Status: DynamoComponentDeploymentStatus{
			ObservedGeneration: a.Status.ObservedGeneration,
			Conditions:         cloneConditions(a.Status.Conditions),
		},
	}
	b.Spec.ComponentName = a.Spec.ServiceName
	if b.Spec.ComponentName == "" {
		b.Spec.ComponentName = a.Name
	}
	if s := a.Status.Service; s != nil {
		r := replicasUp(s)
		b.Status.Component = &r
	}
	return b.DeepCopy()
}

func dcdDown(b *DynamoComponentDeployment) *alphaComponent {
	a := &alphaComponent{
		ObjectMeta: withoutConversionAnnotations(b.ObjectMeta),
		Spec: v1alpha1.DynamoComponentDeploymentSpec{
			BackendFramework:                    v1alpha1.BackendFramework(b.Spec.BackendFramework),
			DynamoComponentDeploymentSharedSpec: componentDown(&b.Spec.DynamoComponentDeploymentSharedSpec),
		},
		Status: alphaComponentStatus{
			ObservedGeneration: b.Status.ObservedGeneration,
			Conditions:         cloneConditions(b.Status.Conditions),
		},
	}
	a.Spec.ServiceName = b.Spec.ComponentName
	if c := b.Status.Component; c != nil {
		r := replicasDown(c)
		a.Status.Service = &r
	}
	return a.DeepCopy()
}

// alphaDCDParts are a v1alpha1 component's fields besides its service's.
var alphaDCDParts = []part[alphaComponent, DynamoComponentDeployment]{
	fieldPart("dynamoComponent", func(a *alphaComponent) string { return a.Spec.DynamoComponent },
		func(a *alphaComponent, v string) { a.Spec.DynamoComponent = v }, nilOf[DynamoComponentDeployment]()),
	fieldPart("dynamoTag", func(a *alphaComponent) string { return a.Spec.DynamoTag },
		func(a *alphaComponent, v string) { a.Spec.DynamoTag = v }, nilOf[DynamoComponentDeployment]()),
	fieldPart("backendFramework", func(a *alphaComponent) v1alpha1.BackendFramework { return a.Spec.BackendFramework },
		func(a *alphaComponent, v v1alpha1.BackendFramework) { a.Spec.BackendFramework = v },
		func(b *DynamoComponentDeployment) any { return b.Spec.BackendFramework }),
	fieldPart("serviceName", func(a *alphaComponent) string { return a.Spec.ServiceName },
		func(a *alphaComponent, v string) { a.Spec.ServiceName = v },
		func(b *DynamoComponentDeployment) any { return b.Spec.ComponentName }),
}

var betaDCDParts = []part[DynamoComponentDeployment, alphaComponent]{
	fieldPart("backendFramework", func(b *DynamoComponentDeployment) string { return b.Spec.BackendFramework },
		func(b *DynamoComponentDeployment, v string) { b.Spec.BackendFramework = v },
		func(a *alphaComponent) any { return a.Spec.BackendFramework }),
	fieldPart("name", func(b *DynamoComponentDeployment) string { return b.Spec.ComponentName },
		func(b *DynamoComponentDeployment, v string) { b.Spec.ComponentName = v },
		func(a *alphaComponent) any { return []string{a.Spec.ServiceName, a.Name} }),
}

var alphaDCDStatusParts = []part[alphaComponentStatus, DynamoComponentDeploymentStatus]{
	fieldPart("observedGeneration", func(a *alphaComponentStatus) int64 { return a.ObservedGeneration },
		func(a *alphaComponentStatus, v int64) { a.ObservedGeneration = v },
		func(b *DynamoComponentDeploymentStatus) any { return b.ObservedGeneration }),
	fieldPart("conditions", func(a *alphaComponentStatus) []metav1.Condition { return a.Conditions },
		func(a *alphaComponentStatus, v []metav1.Condition) { a.Conditions = v },
		func(b *DynamoComponentDeploymentStatus) any { return b.Conditions }),
	fieldPart("service", func(a *alphaComponentStatus) *alphaReplicas { return a.Service },
		func(a *alphaComponentStatus, v *alphaReplicas) { a.Service = v },
		func(b *DynamoComponentDeploymentStatus) any { return b.Component }),
	// The scale subresource's fields and the selector, which v1beta1's
	// status does not have.
	fieldPart("podSelector", func(a *alphaComponentStatus) map[string]string { return a.PodSelector },
		func(a *alphaComponentStatus, v map[string]string) { a.PodSelector = v }, nilOf[DynamoComponentDeploymentStatus]()),
	fieldPart("selector", func(a *alphaComponentStatus) string { return a.Selector },
		func(a *alphaComponentStatus, v string) { a.Selector = v }, nilOf[DynamoComponentDeploymentStatus]()),
	fieldPart("counts", func(a *alphaComponentStatus) [4]int32 {
		return [4]int32{a.Replicas, a.UpdatedReplicas, a.ReadyReplicas, a.AvailableReplicas}
	}, func(a *alphaComponentStatus, v [4]int32) {
		a.Replicas, a.UpdatedReplicas, a.ReadyReplicas, a.AvailableReplicas = v[0], v[1], v[2], v[3]
	}, nilOf[DynamoComponentDeploymentStatus]()),
}

var betaDCDStatusParts = []part[DynamoComponentDeploymentStatus, alphaComponentStatus]{
	fieldPart("observedGeneration", func(b *DynamoComponentDeploymentStatus) int64 { return b.ObservedGeneration },
		func(b *DynamoComponentDeploymentStatus, v int64) { b.ObservedGeneration = v },
		func(a *alphaComponentStatus) any { return a.ObservedGeneration }),
	fieldPart("conditions", func(b *DynamoComponentDeploymentStatus) []metav1.Condition { return b.Conditions },
		func(b *DynamoComponentDeploymentStatus, v []metav1.Condition) { b.Conditions = v },
		func(a *alphaComponentStatus) any { return a.Conditions }),
	fieldPart("component", func(b *DynamoComponentDeploymentStatus) *ComponentReplicaStatus { return b.Component },
		func(b *DynamoComponentDeploymentStatus, v *ComponentReplicaStatus) { b.Component = v },
		func(a *alphaComponentStatus) any { return a.Service }),
}

// componentToAlpha converts a v1beta1 component down, as graphToAlpha a
// graph.
func componentToAlpha(in *DynamoComponentDeployment) (*alphaComponent, error) {
	b := in.DeepCopy()
	spec, status := takeSaved(&b.ObjectMeta, AnnotationAlphaSpec), takeSaved(&b.ObjectMeta, AnnotationAlphaStatus)
	a := dcdDown(b)
	if err := restoreParts(alphaServiceParts, &a.Spec.DynamoComponentDeploymentSharedSpec, &b.Spec.DynamoComponentDeploymentSharedSpec, partsOf(spec)); err != nil {
		return nil, err
	}
	if err := restoreParts(alphaDCDParts, a, b, partsOf(spec)); err != nil {
		return nil, err
	}
	if err := restoreParts(alphaDCDStatusParts, &a.Status, &b.Status, partsOf(status)); err != nil {
		return nil, err
	}
	back := dcdUp(a)
	specSave, err := saveDCDSpec(betaComponentParts, betaDCDParts, &b.Spec.DynamoComponentDeploymentSharedSpec,
		&back.Spec.DynamoComponentDeploymentSharedSpec, &a.Spec.DynamoComponentDeploymentSharedSpec, b, back, a)
	if err != nil {
		return nil, err
	}
	statusSave, err := saveParts(betaDCDStatusParts, &b.Status, &back.Status, &a.Status)
	if err != nil {
		return nil, err
	}
	if err := putSaved(&a.ObjectMeta, AnnotationBetaSpec, &saved{Parts: specSave}); err != nil {
		return nil, err
	}
	return a, putSaved(&a.ObjectMeta, AnnotationBetaStatus, &saved{Parts: statusSave})
}

// componentFromAlpha converts a v1alpha1 component up.
func componentFromAlpha(in *alphaComponent) (*DynamoComponentDeployment, error) {
	a := in.DeepCopy()
	spec, status := takeSaved(&a.ObjectMeta, AnnotationBetaSpec), takeSaved(&a.ObjectMeta, AnnotationBetaStatus)
	b := dcdUp(a)
	if err := restoreParts(betaComponentParts, &b.Spec.DynamoComponentDeploymentSharedSpec, &a.Spec.DynamoComponentDeploymentSharedSpec, partsOf(spec)); err != nil {
		return nil, err
	}
	if err := restoreParts(betaDCDParts, b, a, partsOf(spec)); err != nil {
		return nil, err
	}
	if err := restoreParts(betaDCDStatusParts, &b.Status, &a.Status, partsOf(status)); err != nil {
		return nil, err
	}
	back := dcdDown(b)
	specSave, err := saveDCDSpec(alphaServiceParts, alphaDCDParts, &a.Spec.DynamoComponentDeploymentSharedSpec,
		&back.Spec.DynamoComponentDeploymentSharedSpec, &b.Spec.DynamoComponentDeploymentSharedSpec, a, back, b)
	if err != nil {
		return nil, err
	}
	statusSave, err := saveParts(alphaDCDStatusParts, &a.Status, &back.Status, &b.Status)
	if err != nil {
		return nil, err
	}
	if err := putSaved(&b.ObjectMeta, AnnotationAlphaSpec, &saved{Parts: specSave}); err != nil {
		return nil, err
	}
	return b, putSaved(&b.ObjectMeta, AnnotationAlphaStatus, &saved{Parts: statusSave})
}

// saveDCDSpec saves a component's service parts and its own in one set:
// their names differ.
func saveDCDSpec[SS, OS, S, O any](shared []part[SS, OS], own []part[S, O], src, back *SS, other *OS, srcObj, backObj *S, otherObj *O) (parts, error) {
	p, err := saveParts(shared, src, back, other)
	if err != nil {
		return nil, err
	}
	q, err := saveParts(own, srcObj, backObj, otherObj)
	if err != nil {
		return nil, err
	}
	if p == nil {
		return q, nil
	}
	maps.Copy(p, q)
	return p, nil
}
