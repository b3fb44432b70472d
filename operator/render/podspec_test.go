package render

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/dynamoctl/dynamo-operator/internal/builders"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

func quantities(kv ...string) corev1.ResourceList {
	list := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		list[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return list
}

func TestResourceRequirements(t *testing.T) {
	cases := map[string]struct {
		res          *v1alpha1.Resources
		wantRequests corev1.ResourceList
		wantLimits   corev1.ResourceList
	}{
		"none":        {},
		"empty sides": {res: &v1alpha1.Resources{Requests: &v1alpha1.ResourceItem{}, Limits: &v1alpha1.ResourceItem{}}},
		"cpu and memory on both sides": {
			res: &v1alpha1.Resources{
				Requests: &v1alpha1.ResourceItem{CPU: "500m", Memory: "20Gi"},
				Limits:   &v1alpha1.ResourceItem{CPU: "10", Memory: "20Gi"},
			},
			wantRequests: quantities("cpu", "500m", "memory", "20Gi"),
			wantLimits:   quantities("cpu", "10", "memory", "20Gi"),
		},
		"custom resources keep their names and side": {
			res:          &v1alpha1.Resources{Requests: &v1alpha1.ResourceItem{Custom: map[string]string{"ephemeral-storage": "2Gi", "example.com/foo": "3"}}},
			wantRequests: quantities("ephemeral-storage", "2Gi", "example.com/foo", "3"),
		},
		"named cpu wins over a custom cpu": {
			res:          &v1alpha1.Resources{Limits: &v1alpha1.ResourceItem{CPU: "2", Custom: map[string]string{"cpu": "1"}}},
			wantLimits:   quantities("cpu", "2"),
			wantRequests: nil,
		},
		"gpu limit of the default type is also requested": {
			res:          &v1alpha1.Resources{Limits: &v1alpha1.ResourceItem{GPU: "4"}},
			wantLimits:   quantities("nvidia.com/gpu", "4"),
			wantRequests: quantities("nvidia.com/gpu", "4"),
		},
		"gpu limit of a custom type": {
			res:          &v1alpha1.Resources{Limits: &v1alpha1.ResourceItem{GPU: "2", GPUType: "gpu.intel.com/i915"}},
			wantLimits:   quantities("gpu.intel.com/i915", "2"),
			wantRequests: quantities("gpu.intel.com/i915", "2"),
		},
		"gpu only requested becomes a limit too, with the request's type": {
			res:          &v1alpha1.Resources{Requests: &v1alpha1.ResourceItem{GPU: "1", GPUType: "amd.com/gpu"}},
			wantLimits:   quantities("amd.com/gpu", "1"),
			wantRequests: quantities("amd.com/gpu", "1"),
		},
		"the limit's count wins over the request's": {
			res: &v1alpha1.Resources{
				Requests: &v1alpha1.ResourceItem{GPU: "1", Memory: "200Gi"},
				Limits:   &v1alpha1.ResourceItem{GPU: "2", Memory: "250Gi"},
			},
			wantLimits:   quantities("nvidia.com/gpu", "2", "memory", "250Gi"),
			wantRequests: quantities("nvidia.com/gpu", "2", "memory", "200Gi"),
		},
		"zero gpus ask for none": {
			res: &v1alpha1.Resources{
				Requests: &v1alpha1.ResourceItem{GPU: "1"},
				Limits:   &v1alpha1.ResourceItem{GPU: "0"},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, errs := resourceRequirements(tc.res, field.NewPath("spec", "resources"))
			if len(errs) > 0 {
				t.Fatalf("errors: %v", errs)
			}
			if !equality.Semantic.DeepEqual(got.Requests, tc.wantRequests) {
				t.Errorf("requests %v, want %v", got.Requests, tc.wantRequests)
			}
			if !equality.Semantic.DeepEqual(got.Limits, tc.wantLimits) {
				t.Errorf("limits %v, want %v", got.Limits, tc.wantLimits)
			}
		})
	}
}

func TestResourceRequirementsClaims(t *testing.T) {
	res := &v1alpha1.Resources{Claims: []corev1.ResourceClaim{{Name: "gpu"}, {Name: "nic", Request: "r"}}}
	got, errs := resourceRequirements(res, field.NewPath("spec", "resources"))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if diff := cmp.Diff(res.Claims, got.Claims); diff != "" {
		t.Errorf("claims (-want +got):\n%s", diff)
	}
	got.Claims[0].Name = "changed"
	if res.Claims[0].Name != "gpu" {
		t.Error("claims share storage with the spec")
	}
}

func TestResourceRequirementsErrors(t *testing.T) {
	cases := map[string]struct {
		res  *v1alpha1.Resources
		path string
		text string
	}{
		"bad memory limit": {&v1alpha1.Resources{Limits: &v1alpha1.ResourceItem{Memory: "20 GB"}}, "spec.resources.limits.memory", "20 GB"},
		"bad cpu request":  {&v1alpha1.Resources{Requests: &v1alpha1.ResourceItem{CPU: "lots"}}, "spec.resources.requests.cpu", "lots"},
		"bad custom":       {&v1alpha1.Resources{Requests: &v1alpha1.ResourceItem{Custom: map[string]string{"ephemeral-storage": "2Gb"}}}, "spec.resources.requests.custom[ephemeral-storage]", "2Gb"},
		"negative gpu":     {&v1alpha1.Resources{Limits: &v1alpha1.ResourceItem{GPU: "-1"}}, "spec.resources.limits.gpu", "non-negative integer"},
		"fractional gpu":   {&v1alpha1.Resources{Limits: &v1alpha1.ResourceItem{GPU: "0.5"}}, "spec.resources.limits.gpu", "non-negative integer"},
		"signed gpu":       {&v1alpha1.Resources{Requests: &v1alpha1.ResourceItem{GPU: "+1"}}, "spec.resources.requests.gpu", "non-negative integer"},
		"word gpu":         {&v1alpha1.Resources{Limits: &v1alpha1.ResourceItem{GPU: "one"}}, "spec.resources.limits.gpu", "non-negative integer"},
		"huge gpu":         {&v1alpha1.Resources{Limits: &v1alpha1.ResourceItem{GPU: "99999999999"}}, "spec.resources.limits.gpu", "non-negative integer"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, errs := resourceRequirements(tc.res, field.NewPath("spec", "resources"))
			wantFieldError(t, errs.ToAggregate(), tc.path, tc.text)
		})
	}
}

