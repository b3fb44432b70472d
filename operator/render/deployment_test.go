package render

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/dynamoctl/dynamo-operator/internal/builders"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

func TestDeploymentMetadata(t *testing.T) {
	dcd := builders.MakeGraphComponent("g", "Worker", "ns", builders.MakeService().Type(v1alpha1.ComponentTypeWorker).Image(testImage).
		SubType("decode").
		Label("svc", "l").
		Label(LabelComponent, "user-tries-to-redirect").
		Annotation("svc-note", "n").
		ExtraPodMetadata(&v1alpha1.ExtraPodMetadata{
			Labels:      map[string]string{"pod": "l", "svc": "pod-wins"},
			Annotations: map[string]string{"prometheus.io/scrape": "true"},
		})).
		Label("team", "a").
		Annotations(map[string]string{
			"owner": "me",
			"kubectl.kubernetes.io/last-applied-configuration": "{}",
			"nvidia.com/last-applied-hash":                     "dcd-hash",
		}).Obj()
	d, err := Deployment(dcd, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d.APIVersion != "apps/v1" || d.Kind != "Deployment" {
		t.Errorf("TypeMeta %+v", d.TypeMeta)
	}
	if d.Name != "g-worker" || d.Namespace != "ns" {
		t.Errorf("name %s/%s", d.Namespace, d.Name)
	}
	wantLabels := map[string]string{
		LabelGraphName: "g", LabelComponent: "g-worker", LabelManagedBy: ManagedByValue,
		"team": "a", "svc": "l",
	}
	if diff := cmp.Diff(wantLabels, d.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	wantAnnotations := map[string]string{"owner": "me", "svc-note": "n"}
	if diff := cmp.Diff(wantAnnotations, d.Annotations); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{LabelComponent: "g-worker"}, d.Spec.Selector.MatchLabels); diff != "" {
		t.Errorf("selector (-want +got):\n%s", diff)
	}
	wantPodLabels := map[string]string{
		LabelComponent: "g-worker", LabelGraphName: "g",
		LabelComponentType: "worker", LabelSubComponentType: "decode",
		"svc": "pod-wins", "pod": "l",
		LabelMetricsEnabled: "true", LabelDiscoveryBackend: "kubernetes", LabelDiscoveryEnabled: "true",
		LabelDynamoNamespace: "ns-g",
	}
	if diff := cmp.Diff(wantPodLabels, d.Spec.Template.Labels); diff != "" {
		t.Errorf("pod labels (-want +got):\n%s", diff)
	}
	wantPodAnnotations := map[string]string{"svc-note": "n", "prometheus.io/scrape": "true"}
	if diff := cmp.Diff(wantPodAnnotations, d.Spec.Template.Annotations); diff != "" {
		t.Errorf("pod annotations (-want +got):\n%s", diff)
	}
	// The pod labels must match the selector, or the Deployment is refused.
	for k, v := range d.Spec.Selector.MatchLabels {
		if d.Spec.Template.Labels[k] != v {
			t.Errorf("pod label %s = %q does not match the selector's %q", k, d.Spec.Template.Labels[k], v)
		}
	}
}

func TestDeploymentMinimalMetadata(t *testing.T) {
	dcd := builders.MakeComponent("solo", "ns", builders.MakeService().ServiceName("Worker").Image(testImage)).Obj()
	d, err := Deployment(dcd, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{LabelComponent: "solo", LabelManagedBy: ManagedByValue}, d.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{
		LabelComponent: "solo", LabelMetricsEnabled: "true", LabelDiscoveryBackend: "kubernetes",
		LabelDiscoveryEnabled: "true", LabelDynamoNamespace: "ns-solo",
	}, d.Spec.Template.Labels); diff != "" {
		t.Errorf("pod labels (-want +got):\n%s", diff)
	}
	if d.Annotations != nil || d.Spec.Template.Annotations != nil {
		t.Errorf("annotations %v / pod %v, want nil", d.Annotations, d.Spec.Template.Annotations)
	}
}

func TestDeploymentReplicas(t *testing.T) {
	cases := map[string]struct {
		replicas  *int32
		multinode *v1alpha1.MultinodeSpec
		want      int32
	}{
		"default":                          {want: 1},
		"set":                              {replicas: ptr.To[int32](3), want: 3},
		"scaled to zero":                   {replicas: ptr.To[int32](0), want: 0},
		"node count below two is one node": {replicas: ptr.To[int32](2), multinode: &v1alpha1.MultinodeSpec{NodeCount: 1}, want: 2},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dcd := builders.MakeGraphComponent("g", "Worker", "ns", builders.MakeService().Type(v1alpha1.ComponentTypeWorker).Image(testImage).
				ReplicasPtr(tc.replicas).
				MultinodeSpec(tc.multinode)).Obj()
			d, err := Deployment(dcd, nil, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if *d.Spec.Replicas != tc.want {
				t.Errorf("replicas %d, want %d", *d.Spec.Replicas, tc.want)
			}
		})
	}
}

func TestDeploymentRefusesMultinode(t *testing.T) {
	dcd := builders.MakeGraphComponent("g", "Worker", "ns", builders.MakeService().Type(v1alpha1.ComponentTypeWorker).Image(testImage).
		MultinodeSpec(&v1alpha1.MultinodeSpec{NodeCount: 2})).Obj()
	_, err := Deployment(dcd, nil, Options{})
	wantFieldError(t, err, "spec.multinode.nodeCount", "LeaderWorkerSet")
}

