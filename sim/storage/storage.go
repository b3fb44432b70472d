// Package storage is the simulator's volume provisioner: a default
// StorageClass "standard" and a controller that creates a PersistentVolume
// for each claim of that class. The real kube-controller-manager then binds
// them, so pods with claims schedule and run as they would on a cluster
// with a dynamic provisioner.
package storage

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
)

// Provisioner is the provisioner name of the simulator's StorageClasses.
const Provisioner = "sim.dynamo.nvidia.com/volume"

// ClassNames are the StorageClasses the simulator serves; "standard" is the
// default, as on kind.
var ClassNames = []string{"standard"}

// Run creates the StorageClasses and provisions volumes until ctx ends.
func Run(ctx context.Context, cs kubernetes.Interface, log func(string, ...any)) error {
	for i, name := range ClassNames {
		sc := &storagev1.StorageClass{
			ObjectMeta:        metav1.ObjectMeta{Name: name},
			Provisioner:       Provisioner,
			ReclaimPolicy:     ptr.To(corev1.PersistentVolumeReclaimDelete),
			VolumeBindingMode: ptr.To(storagev1.VolumeBindingImmediate),
		}
		if i == 0 {
			sc.Annotations = map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}
		}
		if _, err := cs.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating StorageClass %s: %w", name, err)
		}
	}
	factory := informers.NewSharedInformerFactory(cs, 0)
	claims := factory.Core().V1().PersistentVolumeClaims()
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
	enqueue := func(obj any) {
		if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
			queue.Add(key)
		}
	}
	if _, err := claims.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, o any) { enqueue(o) },
	}); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	go func() {
		<-ctx.Done()
		queue.ShutDown()
		factory.Shutdown()
	}()
	go func() {
		for {
			key, quit := queue.Get()
			if quit {
				return
			}
			ns, name, _ := cache.SplitMetaNamespaceKey(key)
			pvc, err := claims.Lister().PersistentVolumeClaims(ns).Get(name)
			if err == nil {
				err = provision(ctx, cs, pvc)
			}
			if err != nil && !apierrors.IsNotFound(err) && ctx.Err() == nil {
				log("provisioning %s: %v", key, err)
				queue.AddRateLimited(key)
			} else {
				queue.Forget(key)
			}
			queue.Done(key)
		}
	}()
	return nil
}

// provision creates the volume of a claim of one of our classes that has
// none yet; the PV names its claim, so the binder pairs exactly these two.
func provision(ctx context.Context, cs kubernetes.Interface, pvc *corev1.PersistentVolumeClaim) error {
	if pvc.DeletionTimestamp != nil || pvc.Spec.VolumeName != "" || !ours(pvc) {
		return nil
	}
	size := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	if size.IsZero() {
		size = resource.MustParse("1Gi")
	}
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{
			Name:        "pvc-" + string(pvc.UID),
			Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": Provisioner},
		},
		Spec: corev1.PersistentVolumeSpec{
			AccessModes:                   pvc.Spec.AccessModes,
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: size},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			StorageClassName:              className(pvc),
			VolumeMode:                    pvc.Spec.VolumeMode,
			ClaimRef: &corev1.ObjectReference{
				APIVersion: "v1", Kind: "PersistentVolumeClaim",
				Namespace: pvc.Namespace, Name: pvc.Name, UID: pvc.UID,
			},
			// Nothing is mounted: KWOK's pods have no filesystem.
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/sim/volumes/" + string(pvc.UID)}},
		},
	}
	_, err := cs.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

func className(pvc *corev1.PersistentVolumeClaim) string {
	if pvc.Spec.StorageClassName != nil {
		return *pvc.Spec.StorageClassName
	}
	return ""
}

func ours(pvc *corev1.PersistentVolumeClaim) bool {
	name := className(pvc)
	for _, c := range ClassNames {
		if name == c {
			return true
		}
	}
	return false
}
