// Package nodes makes the simulator's fake GPU nodes: Node objects for GPU
// pools described in a config, driven by the KWOK controller (embedded as a
// library) so that they hold leases, report Ready and run the pods the real
// kube-scheduler binds to them.
package nodes

import (
	"fmt"
	"maps"
	"os"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// Labels GPU feature discovery sets, which schedulers and users select on.
const (
	LabelGPUProduct = "nvidia.com/gpu.product"
	LabelGPUCount   = "nvidia.com/gpu.count"
	LabelGPUMemory  = "nvidia.com/gpu.memory"
	// LabelPool names the simulator pool a node belongs to.
	LabelPool = "sim.dynamo.nvidia.com/pool"
	// LabelManaged marks the nodes KWOK drives; a node without it gets no
	// heartbeat (the node-loss fault removes it).
	LabelManaged = "type"
	ManagedValue = "kwok"

	GPUResource corev1.ResourceName = "nvidia.com/gpu"
)

// Topology labels of GPU nodes: the operator's default node labels of the
// block, rack and NVLink-domain levels (--topology-domain-labels). A rack of
// GPU nodes is one NVLink domain, as in NVIDIA's rack-scale systems; the
// NVLink domain label is GPU feature discovery's clique label.
const (
	LabelBlock  = "topology.nvidia.com/block"
	LabelRack   = "topology.nvidia.com/rack"
	LabelNVLink = "nvidia.com/gpu.clique"
)

// Default rack and block sizes of a GPU pool: several domains of each level
// in the default pools (two racks of h100, one of l40s; a block per pool).
const (
	DefaultRackSize      = 2
	DefaultRacksPerBlock = 2
)

// Pool is a group of identical GPU nodes.
type Pool struct {
	Name string `json:"name"`
	// Count is the number of nodes.
	Count int `json:"count"`
	// GPUs per node (nvidia.com/gpu capacity).
	GPUs int `json:"gpus"`
	// Product is the GPU product label, as GPU feature discovery spells it.
	Product string `json:"product"`
	// MemoryMiB is the memory of one GPU in MiB (nvidia.com/gpu.memory).
	MemoryMiB int `json:"memoryMiB"`
	// CPU and Memory are the node's allocatable CPU and memory; defaults
	// 64 and 512Gi.
	CPU    string `json:"cpu,omitempty"`
	Memory string `json:"memory,omitempty"`
	// MaxPods is the node's pod capacity; default 110, as a kubelet's.
	MaxPods int `json:"maxPods,omitempty"`
	// DRADriver and DRADevices give each node devices published through
	// dynamic resource allocation (a ResourceSlice per node, a DeviceClass
	// named after the driver), as a DRA driver such as gpu.intel.com does.
	DRADriver  string `json:"draDriver,omitempty"`
	DRADevices int    `json:"draDevices,omitempty"`
	// NVIDIADRA publishes the node's GPUs through NVIDIA's DRA driver too
	// (a ResourceSlice of driver gpu.nvidia.com per node, the DeviceClass
	// gpu.nvidia.com), as a cluster running that driver beside the device
	// plugin: pods claim them (Dynamo's GPU memory service) or ask for
	// nvidia.com/gpu. The simulator keeps no common count: a GPU a claim
	// holds is still counted free in nvidia.com/gpu, and the other way round.
	NVIDIADRA bool `json:"nvidiaDRA,omitempty"`
	// RackSize is the number of nodes of a rack (and NVLink domain) of a
	// GPU pool, RacksPerBlock the racks of a block; defaults
	// DefaultRackSize and DefaultRacksPerBlock. Nodes without GPUs carry no
	// topology labels.
	RackSize      int `json:"rackSize,omitempty"`
	RacksPerBlock int `json:"racksPerBlock,omitempty"`
}

// Config is the simulator's node configuration file.
type Config struct {
	Pools []Pool `json:"pools"`
}

// DefaultPools fit every graph under compat/: H100 and L40S machines with
// NVIDIA GPUs as extended resources and through NVIDIA's DRA driver (the
// GPU memory service's examples claim them), and machines whose Intel GPUs
// are allocated through DRA (the xpu_dra examples).
func DefaultPools() []Pool {
	return []Pool{
		{Name: "h100", Count: 4, GPUs: 8, Product: "NVIDIA-H100-80GB-HBM3", MemoryMiB: 81559, NVIDIADRA: true},
		{Name: "l40s", Count: 2, GPUs: 4, Product: "NVIDIA-L40S", MemoryMiB: 46068, NVIDIADRA: true},
		{Name: "xpu", Count: 1, DRADriver: "gpu.intel.com", DRADevices: 4},
	}
}

// LoadConfig reads a YAML pools file.
func LoadConfig(path string) ([]Pool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c Config
	if err := yaml.UnmarshalStrict(data, &c); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for i := range c.Pools {
		if err := c.Pools[i].validate(); err != nil {
			return nil, fmt.Errorf("%s: pools[%d]: %w", path, i, err)
		}
	}
	return c.Pools, nil
}

// ParsePool reads the flag form name=h100,count=4,gpus=8,product=X,memory=81559.
func ParsePool(s string) (Pool, error) {
	var p Pool
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return p, fmt.Errorf("pool %q: %q is not key=value", s, kv)
		}
		var err error
		switch k {
		case "name":
			p.Name = v
		case "count":
			p.Count, err = strconv.Atoi(v)
		case "gpus":
			p.GPUs, err = strconv.Atoi(v)
		case "product":
			p.Product = v
		case "memory", "memoryMiB":
			p.MemoryMiB, err = strconv.Atoi(v)
		case "cpu":
			p.CPU = v
		case "nodeMemory":
			p.Memory = v
		case "maxPods":
			p.MaxPods, err = strconv.Atoi(v)
		case "draDriver":
			p.DRADriver = v
		case "draDevices":
			p.DRADevices, err = strconv.Atoi(v)
		case "nvidiaDRA":
			p.NVIDIADRA, err = strconv.ParseBool(v)
		case "rackSize":
			p.RackSize, err = strconv.Atoi(v)
		case "racksPerBlock":
			p.RacksPerBlock, err = strconv.Atoi(v)
		default:
			return p, fmt.Errorf("pool %q: unknown key %q (name, count, gpus, product, memory, cpu, nodeMemory, maxPods, draDriver, draDevices, nvidiaDRA, rackSize, racksPerBlock)", s, k)
		}
		if err != nil {
			return p, fmt.Errorf("pool %q: %s: %w", s, k, err)
		}
	}
	return p, p.validate()
}

