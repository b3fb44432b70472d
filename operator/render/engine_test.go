package render

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/dynamoctl/dynamo-operator/internal/builders"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

// The standby engine's torch.distributed master port is the active one's
// plus 100, wherever the user's command line sets it; appended when it
// does not.
func TestFailoverStandbyMasterPort(t *testing.T) {
	for name, tc := range map[string]struct {
		command, args         []string
		wantCommand, wantArgs []string
	}{
		"not set": {
			command: []string{"python3", "-m", "dynamo.vllm"}, args: []string{"--model", "m"},
			wantCommand: []string{"python3", "-m", "dynamo.vllm"}, wantArgs: []string{"--model", "m", "--master-port", "29600"},
		},
		"a word of args": {
			command: []string{"python3", "-m", "dynamo.vllm"}, args: []string{"--master-port", "30000", "--model", "m"},
			wantCommand: []string{"python3", "-m", "dynamo.vllm"}, wantArgs: []string{"--master-port", "30100", "--model", "m"},
		},
		"a shell string of args": {
			command: []string{"/bin/sh", "-c"}, args: []string{"python3 -m dynamo.vllm --master-port 30000 --model m"},
			wantCommand: []string{"/bin/sh", "-c"}, wantArgs: []string{"python3 -m dynamo.vllm --master-port 30100 --model m"},
		},
		"a shell string of command": {
			command:     []string{"sh", "-c", "python3 -m dynamo.vllm --master-port 30000"},
			wantCommand: []string{"sh", "-c", "python3 -m dynamo.vllm --master-port 30100"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			dcd := builders.MakeComponent("g-worker", "ns", builders.MakeEmptyService().Type(v1alpha1.ComponentTypeWorker).
				Image("img").GPUs(1).Command(tc.command, tc.args...).
				GPUMemoryService(&v1alpha1.EnabledSpec{Enabled: true}).Failover(&v1alpha1.EnabledSpec{Enabled: true})).
				Obj()
			d, err := Deployment(dcd, nil, Options{})
			if err != nil {
				t.Fatal(err)
			}
			engines := d.Spec.Template.Spec.Containers
			if findContainer(engines, MainContainerName) != nil || len(engines) != 2 {
				t.Fatalf("containers %v, want engine-0 and engine-1 alone", names(engines))
			}
			standby := findContainer(engines, "engine-1")
			if diff := cmp.Diff(tc.wantCommand, standby.Command); diff != "" {
				t.Errorf("command (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantArgs, standby.Args); diff != "" {
				t.Errorf("args (-want +got):\n%s", diff)
			}
			active := findContainer(engines, "engine-0")
			if diff := cmp.Diff(tc.command, active.Command); diff != "" {
				t.Errorf("active engine's command (-want +got):\n%s", diff)
			}
		})
	}
}

// A component without the GPU memory service has no claim template; one
// with it claims its GPU count from the default DeviceClass or gpuType.
func TestGMSResourceClaimTemplate(t *testing.T) {
	plain := builders.MakeComponent("g-worker", "ns", builders.MakeEmptyService().GPUs(2)).Obj()
	if tmpl := GMSResourceClaimTemplate(plain); tmpl != nil {
		t.Errorf("template %v for a component without the GPU memory service", tmpl)
	}
	for name, tc := range map[string]struct {
		resources *v1alpha1.Resources
		wantClass string
		wantCount int64
	}{
		"the default DeviceClass": {
			resources: &v1alpha1.Resources{Limits: &v1alpha1.ResourceItem{GPU: "4"}},
			wantClass: GMSDefaultDeviceClass, wantCount: 4,
		},
		"gpuType names the DeviceClass": {
			resources: &v1alpha1.Resources{Limits: &v1alpha1.ResourceItem{GPU: "1", GPUType: "gpu.example.com"}},
			wantClass: "gpu.example.com", wantCount: 1,
		},
	} {
		t.Run(name, func(t *testing.T) {
			dcd := builders.MakeComponent("g-worker", "ns", builders.MakeEmptyService().Resources(tc.resources).
				GPUMemoryService(&v1alpha1.EnabledSpec{Enabled: true})).Obj()
			tmpl := GMSResourceClaimTemplate(dcd)
			if tmpl == nil || tmpl.Name != "g-worker-gpu" {
				t.Fatalf("template %v, want g-worker-gpu", tmpl)
			}
			got := tmpl.Spec.Spec.Devices.Requests[0].Exactly
			if got.DeviceClassName != tc.wantClass || got.Count != tc.wantCount {
				t.Errorf("request %s × %d, want %s × %d", got.DeviceClassName, got.Count, tc.wantClass, tc.wantCount)
			}
		})
	}
}

func names(cs []corev1.Container) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}

// The fields a kept pod template lacks: none in this version's rendering of
// the spec; each the spec sets in the rendering of the same spec without
// them (as a version that did not render them left it).
func TestEngineFieldsNotIn(t *testing.T) {
	on := &v1alpha1.EnabledSpec{Enabled: true}
	for name, tc := range map[string]struct {
		with, without *builders.ServiceWrapper
		want          []string
	}{
		"GPU memory service and failover": {
			with: builders.MakeEmptyService().Type(v1alpha1.ComponentTypeWorker).Image("img").GPUs(2).
				Command([]string{"python3", "-m", "dynamo.vllm"}).GPUMemoryService(on).Failover(on),
			without: builders.MakeEmptyService().Type(v1alpha1.ComponentTypeWorker).Image("img").GPUs(2).
				Command([]string{"python3", "-m", "dynamo.vllm"}),
			want: []string{"gpuMemoryService", "failover"},
		},
		"the endpoint picker's configuration": {
			with:    builders.MakeEmptyService().Type(v1alpha1.ComponentTypeEPP).Image("img").EPPConfig(&v1alpha1.EPPConfig{}),
			without: builders.MakeEmptyService().Type(v1alpha1.ComponentTypeEPP).Image("img"),
			want:    []string{"eppConfig"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			dcd := builders.MakeComponent("g-worker", "ns", tc.with).Obj()
			rendered, err := Deployment(dcd, nil, Options{})
			if err != nil {
				t.Fatal(err)
			}
			earlier, err := Deployment(builders.MakeComponent("g-worker", "ns", tc.without).Obj(), nil, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if got := EngineFieldsNotIn(dcd, &rendered.Spec.Template.Spec); len(got) != 0 {
				t.Errorf("this version's rendering lacks %v", got)
			}
			if diff := cmp.Diff(tc.want, EngineFieldsNotIn(dcd, &earlier.Spec.Template.Spec)); diff != "" {
				t.Errorf("fields the earlier rendering lacks (-want +got):\n%s", diff)
			}
		})
	}
}