func TestRuntimeEnv(t *testing.T) {
	cases := []struct {
		name   string
		dcd    *v1alpha1.DynamoComponentDeployment
		o      Options
		want   []corev1.EnvVar
		absent []string
		// complete: want is the whole env, in order.
		complete bool
	}{
		{
			name: "in a graph, with NATS and etcd",
			dcd:  builders.MakeGraphComponent("g", "Worker", "ns", builders.MakeService().Type(v1alpha1.ComponentTypeWorker).Image(testImage)).Obj(),
			o:    Options{NATSAddr: "nats://nats:4222", EtcdAddr: "http://etcd:2379"},
			want: workerEnv(
				corev1.EnvVar{Name: "ETCD_ENDPOINTS", Value: "http://etcd:2379"},
				corev1.EnvVar{Name: "NATS_SERVER", Value: "nats://nats:4222"},
			),
			complete: true,
		},
		{
			name:     "without NATS and etcd, those are not set",
			dcd:      builders.MakeGraphComponent("g", "Worker", "ns", builders.MakeService().Type(v1alpha1.ComponentTypeWorker).Image(testImage)).Obj(),
			want:     workerEnv(),
			complete: true,
		},
		{
			name: "dynamoNamespace set",
			dcd: builders.MakeGraphComponent("g", "Worker", "ns", builders.MakeService().Type(v1alpha1.ComponentTypeWorker).Image(testImage).
				DynamoNamespace("dynamo")).Obj(),
			want: []corev1.EnvVar{{Name: "DYN_NAMESPACE", Value: "dynamo"}},
		},
		{
			name: "empty dynamoNamespace counts as unset",
			dcd: builders.MakeGraphComponent("g", "Worker", "ns", builders.MakeService().Type(v1alpha1.ComponentTypeWorker).Image(testImage).
				DynamoNamespace("")).Obj(),
			want: []corev1.EnvVar{{Name: "DYN_NAMESPACE", Value: "ns-g"}},
		},
		{
			name: "standalone component without a service name",
			dcd:  builders.MakeComponent("solo", "ns", builders.MakeService().Type(v1alpha1.ComponentTypeWorker).Image(testImage)).Obj(),
			want: []corev1.EnvVar{
				{Name: "DYN_NAMESPACE", Value: "ns-solo"},
				{Name: "DYN_COMPONENT", Value: "worker"},
				{Name: "DYN_PARENT_DGD_K8S_NAME", Value: "solo"},
			},
		},
		{
			name: "etcd discovery, chosen by annotation, drops the kubernetes backend",
			dcd: builders.MakeGraphComponent("g", "Worker", "ns", builders.MakeService().Type(v1alpha1.ComponentTypeWorker).Image(testImage)).
				Annotations(map[string]string{AnnotationDiscoveryBackend: "etcd"}).Obj(),
			absent: []string{"DYN_DISCOVERY_BACKEND"},
		},
		{
			name:   "a generic component has neither DYN_COMPONENT without a type nor worker env",
			dcd:    builders.MakeGraphComponent("g", "Worker", "ns", builders.MakeService().Image(testImage).Type("")).Obj(),
			want:   []corev1.EnvVar{{Name: "DYN_DISCOVERY_BACKEND", Value: "kubernetes"}},
			absent: []string{"DYN_COMPONENT", "NIXL_TELEMETRY_ENABLE", "DYN_NAMESPACE_PREFIX"},
		},
		{
			name: "a frontend finds workers by namespace prefix",
			dcd: builders.MakeGraphComponent("g", "Worker", "ns", builders.MakeService().Image(testImage).
				Type(v1alpha1.ComponentTypeFrontend)).Obj(),
			want: []corev1.EnvVar{
				{Name: "DYN_NAMESPACE_PREFIX", Value: "ns-g"}, {Name: "DYN_HTTP_PORT", Value: "8000"},
				{Name: "DYNAMO_PORT", Value: "8000"}, {Name: "DYN_COMPONENT", Value: "frontend"},
			},
			absent: []string{"NIXL_TELEMETRY_ENABLE", "DYN_NAMESPACE_WORKER_SUFFIX"},
		},
		{
			name: "a worker registers under the graph's worker hash",
			dcd: builders.MakeGraphComponent("g", "Worker", "ns", builders.MakeService().Type(v1alpha1.ComponentTypeWorker).Image(testImage)).
				Label(LabelWorkerHash, "0c5b225e").Obj(),
			want: []corev1.EnvVar{{Name: "DYN_NAMESPACE_WORKER_SUFFIX", Value: "0c5b225e"}},
		},
		{
			name: "multinode",
			dcd: builders.MakeGraphComponent("g", "Worker", "ns", builders.MakeService().Type(v1alpha1.ComponentTypeWorker).Image(testImage).
				MultinodeSpec(&v1alpha1.MultinodeSpec{NodeCount: 4})).Obj(),
			want: []corev1.EnvVar{{Name: "DYN_MULTINODE_NODE_COUNT", Value: "4"}},
		},
		{
			name:   "single node has no node count",
			dcd:    builders.MakeGraphComponent("g", "Worker", "ns", builders.MakeService().Type(v1alpha1.ComponentTypeWorker).Image(testImage)).Obj(),
			absent: []string{"DYN_MULTINODE_NODE_COUNT", "NATS_SERVER", "ETCD_ENDPOINTS"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := runtimeEnv(tc.dcd, tc.o)
			if diff := cmp.Diff(tc.want, got); tc.complete && diff != "" {
				t.Errorf("env (-want +got):\n%s", diff)
			}
			for _, w := range tc.want {
				if v, ok := envValue(got, w.Name); !ok || v != w.Value {
					t.Errorf("%s = %q (set %v), want %q", w.Name, v, ok, w.Value)
				}
			}
			for _, name := range tc.absent {
				if _, ok := envValue(got, name); ok {
					t.Errorf("%s is set", name)
				}
			}
		})
	}
}