func (p *Pool) validate() error {
	if p.Name == "" {
		return fmt.Errorf("a pool needs a name")
	}
	if p.Count < 0 || p.GPUs < 0 || p.MemoryMiB < 0 || p.MaxPods < 0 || p.RackSize < 0 || p.RacksPerBlock < 0 {
		return fmt.Errorf("pool %s: count, gpus, memory, maxPods, rackSize and racksPerBlock must not be negative", p.Name)
	}
	if p.GPUs > 0 && p.Product == "" {
		return fmt.Errorf("pool %s: GPUs need a product", p.Name)
	}
	if (p.DRADriver == "") != (p.DRADevices == 0) {
		return fmt.Errorf("pool %s: draDriver and draDevices go together", p.Name)
	}
	if p.NVIDIADRA && (p.GPUs == 0 || p.DRADriver == NVIDIADRADriver) {
		return fmt.Errorf("pool %s: nvidiaDRA publishes the pool's GPUs: it needs gpus, and no draDriver %s", p.Name, NVIDIADRADriver)
	}
	for _, q := range []string{p.CPU, p.Memory} {
		if q == "" {
			continue
		}
		if _, err := resource.ParseQuantity(q); err != nil {
			return fmt.Errorf("pool %s: %q: %w", p.Name, q, err)
		}
	}
	return nil
}

// NodeName is the name of node i of a pool.
func (p Pool) NodeName(i int) string { return fmt.Sprintf("%s-%d", p.Name, i) }

// Node renders node i of the pool, with its capacity in status: the API
// server keeps the status a node is created with, and KWOK's node stages
// report it from then on.
func (p Pool) Node(i int) *corev1.Node {
	cpu, mem, pods := p.CPU, p.Memory, p.MaxPods
	if cpu == "" {
		cpu = "64"
	}
	if mem == "" {
		mem = "512Gi"
	}
	if pods == 0 {
		pods = 110
	}
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse(cpu),
		corev1.ResourceMemory: resource.MustParse(mem),
		corev1.ResourcePods:   *resource.NewQuantity(int64(pods), resource.DecimalSI),
		// Users' graphs ask for ephemeral storage (compat/vllm/agg.yaml).
		corev1.ResourceEphemeralStorage: resource.MustParse("2Ti"),
	}
	labels := map[string]string{
		LabelManaged:                       ManagedValue,
		LabelPool:                          p.Name,
		corev1.LabelHostname:               p.NodeName(i),
		corev1.LabelOSStable:               "linux",
		corev1.LabelArchStable:             "amd64",
		"node.kubernetes.io/instance-type": "sim-" + p.Name,
	}
	if p.GPUs > 0 {
		capacity[GPUResource] = *resource.NewQuantity(int64(p.GPUs), resource.DecimalSI)
		maps.Copy(labels, p.GPULabels(i))
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        p.NodeName(i),
			Labels:      labels,
			Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"},
		},
		Status: corev1.NodeStatus{
			Capacity:    capacity,
			Allocatable: capacity.DeepCopy(),
			Phase:       corev1.NodeRunning,
		},
	}
}

// GPULabels are the labels of GPU node i of the pool beyond a node's own:
// GPU feature discovery's (product, count, memory, present) and the
// topology labels of its rack and block. None for a pool without GPUs.
func (p Pool) GPULabels(i int) map[string]string {
	if p.GPUs == 0 {
		return nil
	}
	rack, block := p.Rack(i)
	return map[string]string{
		LabelGPUProduct:          p.Product,
		LabelGPUCount:            strconv.Itoa(p.GPUs),
		LabelGPUMemory:           strconv.Itoa(p.MemoryMiB),
		"nvidia.com/gpu.present": "true",
		LabelRack:                rack,
		LabelNVLink:              rack,
		LabelBlock:               block,
	}
}

// Rack names the rack (and NVLink domain) and the block of GPU node i of the
// pool: <pool>-rack-<n> and <pool>-block-<n>, nodes filling racks in order.
func (p Pool) Rack(i int) (rack, block string) {
	size, perBlock := p.RackSize, p.RacksPerBlock
	if size == 0 {
		size = DefaultRackSize
	}
	if perBlock == 0 {
		perBlock = DefaultRacksPerBlock
	}
	r := i / size
	return fmt.Sprintf("%s-rack-%d", p.Name, r), fmt.Sprintf("%s-block-%d", p.Name, r/perBlock)
}
