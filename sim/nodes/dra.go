package nodes

import (
	"context"
	"fmt"
	"strconv"

	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// NVIDIADRADriver is NVIDIA's DRA driver for GPUs, and the name of the
// DeviceClass of its GPUs.
const NVIDIADRADriver = "gpu.nvidia.com"

// DeviceClass selects every device of a DRA driver; it is named after the
// driver, as the Intel GPU driver's class is (gpu.intel.com). NVIDIA's
// selects its devices of type gpu, as the class its driver installs.
func DeviceClass(driver string) *resourcev1.DeviceClass {
	expr := fmt.Sprintf("device.driver == %q", driver)
	if driver == NVIDIADRADriver {
		expr += fmt.Sprintf(" && device.attributes[%q].type == \"gpu\"", driver)
	}
	return &resourcev1.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: driver},
		Spec: resourcev1.DeviceClassSpec{Selectors: []resourcev1.DeviceSelector{{
			CEL: &resourcev1.CELDeviceSelector{Expression: expr},
		}}},
	}
}

// ResourceSlice publishes node i's DRA devices, as the driver's kubelet
// plugin would.
func (p Pool) ResourceSlice(i int) *resourcev1.ResourceSlice {
	devices := make([]resourcev1.Device, p.DRADevices)
	for d := range devices {
		devices[d] = resourcev1.Device{Name: fmt.Sprintf("gpu-%d", d)}
	}
	return p.slice(i, p.DRADriver, devices)
}

// NVIDIAResourceSlice publishes node i's GPUs as NVIDIA's DRA driver's
// kubelet plugin does: a device gpu-<index> each, of type gpu, with its
// product name, index, UUID and memory.
func (p Pool) NVIDIAResourceSlice(i int) *resourcev1.ResourceSlice {
	devices := make([]resourcev1.Device, p.GPUs)
	for d := range devices {
		devices[d] = resourcev1.Device{
			Name: fmt.Sprintf("gpu-%d", d),
			Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
				"type":        {StringValue: ptr.To("gpu")},
				"productName": {StringValue: ptr.To(p.Product)},
				"index":       {IntValue: ptr.To(int64(d))},
				"uuid":        {StringValue: ptr.To(fmt.Sprintf("GPU-sim-%s-%d", p.NodeName(i), d))},
			},
			Capacity: map[resourcev1.QualifiedName]resourcev1.DeviceCapacity{
				"memory": {Value: resource.MustParse(strconv.Itoa(p.MemoryMiB) + "Mi")},
			},
		}
	}
	return p.slice(i, NVIDIADRADriver, devices)
}

func (p Pool) slice(i int, driver string, devices []resourcev1.Device) *resourcev1.ResourceSlice {
	node := p.NodeName(i)
	return &resourcev1.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: node + "-" + driver},
		Spec: resourcev1.ResourceSliceSpec{
			Driver:   driver,
			Pool:     resourcev1.ResourcePool{Name: node, ResourceSliceCount: 1},
			NodeName: ptr.To(node),
			Devices:  devices,
		},
	}
}

// resourceSlices are the ResourceSlices of node i of the pool, one per DRA
// driver publishing devices there.
func (p Pool) resourceSlices(i int) []*resourcev1.ResourceSlice {
	var out []*resourcev1.ResourceSlice
	if p.DRADriver != "" {
		out = append(out, p.ResourceSlice(i))
	}
	if p.NVIDIADRA {
		out = append(out, p.NVIDIAResourceSlice(i))
	}
	return out
}

// createDRA creates the DeviceClasses and ResourceSlices of the pools.
func createDRA(ctx context.Context, cs kubernetes.Interface, pools []Pool) error {
	seen := map[string]bool{}
	for _, p := range pools {
		for i := range p.Count {
			for _, rs := range p.resourceSlices(i) {
				if driver := rs.Spec.Driver; !seen[driver] {
					seen[driver] = true
					_, err := cs.ResourceV1().DeviceClasses().Create(ctx, DeviceClass(driver), metav1.CreateOptions{})
					if err != nil && !apierrors.IsAlreadyExists(err) {
						return fmt.Errorf("creating DeviceClass %s: %w", driver, err)
					}
				}
				_, err := cs.ResourceV1().ResourceSlices().Create(ctx, rs, metav1.CreateOptions{})
				if err != nil && !apierrors.IsAlreadyExists(err) {
					return fmt.Errorf("creating the ResourceSlice %s: %w", rs.Name, err)
				}
			}
		}
	}
	return nil
}