func TestDeploymentEnvPrecedence(t *testing.T) {
	dgd := builders.MakeGraph("g", "ns").
		Service("Worker", builders.MakeEmptyService().Type(v1alpha1.ComponentTypeWorker).Env("GLOBAL_ONLY_OVERRIDDEN_BY_SERVICE", "service").Env("SERVICE_ONLY", "service").Env("OVERRIDDEN_BY_MAIN", "service").ExtraPodSpec(&v1alpha1.ExtraPodSpec{MainContainer: &corev1.Container{
			Image: testImage,
			Env: []corev1.EnvVar{
				{Name: "OVERRIDDEN_BY_MAIN", Value: "main"},
				{Name: "DYN_SYSTEM_PORT", Value: "9345"},
				{Name: "MAIN_ONLY", ValueFrom: &corev1.EnvVarSource{
					SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "k"},
				}},
			},
		}})).
		Obj()
	dgd.Spec.Envs = []corev1.EnvVar{
		{Name: "DYN_NAMESPACE", Value: "from-global"},
		{Name: "GLOBAL_ONLY_OVERRIDDEN_BY_SERVICE", Value: "global"},
		{Name: "GLOBAL_ONLY", Value: "global"},
	}
	dcds, err := Components(dgd)
	if err != nil {
		t.Fatal(err)
	}
	_, main := mustDeploy(t, dcds[0], nil, Options{NATSAddr: "nats://n:4222", EtcdAddr: "http://e:2379"})

	// The runtime's env, sorted by name, with the users' values in place.
	want := []corev1.EnvVar{
		{Name: "DYN_COMPONENT", Value: "worker"},
		{Name: "DYN_DISCOVERY_BACKEND", Value: "kubernetes"},
		{Name: "DYN_HEALTH_CHECK_ENABLED", Value: "false"},
		{Name: "DYN_NAMESPACE", Value: "from-global"},
		{Name: "DYN_NAMESPACE_WORKER_SUFFIX", Value: WorkerHash(dgd)},
		{Name: "DYN_PARENT_DGD_K8S_NAME", Value: "g"},
		{Name: "DYN_PARENT_DGD_K8S_NAMESPACE", Value: "ns"},
		{Name: "DYN_SYSTEM_ENABLED", Value: "true"},
		{Name: "DYN_SYSTEM_PORT", Value: "9345"},
		{Name: "DYN_SYSTEM_USE_ENDPOINT_HEALTH_STATUS", Value: `["generate"]`},
		{Name: "ETCD_ENDPOINTS", Value: "http://e:2379"},
		{Name: "NATS_SERVER", Value: "nats://n:4222"},
		{Name: "NIXL_TELEMETRY_ENABLE", Value: "n"},
		{Name: "NIXL_TELEMETRY_EXPORTER", Value: "prometheus"},
		{Name: "NIXL_TELEMETRY_PROMETHEUS_PORT", Value: "19090"},
		fieldEnv("POD_NAME", "metadata.name"),
		fieldEnv("POD_NAMESPACE", "metadata.namespace"),
		fieldEnv("POD_UID", "metadata.uid"),
		{Name: "GLOBAL_ONLY_OVERRIDDEN_BY_SERVICE", Value: "service"},
		{Name: "GLOBAL_ONLY", Value: "global"},
		{Name: "SERVICE_ONLY", Value: "service"},
		{Name: "OVERRIDDEN_BY_MAIN", Value: "main"},
		{Name: "MAIN_ONLY", ValueFrom: &corev1.EnvVarSource{
			SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "k"},
		}},
	}
	if diff := cmp.Diff(want, main.Env); diff != "" {
		t.Errorf("env (-want +got):\n%s", diff)
	}
}

// A user's valueFrom for a generated variable replaces it whole: a value and a
// valueFrom side by side would be refused by the API server.
func TestDeploymentEnvValueFromReplacesValue(t *testing.T) {
	dcd := builders.MakeGraphComponent("g", "Worker", "ns", builders.MakeService().Type(v1alpha1.ComponentTypeWorker).Image(testImage).
		ContainerEnv([]corev1.EnvVar{{Name: "DYN_NAMESPACE", ValueFrom: &corev1.EnvVarSource{
			FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"},
		}}})).Obj()
	_, main := mustDeploy(t, dcd, nil, Options{})
	for _, e := range main.Env {
		if e.Name == "DYN_NAMESPACE" && (e.Value != "" || e.ValueFrom == nil) {
			t.Errorf("DYN_NAMESPACE = %+v, want only the user's valueFrom", e)
		}
	}
}

func TestDeploymentEnvFromSecret(t *testing.T) {
	dcd := builders.MakeGraphComponent("g", "Worker", "ns", builders.MakeService().Type(v1alpha1.ComponentTypeWorker).Image(testImage).
		EnvFromSecret("hf-token-secret").
		ContainerEnvFrom([]corev1.EnvFromSource{{
			ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}},
		}})).Obj()
	_, main := mustDeploy(t, dcd, nil, Options{})
	want := []corev1.EnvFromSource{
		{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "hf-token-secret"}}},
		{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}},
	}
	if diff := cmp.Diff(want, main.EnvFrom); diff != "" {
		t.Errorf("envFrom (-want +got):\n%s", diff)
	}

	_, main = mustDeploy(t, builders.MakeGraphComponent("g", "Worker", "ns", builders.MakeService().Type(v1alpha1.ComponentTypeWorker).Image(testImage)).Obj(), nil, Options{})
	if main.EnvFrom != nil {
		t.Errorf("envFrom %+v without envFromSecret", main.EnvFrom)
	}
}