func TestPodStorage(t *testing.T) {
	graphPVCs := []v1alpha1.GraphPVC{{Name: "models"}, {Name: "cache"}}
	eightGi := resource.MustParse("8Gi")
	twoGi := resource.MustParse("2Gi")
	shm := func(size resource.Quantity) corev1.Volume {
		return corev1.Volume{Name: "shared-memory", VolumeSource: corev1.VolumeSource{
			EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: &size},
		}}
	}
	shmMount := corev1.VolumeMount{Name: "shared-memory", MountPath: "/dev/shm"}
	claimVol := func(name string) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name},
		}}
	}
	cases := map[string]struct {
		spec        v1alpha1.DynamoComponentDeploymentSharedSpec
		wantVolumes []corev1.Volume
		wantMounts  []corev1.VolumeMount
	}{
		"shared memory by default": {
			wantVolumes: []corev1.Volume{shm(eightGi)},
			wantMounts:  []corev1.VolumeMount{shmMount},
		},
		"shared memory sized": {
			spec:        v1alpha1.DynamoComponentDeploymentSharedSpec{SharedMemory: &v1alpha1.SharedMemorySpec{Size: &twoGi}},
			wantVolumes: []corev1.Volume{shm(twoGi)},
			wantMounts:  []corev1.VolumeMount{shmMount},
		},
		"shared memory section without size": {
			spec:        v1alpha1.DynamoComponentDeploymentSharedSpec{SharedMemory: &v1alpha1.SharedMemorySpec{}},
			wantVolumes: []corev1.Volume{shm(eightGi)},
			wantMounts:  []corev1.VolumeMount{shmMount},
		},
		"shared memory disabled": {
			spec: v1alpha1.DynamoComponentDeploymentSharedSpec{SharedMemory: &v1alpha1.SharedMemorySpec{Disabled: true, Size: &twoGi}},
		},
		"graph claims, at the mount point or under /mnt": {
			spec: v1alpha1.DynamoComponentDeploymentSharedSpec{
				SharedMemory: &v1alpha1.SharedMemorySpec{Disabled: true},
				VolumeMounts: []v1alpha1.VolumeMount{{Name: "models", MountPoint: "/models"}, {Name: "cache", UseAsCompilationCache: true}},
			},
			wantVolumes: []corev1.Volume{claimVol("models"), claimVol("cache")},
			wantMounts:  []corev1.VolumeMount{{Name: "models", MountPath: "/models"}, {Name: "cache", MountPath: "/mnt/cache"}},
		},
		"one claim at two paths is one volume": {
			spec: v1alpha1.DynamoComponentDeploymentSharedSpec{
				SharedMemory: &v1alpha1.SharedMemorySpec{Disabled: true},
				VolumeMounts: []v1alpha1.VolumeMount{{Name: "models", MountPoint: "/a"}, {Name: "models", MountPoint: "/b"}},
			},
			wantVolumes: []corev1.Volume{claimVol("models")},
			wantMounts:  []corev1.VolumeMount{{Name: "models", MountPath: "/a"}, {Name: "models", MountPath: "/b"}},
		},
		"older per-service pvc, default and explicit path": {
			spec: v1alpha1.DynamoComponentDeploymentSharedSpec{
				SharedMemory: &v1alpha1.SharedMemorySpec{Disabled: true},
				PVC:          &v1alpha1.ServicePVC{Name: ptr.To("weights")},
			},
			wantVolumes: []corev1.Volume{claimVol("weights")},
			wantMounts:  []corev1.VolumeMount{{Name: "weights", MountPath: "/mnt/weights"}},
		},
		"older per-service pvc with a mount path, after the graph's claims": {
			spec: v1alpha1.DynamoComponentDeploymentSharedSpec{
				VolumeMounts: []v1alpha1.VolumeMount{{Name: "models", MountPoint: "/models"}},
				PVC:          &v1alpha1.ServicePVC{Name: ptr.To("weights"), MountPath: ptr.To("/data")},
			},
			wantVolumes: []corev1.Volume{shm(eightGi), claimVol("models"), claimVol("weights")},
			wantMounts: []corev1.VolumeMount{shmMount, {Name: "models", MountPath: "/models"},
				{Name: "weights", MountPath: "/data"}},
		},
		"pvc without a name mounts nothing": {
			spec: v1alpha1.DynamoComponentDeploymentSharedSpec{
				SharedMemory: &v1alpha1.SharedMemorySpec{Disabled: true},
				PVC:          &v1alpha1.ServicePVC{MountPath: ptr.To("/data")},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			volumes, mounts, errs := podStorage(&tc.spec, graphPVCs, field.NewPath("spec"))
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			if !equality.Semantic.DeepEqual(volumes, tc.wantVolumes) {
				t.Errorf("volumes %+v, want %+v", volumes, tc.wantVolumes)
			}
			if diff := cmp.Diff(tc.wantMounts, mounts); diff != "" {
				t.Errorf("mounts (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPodStorageUnknownClaims(t *testing.T) {
	spec := v1alpha1.DynamoComponentDeploymentSharedSpec{VolumeMounts: []v1alpha1.VolumeMount{
		{Name: "models"}, {Name: "typo"}, {Name: "other"},
	}}
	_, _, errs := podStorage(&spec, []v1alpha1.GraphPVC{{Name: "models"}}, field.NewPath("spec"))
	if len(errs) != 2 {
		t.Fatalf("errors %v, want two", errs)
	}
	wantFieldError(t, errs.ToAggregate(), "spec.volumeMounts[1].name", "not found in the graph's spec.pvcs")
	wantFieldError(t, errs.ToAggregate(), "spec.volumeMounts[2].name", `"other"`)

	// A standalone component has no graph claims to name.
	_, _, errs = podStorage(&spec, nil, field.NewPath("spec"))
	wantFieldError(t, errs.ToAggregate(), "spec.volumeMounts[0].name", "not found")
}

func TestPatchWithoutNulls(t *testing.T) {
	// A typed PodSpec marshals its unset containers as null, which a
	// strategic merge patch would read as "delete the containers".
	got, err := patchWithoutNulls(corev1.PodSpec{TerminationGracePeriodSeconds: ptr.To[int64](600)})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(got), "null") {
		t.Errorf("patch %s has nulls", got)
	}
	if want := `{"containers":`; strings.Contains(string(got), want) {
		t.Errorf("patch %s names containers", got)
	}

	nested := map[string]any{
		"a": nil,
		"b": map[string]any{"c": nil, "d": 1},
		"e": []any{map[string]any{"f": nil, "g": "x"}},
	}
	dropNulls(nested)
	want := map[string]any{"b": map[string]any{"d": 1}, "e": []any{map[string]any{"g": "x"}}}
	if diff := cmp.Diff(want, nested); diff != "" {
		t.Errorf("dropNulls (-want +got):\n%s", diff)
	}
}

func TestMergeExtraPodSpecNothingToMerge(t *testing.T) {
	pod := corev1.PodSpec{Containers: []corev1.Container{{Name: MainContainerName, Image: "x"}}}
	for _, extra := range []*v1alpha1.ExtraPodSpec{nil, {}} {
		got, err := mergeExtraPodSpec(pod, extra, field.NewPath("spec", "extraPodSpec"))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(pod, got); diff != "" {
			t.Errorf("merge of %+v changed the pod (-want +got):\n%s", extra, diff)
		}
	}
}

func TestAppendEnvFromAndMergeClaims(t *testing.T) {
	secret := corev1.EnvFromSource{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}}}
	config := corev1.EnvFromSource{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "c"}}}
	if diff := cmp.Diff([]corev1.EnvFromSource{secret, config}, appendEnvFrom([]corev1.EnvFromSource{secret}, []corev1.EnvFromSource{secret, config})); diff != "" {
		t.Errorf("appendEnvFrom (-want +got):\n%s", diff)
	}
	got := mergeClaims([]corev1.ResourceClaim{{Name: "a"}, {Name: "b"}}, []corev1.ResourceClaim{{Name: "b", Request: "r"}, {Name: "c"}})
	want := []corev1.ResourceClaim{{Name: "a"}, {Name: "b", Request: "r"}, {Name: "c"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mergeClaims (-want +got):\n%s", diff)
	}
}

