package render

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"maps"
	"slices"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

// PVCs returns the claims a graph asks the operator to create, sorted by
// name: entries of spec.pvcs with create: true, and services' pvc with
// create: true and a name. A name asked for twice is created once, from
// spec.pvcs if it is there, else from the first service in name order.
//
// The claims have no owner reference on purpose: model caches are expensive
// to fill, so they outlive the graph; LabelPVCRetained finds them for cleanup.
func PVCs(dgd *v1alpha1.DynamoGraphDeployment) []*corev1.PersistentVolumeClaim {
	byName := map[string]*corev1.PersistentVolumeClaim{}
	for _, p := range dgd.Spec.PVCs {
		if !ptr.Deref(p.Create, false) || p.Name == "" || byName[p.Name] != nil {
			continue
		}
		byName[p.Name] = claim(dgd, p.Name, p.StorageClass, p.Size, p.VolumeAccessMode)
	}
	for _, serviceName := range slices.Sorted(maps.Keys(dgd.Spec.Services)) {
		service := dgd.Spec.Services[serviceName]
		if service == nil || service.PVC == nil {
			continue
		}
		p := service.PVC
		name := ptr.Deref(p.Name, "")
		if !ptr.Deref(p.Create, false) || name == "" || byName[name] != nil {
			continue
		}
		byName[name] = claim(dgd, name, p.StorageClass, p.Size, p.VolumeAccessMode)
	}

	out := make([]*corev1.PersistentVolumeClaim, 0, len(byName))
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		out = append(out, byName[name])
	}
	return out
}

func claim(dgd *v1alpha1.DynamoGraphDeployment, name, storageClass string, size *resource.Quantity,
	mode corev1.PersistentVolumeAccessMode) *corev1.PersistentVolumeClaim {
	if mode == "" {
		mode = corev1.ReadWriteOnce
	}
	pvc := &corev1.PersistentVolumeClaim{
		TypeMeta: metav1.TypeMeta{APIVersion: corev1.SchemeGroupVersion.String(), Kind: "PersistentVolumeClaim"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      name,
			Namespace: dgd.Namespace,
			Labels: merged(propagated(dgd.Labels, dgd.Spec.Labels), map[string]string{
				LabelGraphName:   dgd.Name,
				LabelManagedBy:   ManagedByValue,
				LabelPVCRetained: "true",
			}),
			Annotations: propagated(dgd.Annotations, dgd.Spec.Annotations),
		},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{mode},
		},
	}
	if storageClass != "" {
		pvc.Spec.StorageClassName = ptr.To(storageClass)
	}
	// A claim without a size is not dropped: the API server's rejection tells
	// the user what is missing, where silence would not.
	if size != nil {
		pvc.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceStorage: size.DeepCopy()}
	}
	return pvc
}