func TestDeploymentPorts(t *testing.T) {
	system := corev1.ContainerPort{Name: "system", ContainerPort: 9090, Protocol: corev1.ProtocolTCP}
	http := corev1.ContainerPort{Name: "http", ContainerPort: 8000, Protocol: corev1.ProtocolTCP}
	nixl := corev1.ContainerPort{Name: "nixl", ContainerPort: 19090, Protocol: corev1.ProtocolTCP}
	cases := []struct {
		componentType v1alpha1.ComponentType
		userPorts     []corev1.ContainerPort
		want          []corev1.ContainerPort
	}{
		{componentType: v1alpha1.ComponentTypeFrontend, want: []corev1.ContainerPort{http, system}},
		{componentType: v1alpha1.ComponentTypeWorker, want: []corev1.ContainerPort{system, nixl}},
		{componentType: v1alpha1.ComponentTypePrefill, want: []corev1.ContainerPort{system, nixl}},
		{componentType: v1alpha1.ComponentTypeDecode, want: []corev1.ContainerPort{system, nixl}},
		{componentType: "", want: []corev1.ContainerPort{system}},
		{componentType: "main", want: []corev1.ContainerPort{system}},
		{
			// The user's port of the same number merges with the planner's.
			componentType: v1alpha1.ComponentTypePlanner,
			userPorts:     []corev1.ContainerPort{{Name: "metrics", ContainerPort: 9085}},
			want:          []corev1.ContainerPort{system, {Name: "metrics", ContainerPort: 9085, Protocol: corev1.ProtocolTCP}},
		},
		{
			// Ports merge by container port: the user's fields win.
			componentType: v1alpha1.ComponentTypeFrontend,
			userPorts:     []corev1.ContainerPort{{ContainerPort: 8000, HostPort: 8000}},
			want:          []corev1.ContainerPort{{Name: "http", ContainerPort: 8000, HostPort: 8000, Protocol: corev1.ProtocolTCP}, system},
		},
	}
	for _, tc := range cases {
		t.Run(string(tc.componentType), func(t *testing.T) {
			dcd := builders.MakeGraphComponent("g", "Worker", "ns", builders.MakeService().Image(testImage).
				Type(tc.componentType).
				ContainerPorts(tc.userPorts)).Obj()
			_, main := mustDeploy(t, dcd, nil, Options{})
			if diff := cmp.Diff(tc.want, main.Ports); diff != "" {
				t.Errorf("ports (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDeploymentResources(t *testing.T) {
	cases := map[string]struct {
		res          *v1alpha1.Resources
		userRes      corev1.ResourceRequirements
		wantRequests corev1.ResourceList
		wantLimits   corev1.ResourceList
	}{
		"gpu limit with a custom gpu type": {
			res: &v1alpha1.Resources{Limits: &v1alpha1.ResourceItem{
				GPU: "2", GPUType: "gpu.intel.com/i915", CPU: "4", Memory: "16Gi",
			}},
			wantLimits:   quantities("gpu.intel.com/i915", "2", "cpu", "4", "memory", "16Gi"),
			wantRequests: quantities("gpu.intel.com/i915", "2"),
		},
		"custom ephemeral-storage request beside a gpu limit": {
			res: &v1alpha1.Resources{
				Limits:   &v1alpha1.ResourceItem{GPU: "1"},
				Requests: &v1alpha1.ResourceItem{Custom: map[string]string{"ephemeral-storage": "2Gi"}},
			},
			wantLimits:   quantities("nvidia.com/gpu", "1"),
			wantRequests: quantities("nvidia.com/gpu", "1", "ephemeral-storage", "2Gi"),
		},
		"mainContainer resources merge by name, the user's winning": {
			res: &v1alpha1.Resources{
				Limits:   &v1alpha1.ResourceItem{GPU: "1", Memory: "16Gi"},
				Requests: &v1alpha1.ResourceItem{CPU: "1"},
			},
			userRes: corev1.ResourceRequirements{
				Limits:   quantities("memory", "32Gi", "hugepages-2Mi", "1Gi"),
				Requests: quantities("memory", "8Gi"),
			},
			wantLimits:   quantities("nvidia.com/gpu", "1", "memory", "32Gi", "hugepages-2Mi", "1Gi"),
			wantRequests: quantities("nvidia.com/gpu", "1", "cpu", "1", "memory", "8Gi"),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dcd := builders.MakeGraphComponent("g", "Worker", "ns", builders.MakeService().Type(v1alpha1.ComponentTypeWorker).Image(testImage).
				Resources(tc.res).
				ContainerResources(tc.userRes)).Obj()
			_, main := mustDeploy(t, dcd, nil, Options{})
			if !equality.Semantic.DeepEqual(main.Resources.Limits, tc.wantLimits) {
				t.Errorf("limits %v, want %v", main.Resources.Limits, tc.wantLimits)
			}
			if !equality.Semantic.DeepEqual(main.Resources.Requests, tc.wantRequests) {
				t.Errorf("requests %v, want %v", main.Resources.Requests, tc.wantRequests)
			}
		})
	}
}

func TestDeploymentResourceErrors(t *testing.T) {
	dcd := builders.MakeGraphComponent("g", "Worker", "ns", builders.MakeService().Type(v1alpha1.ComponentTypeWorker).Image(testImage).
		Resources(&v1alpha1.Resources{Limits: &v1alpha1.ResourceItem{Memory: "lots", GPU: "x"}})).Obj()
	d, err := Deployment(dcd, nil, Options{})
	if d != nil {
		t.Error("a Deployment was rendered along with an error")
	}
	wantFieldError(t, err, "spec.resources.limits.memory", "lots")
	wantFieldError(t, err, "spec.resources.limits.gpu", "non-negative integer")
}

func TestDeploymentProbes(t *testing.T) {
	live := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/live", Port: intstr.FromInt32(9090)}}, PeriodSeconds: 5}
	ready := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"ready"}}}, FailureThreshold: 60}

	t.Run("defaults per component type", func(t *testing.T) {
		cases := []struct {
			componentType                v1alpha1.ComponentType
			startup, liveness, readiness *corev1.Probe
		}{
			{v1alpha1.ComponentTypeWorker, httpProbe("/live", "system", 0, 10, 5, 720),
				httpProbe("/live", "system", 0, 5, 4, 1), httpProbe("/health", "system", 0, 10, 4, 3)},
			{v1alpha1.ComponentTypeDecode, httpProbe("/live", "system", 0, 10, 5, 720),
				httpProbe("/live", "system", 0, 5, 4, 1), httpProbe("/health", "system", 0, 10, 4, 3)},
			{v1alpha1.ComponentTypePlanner, httpProbe("/live", "system", 0, 10, 5, 720),
				httpProbe("/live", "system", 0, 5, 4, 1), httpProbe("/health", "system", 0, 10, 4, 3)},
			{v1alpha1.ComponentTypeFrontend, nil,
				httpProbe("/live", "http", 15, 10, 1, 3), httpProbe("/health", "http", 10, 10, 3, 3)},
			{"main", nil, nil, nil},
			{v1alpha1.ComponentTypeDefault, nil, nil, nil},
		}
		for _, tc := range cases {
			_, main := mustDeploy(t, builders.MakeGraphComponent("g", "Worker", "ns", builders.MakeService().Image(testImage).
				Type(tc.componentType)).Obj(), nil, Options{})
			for name, p := range map[string]struct {
				got, want *corev1.Probe
			}{"startup": {main.StartupProbe, tc.startup}, "liveness": {main.LivenessProbe, tc.liveness}, "readiness": {main.ReadinessProbe, tc.readiness}} {
				if diff := cmp.Diff(p.want, p.got); diff != "" {
					t.Errorf("%s %s probe (-want +got):\n%s", tc.componentType, name, diff)
				}
			}
		}
	})

	t.Run("a user's probe with a handler replaces the default", func(t *testing.T) {
		_, main := mustDeploy(t, builders.MakeGraphComponent("g", "Worker", "ns", builders.MakeService().Type(v1alpha1.ComponentTypeWorker).Image(testImage).
			LivenessProbe(live).
			ReadinessProbe(ready)).Obj(), nil, Options{})
		if diff := cmp.Diff(live, main.LivenessProbe); diff != "" {
			t.Errorf("liveness (-want +got):\n%s", diff)
		}
		// An exec readiness probe must not keep the default's httpGet.
		if diff := cmp.Diff(ready, main.ReadinessProbe); diff != "" {
			t.Errorf("readiness (-want +got):\n%s", diff)
		}
	})

	t.Run("a user's partial probe is laid over the default", func(t *testing.T) {
		// As a real Dynamo example writes it: only the initial delay.
		_, main := mustDeploy(t, builders.MakeGraphComponent("g", "Worker", "ns", builders.MakeService().Type(v1alpha1.ComponentTypeWorker).Image(testImage).
			ContainerStartupProbe(&corev1.Probe{InitialDelaySeconds: 180}).
			ReadinessProbe(&corev1.Probe{PeriodSeconds: 30}).
			ContainerReadinessProbe(&corev1.Probe{TimeoutSeconds: 9})).Obj(), nil, Options{})
		want := httpProbe("/live", "system", 180, 10, 5, 720)
		if diff := cmp.Diff(want, main.StartupProbe); diff != "" {
			t.Errorf("startup (-want +got):\n%s", diff)
		}
		// default < service < mainContainer.
		want = httpProbe("/health", "system", 0, 30, 9, 3)
		if diff := cmp.Diff(want, main.ReadinessProbe); diff != "" {
			t.Errorf("readiness (-want +got):\n%s", diff)
		}
	})

	t.Run("a partial probe without a default is refused by name", func(t *testing.T) {
		_, err := Deployment(builders.MakeGraphComponent("g", "Worker", "ns", builders.MakeService().Image(testImage).
			Type("main").
			ContainerStartupProbe(&corev1.Probe{InitialDelaySeconds: 180}).
			LivenessProbe(&corev1.Probe{PeriodSeconds: 3})).Obj(), nil, Options{})
		wantFieldError(t, err, "spec.extraPodSpec.mainContainer.startupProbe", `componentType "main" has no default startupProbe`)
		wantFieldError(t, err, "spec.livenessProbe", "without a handler")
	})
}