func TestPatchPodSpec(t *testing.T) {
	pod := corev1.PodSpec{
		Containers: []corev1.Container{{
			Name:  MainContainerName,
			Image: "i",
			Env:   []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", Value: "1"}},
			Ports: []corev1.ContainerPort{{Name: "system", ContainerPort: 9090}},
			VolumeMounts: []corev1.VolumeMount{
				{Name: "shm", MountPath: "/dev/shm"},
			},
		}, {Name: "sidecar", Image: "s"}},
		Volumes: []corev1.Volume{{Name: "shm"}},
	}
	patch := `{
		"containers": [
			{"name": "extra", "image": "e"},
			{"name": "main", "env": [{"name": "C", "value": "2"}, {"name": "A", "value": "2"}],
			 "ports": [{"containerPort": 1234}], "volumeMounts": [{"name": "u", "mountPath": "/u"}]}
		],
		"volumes": [{"name": "u"}]
	}`
	got, err := patchPodSpec(pod, []byte(patch))
	if err != nil {
		t.Fatal(err)
	}
	var containers []string
	for _, c := range got.Containers {
		containers = append(containers, c.Name)
	}
	if diff := cmp.Diff([]string{MainContainerName, "sidecar", "extra"}, containers); diff != "" {
		t.Errorf("containers (-want +got):\n%s", diff)
	}
	if got.Volumes[0].Name != "shm" || got.Volumes[1].Name != "u" {
		t.Errorf("volumes %+v", got.Volumes)
	}
	main := got.Containers[0]
	if diff := cmp.Diff([]string{"A", "B", "C"}, envNames(main.Env)); diff != "" {
		t.Errorf("env order (-want +got):\n%s", diff)
	}
	if v, _ := envValue(main.Env, "A"); v != "2" {
		t.Errorf("A = %q, want the patch's 2", v)
	}
	if main.Ports[0].ContainerPort != 9090 || main.Ports[1].ContainerPort != 1234 {
		t.Errorf("ports %+v", main.Ports)
	}
	if main.VolumeMounts[0].MountPath != "/dev/shm" || main.VolumeMounts[1].MountPath != "/u" {
		t.Errorf("mounts %+v", main.VolumeMounts)
	}

	if _, err := patchPodSpec(pod, []byte(`{"containers": [{"image": "no-name"}]}`)); err == nil {
		t.Error("a container without its merge key was merged")
	}
}

