package nodes

import (
	"context"
	"fmt"

	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// DeviceClass selects every device of a DRA driver; it is named after the
// driver, as the Intel GPU driver's class is (gpu.intel.com).
func DeviceClass(driver string) *resourcev1.DeviceClass {
	return &resourcev1.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: driver},
		Spec: resourcev1.DeviceClassSpec{Selectors: []resourcev1.DeviceSelector{{
			CEL: &resourcev1.CELDeviceSelector{Expression: fmt.Sprintf("device.driver == %q", driver)},
		}}},
	}
}

// ResourceSlice publishes node i's DRA devices, as the driver's kubelet
// plugin would.
func (p Pool) ResourceSlice(i int) *resourcev1.ResourceSlice {
	node := p.NodeName(i)
	devices := make([]resourcev1.Device, p.DRADevices)
	for d := range devices {
		devices[d] = resourcev1.Device{Name: fmt.Sprintf("gpu-%d", d)}
	}
	return &resourcev1.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: node + "-" + p.DRADriver},
		Spec: resourcev1.ResourceSliceSpec{
			Driver:   p.DRADriver,
			Pool:     resourcev1.ResourcePool{Name: node, ResourceSliceCount: 1},
			NodeName: ptr.To(node),
			Devices:  devices,
		},
	}
}

// createDRA creates the DeviceClasses and ResourceSlices of the pools.
func createDRA(ctx context.Context, cs kubernetes.Interface, pools []Pool) error {
	seen := map[string]bool{}
	for _, p := range pools {
		if p.DRADriver == "" {
			continue
		}
		if !seen[p.DRADriver] {
			seen[p.DRADriver] = true
			_, err := cs.ResourceV1().DeviceClasses().Create(ctx, DeviceClass(p.DRADriver), metav1.CreateOptions{})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("creating DeviceClass %s: %w", p.DRADriver, err)
			}
		}
		for i := range p.Count {
			_, err := cs.ResourceV1().ResourceSlices().Create(ctx, p.ResourceSlice(i), metav1.CreateOptions{})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("creating the ResourceSlice of %s: %w", p.NodeName(i), err)
			}
		}
	}
	return nil
}