func TestDeploymentStorage(t *testing.T) {
	graphPVCs := []v1alpha1.GraphPVC{{Name: "models"}}
	dcd := builders.MakeGraphComponent("g", "Worker", "ns", builders.MakeService().Type(v1alpha1.ComponentTypeWorker).Image(testImage).
		VolumeMount("models", "/models").
		ContainerVolumeMounts([]corev1.VolumeMount{{Name: "cfg", MountPath: "/workspace/", ReadOnly: true}}).
		PodSpec(&corev1.PodSpec{Volumes: []corev1.Volume{{Name: "cfg", VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "nvidia-config"}},
		}}}})).Obj()
	pod, main := mustDeploy(t, dcd, graphPVCs, Options{})
	var volumes []string
	for _, v := range pod.Volumes {
		volumes = append(volumes, v.Name)
	}
	if diff := cmp.Diff([]string{"shared-memory", "models", "cfg"}, volumes); diff != "" {
		t.Errorf("volumes (-want +got):\n%s", diff)
	}
	wantMounts := []corev1.VolumeMount{
		{Name: "shared-memory", MountPath: "/dev/shm"},
		{Name: "models", MountPath: "/models"},
		{Name: "cfg", MountPath: "/workspace/", ReadOnly: true},
	}
	if diff := cmp.Diff(wantMounts, main.VolumeMounts); diff != "" {
		t.Errorf("mounts (-want +got):\n%s", diff)
	}
	if claim := pod.Volumes[1].PersistentVolumeClaim; claim == nil || claim.ClaimName != "models" {
		t.Errorf("models volume %+v", pod.Volumes[1])
	}
}

