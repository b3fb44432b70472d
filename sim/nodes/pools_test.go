package nodes

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dynamoctl/dynamo-operator/operator/config"
)

func TestParsePool(t *testing.T) {
	p, err := ParsePool("name=a100,count=3,gpus=8,product=NVIDIA-A100-SXM4-80GB,memory=81920")
	if err != nil {
		t.Fatal(err)
	}
	n := p.Node(2)
	if n.Name != "a100-2" {
		t.Errorf("name %q", n.Name)
	}
	for k, want := range map[string]string{
		LabelGPUProduct: "NVIDIA-A100-SXM4-80GB", LabelGPUCount: "8", LabelGPUMemory: "81920", LabelManaged: ManagedValue,
	} {
		if got := n.Labels[k]; got != want {
			t.Errorf("label %s = %q, want %q", k, got, want)
		}
	}
	if q := n.Status.Allocatable[GPUResource]; q.Value() != 8 {
		t.Errorf("allocatable GPUs %v, want 8", q.String())
	}
	if q := n.Status.Capacity["pods"]; q.Value() != 110 {
		t.Errorf("pod capacity %v, want 110", q.String())
	}
}

func TestParsePoolErrors(t *testing.T) {
	for in, want := range map[string]string{
		"count=1":             "needs a name",
		"name=x,gpus=2":       "need a product",
		"name=x,colour=red":   "unknown key",
		"name=x,count=two":    "count",
		"name=x,count=-1":     "negative",
		"name=x,cpu=lots":     "lots",
		"name=x,count=1,gpus": "not key=value",
	} {
		_, err := ParsePool(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParsePool(%q) = %v, want an error containing %q", in, err, want)
		}
	}
}

func TestCPUOnlyPoolHasNoGPULabels(t *testing.T) {
	n := Pool{Name: "cpu", Count: 1}.Node(0)
	if _, ok := n.Labels[LabelGPUProduct]; ok {
		t.Error("a CPU node carries a GPU product label")
	}
	if _, ok := n.Status.Capacity[GPUResource]; ok {
		t.Error("a CPU node has GPU capacity")
	}
}

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	if err := os.WriteFile(good, []byte("pools:\n- name: h100\n  count: 2\n  gpus: 8\n  product: H100\n  memoryMiB: 80000\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	pools, err := LoadConfig(good)
	if err != nil || len(pools) != 1 || pools[0].Count != 2 || pools[0].MemoryMiB != 80000 {
		t.Fatalf("LoadConfig = %+v, %v", pools, err)
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("pools:\n- name: h100\n  gpu: 8\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadConfig(bad); err == nil || !strings.Contains(err.Error(), "gpu") {
		t.Errorf("an unknown field was not rejected: %v", err)
	}
}

func TestDefaultPoolsAreValid(t *testing.T) {
	for _, p := range DefaultPools() {
		if err := p.validate(); err != nil {
			t.Error(err)
		}
	}
}

func TestDRAPool(t *testing.T) {
	p, err := ParsePool("name=xpu,count=2,draDriver=gpu.intel.com,draDevices=4")
	if err != nil {
		t.Fatal(err)
	}
	rs := p.ResourceSlice(1)
	if rs.Spec.Driver != "gpu.intel.com" || *rs.Spec.NodeName != "xpu-1" || len(rs.Spec.Devices) != 4 {
		t.Errorf("ResourceSlice %+v", rs.Spec)
	}
	if dc := DeviceClass("gpu.intel.com"); dc.Name != "gpu.intel.com" || !strings.Contains(dc.Spec.Selectors[0].CEL.Expression, `"gpu.intel.com"`) {
		t.Errorf("DeviceClass %+v", dc)
	}
	if _, err := ParsePool("name=xpu,draDriver=gpu.intel.com"); err == nil {
		t.Error("a DRA driver without devices was accepted")
	}
}

// NVIDIA's DRA driver publishes each GPU of a node, of type gpu, in the
// DeviceClass gpu.nvidia.com, which selects exactly those.
func TestNVIDIADRAPool(t *testing.T) {
	p, err := ParsePool("name=h100,count=2,gpus=8,product=NVIDIA-H100-80GB-HBM3,memory=81559,nvidiaDRA=true")
	if err != nil {
		t.Fatal(err)
	}
	slices := p.resourceSlices(1)
	if len(slices) != 1 {
		t.Fatalf("%d ResourceSlices, want NVIDIA's alone", len(slices))
	}
	rs := slices[0]
	if rs.Name != "h100-1-gpu.nvidia.com" || rs.Spec.Driver != NVIDIADRADriver || *rs.Spec.NodeName != "h100-1" || len(rs.Spec.Devices) != 8 {
		t.Errorf("ResourceSlice %s %+v", rs.Name, rs.Spec)
	}
	gpu := rs.Spec.Devices[3]
	memory := gpu.Capacity["memory"].Value
	if gpu.Name != "gpu-3" || *gpu.Attributes["type"].StringValue != "gpu" || *gpu.Attributes["index"].IntValue != 3 ||
		memory.String() != "81559Mi" {
		t.Errorf("device %+v", gpu)
	}
	want := `device.driver == "gpu.nvidia.com" && device.attributes["gpu.nvidia.com"].type == "gpu"`
	if dc := DeviceClass(NVIDIADRADriver); dc.Name != NVIDIADRADriver || dc.Spec.Selectors[0].CEL.Expression != want {
		t.Errorf("DeviceClass %s selects %q, want %q", dc.Name, dc.Spec.Selectors[0].CEL.Expression, want)
	}
	if _, err := ParsePool("name=cpu,count=1,nvidiaDRA=true"); err == nil {
		t.Error("nvidiaDRA without GPUs was accepted")
	}
}

// GPU nodes carry the operator's default topology labels, racks filled in
// order; CPU nodes carry none.
func TestTopologyLabels(t *testing.T) {
	p, err := ParsePool("name=gb,count=5,gpus=4,product=NVIDIA-GB200,memory=189471,rackSize=2,racksPerBlock=2")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][3]string{}
	for i := range p.Count {
		l := p.Node(i).Labels
		got[p.NodeName(i)] = [3]string{l[LabelBlock], l[LabelRack], l[LabelNVLink]}
	}
	want := map[string][3]string{
		"gb-0": {"gb-block-0", "gb-rack-0", "gb-rack-0"},
		"gb-1": {"gb-block-0", "gb-rack-0", "gb-rack-0"},
		"gb-2": {"gb-block-0", "gb-rack-1", "gb-rack-1"},
		"gb-3": {"gb-block-0", "gb-rack-1", "gb-rack-1"},
		"gb-4": {"gb-block-1", "gb-rack-2", "gb-rack-2"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("block, rack, NVLink domain by node (-want +got):\n%s", diff)
	}
	for _, label := range []string{LabelBlock, LabelRack, LabelNVLink} {
		if _, ok := (Pool{Name: "cpu", Count: 1}).Node(0).Labels[label]; ok {
			t.Errorf("a CPU node carries %s", label)
		}
	}
	// The labels are the operator's defaults for the block, rack and
	// NVLink-domain levels, so graphs on the simulator name them by level.
	for _, label := range []string{"block=" + LabelBlock, "rack=" + LabelRack, "nvlink=" + LabelNVLink} {
		if !strings.Contains(config.DefaultTopologyDomainLabels, label) {
			t.Errorf("the operator's default levels %q lack %s", config.DefaultTopologyDomainLabels, label)
		}
	}
}