func TestGeneratedFirst(t *testing.T) {
	id := func(s string) string { return s }
	cases := []struct {
		merged, generated, want []string
	}{
		{merged: nil, generated: []string{"a"}, want: nil},
		{merged: []string{"x", "a", "y", "b"}, generated: []string{"a", "b"}, want: []string{"a", "b", "x", "y"}},
		{merged: []string{"b", "a"}, generated: []string{"a", "b"}, want: []string{"a", "b"}},
		{merged: []string{"y", "x"}, generated: nil, want: []string{"y", "x"}},
	}
	for _, tc := range cases {
		if diff := cmp.Diff(tc.want, generatedFirst(append([]string(nil), tc.merged...), tc.generated, id)); diff != "" {
			t.Errorf("generatedFirst(%v, %v) (-want +got):\n%s", tc.merged, tc.generated, diff)
		}
	}
}

// workerEnv is the whole runtime env of newDCD's worker, sorted by name, with
// extra variables (which must sort between DYN_SYSTEM_USE... and NIXL_...).
func workerEnv(extra ...corev1.EnvVar) []corev1.EnvVar {
	env := []corev1.EnvVar{
		{Name: "DYN_COMPONENT", Value: "worker"},
		{Name: "DYN_DISCOVERY_BACKEND", Value: "kubernetes"},
		{Name: "DYN_HEALTH_CHECK_ENABLED", Value: "false"},
		{Name: "DYN_NAMESPACE", Value: "ns-g"},
		{Name: "DYN_PARENT_DGD_K8S_NAME", Value: "g"},
		{Name: "DYN_PARENT_DGD_K8S_NAMESPACE", Value: "ns"},
		{Name: "DYN_SYSTEM_ENABLED", Value: "true"},
		{Name: "DYN_SYSTEM_PORT", Value: "9090"},
		{Name: "DYN_SYSTEM_USE_ENDPOINT_HEALTH_STATUS", Value: `["generate"]`},
	}
	env = append(env, extra...)
	return append(env,
		corev1.EnvVar{Name: "NIXL_TELEMETRY_ENABLE", Value: "n"},
		corev1.EnvVar{Name: "NIXL_TELEMETRY_EXPORTER", Value: "prometheus"},
		corev1.EnvVar{Name: "NIXL_TELEMETRY_PROMETHEUS_PORT", Value: "19090"},
		fieldEnv("POD_NAME", "metadata.name"),
		fieldEnv("POD_NAMESPACE", "metadata.namespace"),
		fieldEnv("POD_UID", "metadata.uid"),
	)
}