func TestDeploymentSharedMemory(t *testing.T) {
	twoGi := resource.MustParse("2Gi")
	cases := map[string]struct {
		shm      *v1alpha1.SharedMemorySpec
		wantSize string // empty: no /dev/shm volume
	}{
		"default":  {wantSize: "8Gi"},
		"sized":    {shm: &v1alpha1.SharedMemorySpec{Size: &twoGi}, wantSize: "2Gi"},
		"disabled": {shm: &v1alpha1.SharedMemorySpec{Disabled: true}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pod, main := mustDeploy(t, builders.MakeGraphComponent("g", "Worker", "ns", builders.MakeService().Type(v1alpha1.ComponentTypeWorker).Image(testImage).
				SharedMemory(tc.shm)).Obj(), nil, Options{})
			var vol *corev1.Volume
			for i := range pod.Volumes {
				if pod.Volumes[i].Name == "shared-memory" {
					vol = &pod.Volumes[i]
				}
			}
			mounted := false
			for _, m := range main.VolumeMounts {
				if m.Name == "shared-memory" && m.MountPath == "/dev/shm" {
					mounted = true
				}
			}
			if tc.wantSize == "" {
				if vol != nil || mounted {
					t.Errorf("shared memory present while disabled: %+v", pod.Volumes)
				}
				return
			}
			if vol == nil || !mounted {
				t.Fatalf("no shared memory at /dev/shm: volumes %+v, mounts %+v", pod.Volumes, main.VolumeMounts)
			}
			if vol.EmptyDir == nil || vol.EmptyDir.Medium != corev1.StorageMediumMemory || vol.EmptyDir.SizeLimit.String() != tc.wantSize {
				t.Errorf("shared memory volume %+v, want a %s memory emptyDir", vol.VolumeSource, tc.wantSize)
			}
		})
	}
}

func TestDeploymentUnknownVolumeMount(t *testing.T) {
	dcd := builders.MakeGraphComponent("g", "Worker", "ns", builders.MakeService().Type(v1alpha1.ComponentTypeWorker).Image(testImage).
		VolumeMount("models", "").
		VolumeMount("modles", "")).Obj()
	_, err := Deployment(dcd, []v1alpha1.GraphPVC{{Name: "models"}}, Options{})
	wantFieldError(t, err, "spec.volumeMounts[1].name", "not found in the graph's spec.pvcs")
}

func TestDeploymentNoImage(t *testing.T) {
	cases := map[string]struct {
		extra *v1alpha1.ExtraPodSpec
	}{
		"no extraPodSpec":             {},
		"no mainContainer":            {extra: &v1alpha1.ExtraPodSpec{PodSpec: &corev1.PodSpec{NodeSelector: map[string]string{"a": "b"}}}},
		"mainContainer without image": {extra: &v1alpha1.ExtraPodSpec{MainContainer: &corev1.Container{Command: []string{"x"}}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dcd := builders.MakeGraphComponent("g", "Worker", "ns", builders.MakeService().Type(v1alpha1.ComponentTypeWorker).Image(testImage).
				ExtraPodSpec(tc.extra)).Obj()
			d, err := Deployment(dcd, nil, Options{})
			if d != nil {
				t.Error("a Deployment was rendered without an image")
			}
			wantFieldError(t, err, "spec.extraPodSpec.mainContainer.image", "Required value: set the service's image")
		})
	}
}

func TestDeploymentImageFromExtraContainers(t *testing.T) {
	// A container named main in extraPodSpec.containers is merged into the
	// main container like mainContainer is.
	dcd := builders.MakeGraphComponent("g", "Worker", "ns", builders.MakeService().Type(v1alpha1.ComponentTypeWorker).Image(testImage).
		ExtraPodSpec(&v1alpha1.ExtraPodSpec{PodSpec: &corev1.PodSpec{
			Containers: []corev1.Container{{Name: MainContainerName, Image: "from-containers"}},
		}})).Obj()
	pod, main := mustDeploy(t, dcd, nil, Options{})
	if main.Image != "from-containers" || len(pod.Containers) != 1 {
		t.Errorf("image %q, %d containers", main.Image, len(pod.Containers))
	}
}

func TestDeploymentReportsAllErrors(t *testing.T) {
	dcd := builders.MakeGraphComponent("g", "Worker", "ns", builders.MakeService().Type(v1alpha1.ComponentTypeWorker).Image(testImage).
		ExtraPodSpec(nil).
		VolumeMount("missing", "").
		Resources(&v1alpha1.Resources{Requests: &v1alpha1.ResourceItem{CPU: "x"}})).Obj()
	_, err := Deployment(dcd, nil, Options{})
	if n := len(fieldErrors(t, err)); n != 3 {
		t.Errorf("%d errors, want 3: %v", n, err)
	}
	wantFieldError(t, err, "spec.extraPodSpec.mainContainer.image", "Required")
	wantFieldError(t, err, "spec.volumeMounts[0].name", "not found")
	wantFieldError(t, err, "spec.resources.requests.cpu", "x")
}

func TestDeploymentExtraPodSpecMerge(t *testing.T) {
	affinity := &corev1.Affinity{PodAffinity: &corev1.PodAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
			Weight: 100,
			PodAffinityTerm: corev1.PodAffinityTerm{
				LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
					Key: LabelComponentType, Operator: metav1.LabelSelectorOpIn, Values: []string{"worker"},
				}}},
				TopologyKey: "kubernetes.io/hostname",
			},
		}},
	}}
	tolerations := []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	dcd := builders.MakeGraphComponent("g", "Worker", "ns", builders.MakeService().Type(v1alpha1.ComponentTypeWorker).Image(testImage).
		Resources(&v1alpha1.Resources{Claims: []corev1.ResourceClaim{{Name: "nic"}, {Name: "gpu"}}}).
		ExtraPodSpec(&v1alpha1.ExtraPodSpec{
			PodSpec: &corev1.PodSpec{
				Tolerations:                   tolerations,
				Affinity:                      affinity,
				NodeSelector:                  map[string]string{"nvidia.com/gpu.product": "H100"},
				TerminationGracePeriodSeconds: ptr.To[int64](600),
				ServiceAccountName:            "runner",
				ImagePullSecrets:              []corev1.LocalObjectReference{{Name: "ngc"}},
				Volumes: []corev1.Volume{{Name: "cfg", VolumeSource: corev1.VolumeSource{
					ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "c"}},
				}}},
				ResourceClaims: []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptr.To("gpu-template")}},
				InitContainers: []corev1.Container{{Name: "init", Image: "busybox"}},
				Containers:     []corev1.Container{{Name: "logger", Image: "fluentbit"}},
			},
			MainContainer: &corev1.Container{
				Name:            "ignored-name",
				Image:           testImage,
				Command:         []string{"python3", "-m", "dynamo.vllm"},
				Args:            []string{"--model", "Qwen/Qwen3-0.6B"},
				WorkingDir:      "/workspace/examples/backends/vllm",
				ImagePullPolicy: corev1.PullIfNotPresent,
				Resources:       corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "gpu", Request: "one"}}},
			},
		})).Obj()
	pod, main := mustDeploy(t, dcd, nil, Options{})

	if diff := cmp.Diff(tolerations, pod.Tolerations); diff != "" {
		t.Errorf("tolerations (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(affinity, pod.Affinity); diff != "" {
		t.Errorf("affinity (-want +got):\n%s", diff)
	}
	if pod.NodeSelector["nvidia.com/gpu.product"] != "H100" {
		t.Errorf("nodeSelector %v", pod.NodeSelector)
	}
	if pod.TerminationGracePeriodSeconds == nil || *pod.TerminationGracePeriodSeconds != 600 {
		t.Errorf("terminationGracePeriodSeconds %v", pod.TerminationGracePeriodSeconds)
	}
	if pod.ServiceAccountName != "runner" {
		t.Errorf("serviceAccountName %q", pod.ServiceAccountName)
	}
	if diff := cmp.Diff([]corev1.LocalObjectReference{{Name: "ngc"}}, pod.ImagePullSecrets); diff != "" {
		t.Errorf("imagePullSecrets (-want +got):\n%s", diff)
	}
	var volumes []string
	for _, v := range pod.Volumes {
		volumes = append(volumes, v.Name)
	}
	if diff := cmp.Diff([]string{"shared-memory", "cfg"}, volumes); diff != "" {
		t.Errorf("volumes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptr.To("gpu-template")}}, pod.ResourceClaims); diff != "" {
		t.Errorf("resourceClaims (-want +got):\n%s", diff)
	}
	if len(pod.InitContainers) != 1 || pod.InitContainers[0].Name != "init" {
		t.Errorf("initContainers %+v", pod.InitContainers)
	}
	var containers []string
	for _, c := range pod.Containers {
		containers = append(containers, c.Name)
	}
	if diff := cmp.Diff([]string{MainContainerName, "logger"}, containers); diff != "" {
		t.Errorf("containers (-want +got):\n%s", diff)
	}

	if main.Image != testImage || main.WorkingDir != "/workspace/examples/backends/vllm" || main.ImagePullPolicy != corev1.PullIfNotPresent {
		t.Errorf("image %q, workingDir %q, pull policy %q", main.Image, main.WorkingDir, main.ImagePullPolicy)
	}
	if diff := cmp.Diff([]string{"python3", "-m", "dynamo.vllm"}, main.Command); diff != "" {
		t.Errorf("command (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"--model", "Qwen/Qwen3-0.6B"}, main.Args); diff != "" {
		t.Errorf("args (-want +got):\n%s", diff)
	}
	// Claims merge by name: the user's gpu claim replaces the spec's in place.
	if diff := cmp.Diff([]corev1.ResourceClaim{{Name: "nic"}, {Name: "gpu", Request: "one"}}, main.Resources.Claims); diff != "" {
		t.Errorf("claims (-want +got):\n%s", diff)
	}
	// Generated parts the user did not touch remain.
	if v, _ := envValue(main.Env, "DYN_COMPONENT"); v != "worker" {
		t.Errorf("runtime env lost in the merge: %v", main.Env)
	}
	if len(main.Ports) != 2 || main.Ports[0].Name != SystemPortName || main.Ports[1].Name != NixlPortName {
		t.Errorf("ports %+v", main.Ports)
	}
}

// A PodSpec with only a scalar set must not remove the generated containers:
// its typed form marshals containers as null, which means delete in a patch.
func TestDeploymentExtraPodSpecKeepsGeneratedLists(t *testing.T) {
	dcd := builders.MakeGraphComponent("g", "Worker", "ns", builders.MakeService().Type(v1alpha1.ComponentTypeWorker).Image(testImage).
		PodSpec(&corev1.PodSpec{TerminationGracePeriodSeconds: ptr.To[int64](30)}).
		MainContainer(&corev1.Container{Image: testImage})).Obj()
	pod, main := mustDeploy(t, dcd, nil, Options{})
	if len(pod.Containers) != 1 || len(pod.Volumes) != 1 || len(main.Ports) != 2 || len(main.VolumeMounts) != 1 || len(main.Env) == 0 {
		t.Errorf("generated lists lost: %+v", pod)
	}
	// The user's scalar wins over the runtime's default.
	if *pod.TerminationGracePeriodSeconds != 30 {
		t.Errorf("terminationGracePeriodSeconds %d, want the user's 30", *pod.TerminationGracePeriodSeconds)
	}
}

func TestDeploymentFrontendSidecar(t *testing.T) {
	dcd := builders.MakeGraphComponent("g", "Worker", "ns", builders.MakeService().Type(v1alpha1.ComponentTypeWorker).Image(testImage).
		Env("WORKER_ONLY", "w").
		FrontendSidecar(&v1alpha1.FrontendSidecar{
			Image:         "frontend:tag",
			Command:       []string{"python3"},
			Args:          []string{"-m", "dynamo.frontend", "--router-mode", "direct"},
			Envs:          []corev1.EnvVar{{Name: "DYN_COMPONENT", Value: "frontend"}, {Name: "SIDE", Value: "s"}},
			EnvFromSecret: ptr.To("hf-token-secret"),
		})).Obj()
	pod, _ := mustDeploy(t, dcd, nil, Options{NATSAddr: "nats://n"})
	if len(pod.Containers) != 2 {
		t.Fatalf("containers %+v", pod.Containers)
	}
	side := pod.Containers[1]
	if side.Name != SidecarContainerName || side.Image != "frontend:tag" {
		t.Errorf("sidecar %s image %q", side.Name, side.Image)
	}
	if diff := cmp.Diff([]string{"python3"}, side.Command); diff != "" {
		t.Errorf("sidecar command (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"-m", "dynamo.frontend", "--router-mode", "direct"}, side.Args); diff != "" {
		t.Errorf("sidecar args (-want +got):\n%s", diff)
	}
	for name, want := range map[string]string{"DYN_COMPONENT": "frontend", "SIDE": "s", "NATS_SERVER": "nats://n", "DYN_NAMESPACE": "ns-g"} {
		if v, _ := envValue(side.Env, name); v != want {
			t.Errorf("sidecar %s = %q, want %q", name, v, want)
		}
	}
	if _, ok := envValue(side.Env, "WORKER_ONLY"); ok {
		t.Error("the worker's service env reached the sidecar")
	}
	// The main container owns the pod's system port.
	for _, name := range []string{"DYN_SYSTEM_ENABLED", "DYN_SYSTEM_PORT"} {
		if v, ok := envValue(side.Env, name); ok {
			t.Errorf("sidecar %s = %q would start a second system server on the pod's port", name, v)
		}
	}
	if len(side.EnvFrom) != 1 || side.EnvFrom[0].SecretRef.Name != "hf-token-secret" {
		t.Errorf("sidecar envFrom %+v", side.EnvFrom)
	}
	if diff := cmp.Diff([]corev1.ContainerPort{{Name: "http", ContainerPort: 8000, Protocol: corev1.ProtocolTCP}}, side.Ports); diff != "" {
		t.Errorf("sidecar ports (-want +got):\n%s", diff)
	}

	dcd.Spec.FrontendSidecar.Image = ""
	_, err := Deployment(dcd, nil, Options{})
	wantFieldError(t, err, "spec.frontendSidecar.image", "Required")
}

func TestDeploymentDoesNotChangeItsInput(t *testing.T) {
	dcd := richDCD()
	before := dcd.DeepCopy()
	d, err := Deployment(dcd, []v1alpha1.GraphPVC{{Name: "models"}}, Options{NATSAddr: "n", EtcdAddr: "e"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, dcd); diff != "" {
		t.Errorf("Deployment changed the component (-before +after):\n%s", diff)
	}
	// Nor does the result share storage with it.
	main := findContainer(d.Spec.Template.Spec.Containers, MainContainerName)
	main.Command[0] = "changed"
	main.LivenessProbe.PeriodSeconds = 99
	d.Labels["team"] = "changed"
	if diff := cmp.Diff(before, dcd); diff != "" {
		t.Errorf("the rendered Deployment shares storage with the component (-before +after):\n%s", diff)
	}
}

func TestDeploymentDeterministic(t *testing.T) {
	pvcs := []v1alpha1.GraphPVC{{Name: "models"}}
	o := Options{NATSAddr: "nats://n:4222", EtcdAddr: "http://e:2379"}
	first, err := Deployment(richDCD(), pvcs, o)
	if err != nil {
		t.Fatal(err)
	}
	firstJSON := mustJSON(t, first)
	// Map iteration order varies between runs; repeat to give it the chance.
	for i := 0; i < 50; i++ {
		again, err := Deployment(richDCD(), pvcs, o)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(first, again); diff != "" {
			t.Fatalf("render %d differs from the first (-first +again):\n%s", i, diff)
		}
		if j := mustJSON(t, again); j != firstJSON {
			t.Fatalf("render %d JSON differs:\n%s\n%s", i, firstJSON, j)
		}
	}
	for _, s := range []string{Service(richDCD()).String(), ModelService(richDCD()).String(), Ingress(richDCD()).String()} {
		if s == "" {
			t.Error("empty rendering")
		}
	}
	if mustJSON(t, Ingress(richDCD())) != mustJSON(t, Ingress(richDCD())) || mustJSON(t, Service(richDCD())) != mustJSON(t, Service(richDCD())) {
		t.Error("Service or Ingress renders differ")
	}
}

// richDCD uses every part of the spec the renderer reads, with several
// entries in every map.
func richDCD() *v1alpha1.DynamoComponentDeployment {
	twoGi := resource.MustParse("2Gi")
	return builders.MakeGraphComponent("g", "Worker", "ns", builders.MakeService().Image(testImage).
		Type(v1alpha1.ComponentTypeFrontend).
		SubType("decode").
		Label("l1", "1").
		Label("l2", "2").
		Label("l3", "3").
		Annotation("a1", "1").
		Annotation("a2", "2").
		Annotation("a3", "3").
		ReplicasPtr(ptr.To[int32](2)).
		ModelRef("Qwen/Qwen3-0.6B").
		EnvFromSecret("hf").
		Env("E1", "1").
		Env("E2", "2").
		SharedMemory(&v1alpha1.SharedMemorySpec{Size: &twoGi}).
		VolumeMount("models", "/models").
		PVC(&v1alpha1.ServicePVC{Name: ptr.To("cache")}).
		Resources(&v1alpha1.Resources{
			Requests: &v1alpha1.ResourceItem{CPU: "1", Memory: "1Gi", Custom: map[string]string{"ephemeral-storage": "2Gi", "example.com/a": "1", "example.com/b": "2"}},
			Limits:   &v1alpha1.ResourceItem{GPU: "2", Custom: map[string]string{"example.com/c": "3", "example.com/d": "4"}},
			Claims:   []corev1.ResourceClaim{{Name: "gpu"}},
		}).
		LivenessProbe(&corev1.Probe{PeriodSeconds: 5}).
		ExtraPodMetadata(&v1alpha1.ExtraPodMetadata{
			Labels:      map[string]string{"p1": "1", "p2": "2"},
			Annotations: map[string]string{"pa1": "1", "pa2": "2"},
		}).
		FrontendSidecar(&v1alpha1.FrontendSidecar{Image: "f", Envs: []corev1.EnvVar{{Name: "S", Value: "s"}}}).
		Ingress(&v1alpha1.IngressSpec{
			Enabled: true, HostSuffix: ptr.To(".example.com"),
			Labels: map[string]string{"i1": "1", "i2": "2"}, Annotations: map[string]string{"ia1": "1", "ia2": "2"},
		}).
		ExtraPodSpec(&v1alpha1.ExtraPodSpec{
			PodSpec: &corev1.PodSpec{
				NodeSelector: map[string]string{"n1": "1", "n2": "2", "n3": "3"},
				Tolerations:  []corev1.Toleration{{Key: "t", Operator: corev1.TolerationOpExists}},
				Volumes:      []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
			},
			MainContainer: &corev1.Container{
				Image:   testImage,
				Command: []string{"python3"},
				Args:    []string{"-m", "dynamo.frontend"},
				Env:     []corev1.EnvVar{{Name: "M1", Value: "1"}, {Name: "E1", Value: "main"}, {Name: "M2", Value: "2"}},
				Ports:   []corev1.ContainerPort{{Name: "metrics", ContainerPort: 9085}},
				Resources: corev1.ResourceRequirements{
					Limits: quantities("memory", "4Gi", "cpu", "2", "example.com/e", "5"),
				},
				VolumeMounts: []corev1.VolumeMount{{Name: "v", MountPath: "/v"}},
			},
		})).
		Label("a", "1").
		Label("b", "2").
		Label("c", "3").
		Annotations(map[string]string{"x": "1", "y": "2", "z": "3"}).Obj()
}

func TestDeploymentRendersEveryRichField(t *testing.T) {
	d, err := Deployment(richDCD(), []v1alpha1.GraphPVC{{Name: "models"}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	j := mustJSON(t, d)
	for _, want := range []string{`"replicas":2`, `"ephemeral-storage":"2Gi"`, `"nvidia.com/gpu":"2"`, `"claimName":"cache"`,
		`"claimName":"models"`, `"sizeLimit":"2Gi"`, `"name":"frontend-sidecar"`, `"containerPort":9085`, `"n3":"3"`} {
		if !strings.Contains(j, want) {
			t.Errorf("rendered Deployment lacks %s", want)
		}
	}
}

// The runtime serves its system server on the DYN_SYSTEM_PORT its env sets
// (Dynamo's OpenEngine sidecars: 8081); the port named "system", which the
// probes, Services and model endpoints name, goes there with it.
func TestSystemPortFollowsTheEnv(t *testing.T) {
	for name, c := range map[string]struct {
		env  corev1.EnvVar
		want int32
	}{
		"another port":          {env: corev1.EnvVar{Name: "DYN_SYSTEM_PORT", Value: "8081"}, want: 8081},
		"the default":           {env: corev1.EnvVar{Name: "DYN_SYSTEM_PORT", Value: "9090"}, want: SystemPort},
		"no port":               {env: corev1.EnvVar{Name: "DYN_SYSTEM_PORT", Value: "eighty"}, want: SystemPort},
		"out of range":          {env: corev1.EnvVar{Name: "DYN_SYSTEM_PORT", Value: "70000"}, want: SystemPort},
		"held by the nixl port": {env: corev1.EnvVar{Name: "DYN_SYSTEM_PORT", Value: "19090"}, want: SystemPort},
		"from a Secret":         {env: corev1.EnvVar{Name: "DYN_SYSTEM_PORT", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{Key: "k"}}}, want: SystemPort},
		"another variable":      {env: corev1.EnvVar{Name: "DYN_HTTP_PORT", Value: "8081"}, want: SystemPort},
	} {
		t.Run(name, func(t *testing.T) {
			dcd := builders.MakeGraphComponent("g", "Worker", "ns", builders.MakeService().Type(v1alpha1.ComponentTypeWorker).Image(testImage).
				ContainerEnv([]corev1.EnvVar{c.env})).Obj()
			_, main := mustDeploy(t, dcd, nil, Options{})
			var got []int32
			for _, p := range main.Ports {
				if p.Name == SystemPortName {
					got = append(got, p.ContainerPort)
				}
			}
			if diff := cmp.Diff([]int32{c.want}, got); diff != "" {
				t.Errorf("system ports (-want +got):\n%s", diff)
			}
			if port := main.ReadinessProbe.HTTPGet.Port.String(); port != SystemPortName {
				t.Errorf("the readiness probe names port %s, want %s", port, SystemPortName)
			}
		})
	}
}
