package render

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/probes"
)

// Options are the operator-wide settings rendered into every component.
type Options struct {
	// NATSAddr is the operator's --natsAddr, given to pods as NATS_SERVER
	// when non-empty.
	NATSAddr string
	// EtcdAddr is the operator's --etcdAddr, given to pods as ETCD_ENDPOINTS
	// when non-empty.
	EtcdAddr string
	// TopologyLevels are the topology levels a topologyConstraint may name
	// (packDomain), broadest first, each with the node label of its
	// domains: the operator's --topology-domain-labels.
	TopologyLevels []TopologyLevel
}

// Volume and mount names the operator generates.
const (
	sharedMemoryVolumeName = "shared-memory"
	sharedMemoryMountPath  = "/dev/shm"
	pvcMountRoot           = "/mnt/"
)

// defaultSharedMemorySize is /dev/shm's size when the service does not set
// one; backends use it for NCCL and tensor transfer, far beyond Docker's 64Mi.
var defaultSharedMemorySize = resource.MustParse("8Gi")

// graphName is the graph a component belongs to, or the component itself
// when it stands alone.
func graphName(dcd *v1alpha1.DynamoComponentDeployment) string {
	if g := dcd.Labels[LabelGraphName]; g != "" {
		return g
	}
	return dcd.Name
}

// serviceName is the component's logical name in the Dynamo runtime.
func serviceName(dcd *v1alpha1.DynamoComponentDeployment) string {
	if dcd.Spec.ServiceName != "" {
		return dcd.Spec.ServiceName
	}
	return dcd.Name
}

// runtimeEnv is the environment the Dynamo runtime of every container of the
// component reads, sorted by name as Dynamo's operator renders it; users'
// envs come after it and win.
func runtimeEnv(dcd *v1alpha1.DynamoComponentDeployment, o Options) []corev1.EnvVar {
	graph := graphName(dcd)
	dynNamespace := dynamoNamespace(dcd)
	env := []corev1.EnvVar{
		{Name: "DYN_NAMESPACE", Value: dynNamespace},
		{Name: "DYN_SYSTEM_ENABLED", Value: "true"},
		{Name: "DYN_SYSTEM_PORT", Value: strconv.Itoa(SystemPort)},
		{Name: "DYN_PARENT_DGD_K8S_NAME", Value: graph},
		{Name: "DYN_PARENT_DGD_K8S_NAMESPACE", Value: dcd.Namespace},
		// The runtime names its discovery records and metrics after its pod.
		fieldEnv("POD_NAME", "metadata.name"),
		fieldEnv("POD_NAMESPACE", "metadata.namespace"),
		fieldEnv("POD_UID", "metadata.uid"),
	}
	// DYN_COMPONENT is the component type, as upstream renders it; the
	// service's own name is in the pod's labels.
	if t := dcd.Spec.ComponentType; t != "" {
		env = append(env, corev1.EnvVar{Name: "DYN_COMPONENT", Value: string(t)})
	}
	if discoveryBackend(dcd) == DiscoveryKubernetes {
		env = append(env, corev1.EnvVar{Name: "DYN_DISCOVERY_BACKEND", Value: DiscoveryKubernetes})
	}
	if o.NATSAddr != "" {
		env = append(env, corev1.EnvVar{Name: "NATS_SERVER", Value: o.NATSAddr})
	}
	if o.EtcdAddr != "" {
		env = append(env, corev1.EnvVar{Name: "ETCD_ENDPOINTS", Value: o.EtcdAddr})
	}
	if n := nodeCount(dcd); n > 1 {
		env = append(env, corev1.EnvVar{Name: "DYN_MULTINODE_NODE_COUNT", Value: strconv.Itoa(int(n))})
	}
	if c := specContract(&dcd.Spec.DynamoComponentDeploymentSharedSpec); c.env != nil {
		env = append(env, c.env(contractContext{
			dynamoNamespace: dynNamespace,
			workerHash:      dcd.Labels[LabelWorkerHash],
		})...)
	}
	slices.SortStableFunc(env, func(a, b corev1.EnvVar) int { return strings.Compare(a.Name, b.Name) })
	return env
}

func fieldEnv(name, path string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{
		FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: path},
	}}
}

// nodeCount is the number of nodes one instance of the component spans.
func nodeCount(dcd *v1alpha1.DynamoComponentDeployment) int32 {
	if m := dcd.Spec.Multinode; m != nil && m.NodeCount > 1 {
		return m.NodeCount
	}
	return 1
}

// containerPorts are the ports of the main container: the OpenAI HTTP port
// first on a frontend, the runtime's system port everywhere, then those of
// the component type's contract (nixl on workers, metrics on the planner,
// gRPC on a configured endpoint picker).
func containerPorts(spec *v1alpha1.DynamoComponentDeploymentSharedSpec) []corev1.ContainerPort {
	c := specContract(spec)
	var ports []corev1.ContainerPort
	if c.httpPort {
		ports = append(ports, httpContainerPort())
	}
	ports = append(ports, corev1.ContainerPort{Name: SystemPortName, ContainerPort: SystemPort, Protocol: corev1.ProtocolTCP})
	return append(ports, c.ports...)
}

// followSystemPort moves main's "system" port to the DYN_SYSTEM_PORT its
// env sets, where the runtime serves its system server: Dynamo's OpenEngine
// sidecars run on 8081. The probes, the Services and the model endpoints
// name that port, so they follow. A value that is no port, or one another
// port of main holds, leaves it alone.
func followSystemPort(main *corev1.Container) {
	if main == nil {
		return
	}
	var value string
	for _, e := range main.Env {
		if e.Name == "DYN_SYSTEM_PORT" && e.ValueFrom == nil {
			value = e.Value
		}
	}
	port, err := strconv.Atoi(value)
	if err != nil || port < 1 || port > 65535 || port == SystemPort {
		return
	}
	system := -1
	for i, p := range main.Ports {
		switch {
		case p.Name == SystemPortName:
			system = i
		case p.ContainerPort == int32(port):
			return
		}
	}
	if system >= 0 && main.Ports[system].ContainerPort == SystemPort {
		main.Ports[system].ContainerPort = int32(port)
	}
}

func httpContainerPort() corev1.ContainerPort {
	return corev1.ContainerPort{Name: HTTPPortName, ContainerPort: HTTPPort, Protocol: corev1.ProtocolTCP}
}

func secretEnvFrom(secret *string) []corev1.EnvFromSource {
	if secret == nil || *secret == "" {
		return nil
	}
	return []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: *secret},
	}}}
}

// resourceRequirements turns Dynamo's short resource form into the main
// container's requirements. A GPU count is applied as both the limit and the
// request of its GPU type, as Kubernetes requires for extended resources.
func resourceRequirements(res *v1alpha1.Resources, path *field.Path) (corev1.ResourceRequirements, field.ErrorList) {
	var out corev1.ResourceRequirements
	if res == nil {
		return out, nil
	}
	var errs field.ErrorList
	requests, reqErrs := resourceList(res.Requests, path.Child("requests"))
	limits, limErrs := resourceList(res.Limits, path.Child("limits"))
	errs = append(append(errs, reqErrs...), limErrs...)

	limitGPUs, limitSet, err := gpuCount(res.Limits, path.Child("limits", "gpu"))
	if err != nil {
		errs = append(errs, err)
	}
	requestGPUs, requestSet, err := gpuCount(res.Requests, path.Child("requests", "gpu"))
	if err != nil {
		errs = append(errs, err)
	}
	gpus, side := limitGPUs, res.Limits
	if !limitSet && requestSet {
		gpus, side = requestGPUs, res.Requests
	}
	if gpus > 0 {
		gpuType := corev1.ResourceName(v1alpha1.DefaultGPUType)
		if side.GPUType != "" {
			gpuType = corev1.ResourceName(side.GPUType)
		}
		if limits == nil {
			limits = corev1.ResourceList{}
		}
		if requests == nil {
			requests = corev1.ResourceList{}
		}
		limits[gpuType] = *resource.NewQuantity(gpus, resource.DecimalSI)
		requests[gpuType] = *resource.NewQuantity(gpus, resource.DecimalSI)
	}
	out.Requests, out.Limits = requests, limits
	for _, c := range res.Claims {
		out.Claims = append(out.Claims, *c.DeepCopy())
	}
	return out, errs
}

// resourceList parses one side of the short form. Custom entries go first so
// that the named cpu and memory fields win over a custom entry of that name.
func resourceList(item *v1alpha1.ResourceItem, path *field.Path) (corev1.ResourceList, field.ErrorList) {
	if item == nil {
		return nil, nil
	}
	var errs field.ErrorList
	list := corev1.ResourceList{}
	set := func(name corev1.ResourceName, value string, p *field.Path) {
		if value == "" {
			return
		}
		q, err := resource.ParseQuantity(value)
		if err != nil {
			errs = append(errs, field.Invalid(p, value, err.Error()))
			return
		}
		list[name] = q
	}
	for _, name := range slices.Sorted(maps.Keys(item.Custom)) {
		set(corev1.ResourceName(name), item.Custom[name], path.Child("custom").Key(name))
	}
	set(corev1.ResourceCPU, item.CPU, path.Child("cpu"))
	set(corev1.ResourceMemory, item.Memory, path.Child("memory"))
	if len(list) == 0 {
		return nil, errs
	}
	return list, errs
}

// gpuCount parses a side's GPU count; set reports whether the side has one.
func gpuCount(item *v1alpha1.ResourceItem, path *field.Path) (count int64, set bool, err *field.Error) {
	if item == nil || item.GPU == "" {
		return 0, false, nil
	}
	// ParseUint rejects signs and fractions; 31 bits keeps the count an int32.
	n, perr := strconv.ParseUint(item.GPU, 10, 31)
	if perr != nil {
		return 0, true, field.Invalid(path, item.GPU, "must be a non-negative integer")
	}
	return int64(n), true, nil
}

// podStorage returns the volumes of the pod and the mounts of the main
// container: /dev/shm, the graph's claims named by volumeMounts, and the
// older per-service pvc.
func podStorage(spec *v1alpha1.DynamoComponentDeploymentSharedSpec, graphPVCs []v1alpha1.GraphPVC,
	path *field.Path) ([]corev1.Volume, []corev1.VolumeMount, field.ErrorList) {
	var st podVolumes
	if shm := spec.SharedMemory; shm == nil || !shm.Disabled {
		size := defaultSharedMemorySize.DeepCopy()
		if shm != nil && shm.Size != nil {
			size = shm.Size.DeepCopy()
		}
		st.add(corev1.Volume{Name: sharedMemoryVolumeName, VolumeSource: corev1.VolumeSource{
			EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: &size},
		}}, corev1.VolumeMount{Name: sharedMemoryVolumeName, MountPath: sharedMemoryMountPath})
	}
	errs := st.addGraphClaims(spec.VolumeMounts, graphPVCs, path.Child("volumeMounts"))
	if pvc := spec.PVC; pvc != nil && pvc.Name != nil && *pvc.Name != "" {
		mountPath := pvcMountRoot + *pvc.Name
		if pvc.MountPath != nil && *pvc.MountPath != "" {
			mountPath = *pvc.MountPath
		}
		st.add(claimVolume(*pvc.Name), corev1.VolumeMount{Name: *pvc.Name, MountPath: mountPath})
	}
	return st.volumes, st.mounts, errs
}

// podVolumes gathers a pod's volumes and its main container's mounts, each
// once.
type podVolumes struct {
	volumes []corev1.Volume
	mounts  []corev1.VolumeMount
}

// add adds volume v, unless one of its name is there, and mount m, unless
// it is there.
func (st *podVolumes) add(v corev1.Volume, m corev1.VolumeMount) {
	if !slices.ContainsFunc(st.volumes, func(have corev1.Volume) bool { return have.Name == v.Name }) {
		st.volumes = append(st.volumes, v)
	}
	if !slices.ContainsFunc(st.mounts, func(have corev1.VolumeMount) bool { return reflect.DeepEqual(have, m) }) {
		st.mounts = append(st.mounts, m)
	}
}

// addGraphClaims mounts the graph's claims the service's volumeMounts name;
// the errors name those the graph's spec.pvcs lack.
func (st *podVolumes) addGraphClaims(volumeMounts []v1alpha1.VolumeMount, graphPVCs []v1alpha1.GraphPVC, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	known := make(map[string]bool, len(graphPVCs))
	for _, p := range graphPVCs {
		known[p.Name] = true
	}
	for i, vm := range volumeMounts {
		if !known[vm.Name] {
			errs = append(errs, field.Invalid(path.Index(i).Child("name"), vm.Name, "not found in the graph's spec.pvcs"))
			continue
		}
		mountPath := vm.MountPoint
		if mountPath == "" {
			mountPath = pvcMountRoot + vm.Name
		}
		st.add(claimVolume(vm.Name), corev1.VolumeMount{Name: vm.Name, MountPath: mountPath})
	}
	return errs
}

// claimVolume is a volume of the claim of that name.
func claimVolume(claim string) corev1.Volume {
	return corev1.Volume{Name: claim, VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim},
	}}
}

// sidecarContainer runs a frontend next to the main container. It shares the
// runtime env so it joins the same Dynamo namespace, except the system
// server's: both containers share the pod's network, and the main container
// already listens on the system port.
func sidecarContainer(s *v1alpha1.FrontendSidecar, env []corev1.EnvVar) corev1.Container {
	var sidecarEnv []corev1.EnvVar
	for _, e := range env {
		if e.Name != "DYN_SYSTEM_ENABLED" && e.Name != "DYN_SYSTEM_PORT" {
			sidecarEnv = append(sidecarEnv, e)
		}
	}
	return corev1.Container{
		Name:    SidecarContainerName,
		Image:   s.Image,
		Command: append([]string(nil), s.Command...),
		Args:    append([]string(nil), s.Args...),
		Env:     MergeEnv(sidecarEnv, s.Envs),
		EnvFrom: secretEnvFrom(s.EnvFromSecret),
		Ports:   []corev1.ContainerPort{httpContainerPort()},
	}
}

// mergeExtraPodSpec merges the user's extraPodSpec into the generated pod
// with Kubernetes' strategic merge, as kubectl would patch it: lists with a
// merge key (containers, volumes, ports, volume mounts, resource claims) are
// merged by key, maps by key, scalars replaced.
//
// Three lists of the main container are merged here instead, because the
// strategic merge would do it wrongly: env (it merges an entry's fields, so a
// user's valueFrom would sit next to a generated value, and the order would
// depend on the patch), envFrom and resources.claims (no merge key: the
// user's list would drop the generated entries). So are the probes (see
// probes.Overlay): the strategic merge would put a user's exec next to the
// default httpGet, a probe with two handlers.
func mergeExtraPodSpec(pod corev1.PodSpec, extra *v1alpha1.ExtraPodSpec, path *field.Path) (corev1.PodSpec, *field.Error) {
	if extra == nil || (extra.PodSpec == nil && extra.MainContainer == nil) {
		return pod, nil
	}
	patch := corev1.PodSpec{}
	if extra.PodSpec != nil {
		patch = *extra.PodSpec.DeepCopy()
	}
	if extra.MainContainer != nil {
		user := extra.MainContainer.DeepCopy()
		user.Name = MainContainerName
		if main := findContainer(pod.Containers, MainContainerName); main != nil {
			main.Env = MergeEnv(main.Env, user.Env)
			main.EnvFrom = appendEnvFrom(main.EnvFrom, user.EnvFrom)
			main.Resources.Claims = mergeClaims(main.Resources.Claims, user.Resources.Claims)
			main.StartupProbe = probes.Overlay(main.StartupProbe, user.StartupProbe)
			main.LivenessProbe = probes.Overlay(main.LivenessProbe, user.LivenessProbe)
			main.ReadinessProbe = probes.Overlay(main.ReadinessProbe, user.ReadinessProbe)
			user.Env, user.EnvFrom, user.Resources.Claims = nil, nil, nil
			user.StartupProbe, user.LivenessProbe, user.ReadinessProbe = nil, nil, nil
		}
		patch.Containers = append(patch.Containers, *user)
	}

	patchJSON, err := patchWithoutNulls(patch)
	if err != nil {
		return pod, field.InternalError(path, err)
	}
	out, err := patchPodSpec(pod, patchJSON)
	if err != nil {
		return pod, field.Invalid(path, field.OmitValueType{}, fmt.Sprintf("cannot be merged into the generated pod: %v", err))
	}
	return out, nil
}

// patchPodSpec applies a strategic merge patch to pod, keeping the generated
// elements of merged lists first (see generatedFirst).
func patchPodSpec(pod corev1.PodSpec, patch []byte) (corev1.PodSpec, error) {
	original, err := json.Marshal(pod)
	if err != nil {
		return pod, err
	}
	mergedJSON, err := strategicpatch.StrategicMergePatch(original, patch, corev1.PodSpec{})
	if err != nil {
		return pod, err
	}
	var out corev1.PodSpec
	if err := json.Unmarshal(mergedJSON, &out); err != nil {
		return pod, err
	}
	out.Containers = generatedFirst(out.Containers, pod.Containers, containerName)
	out.Volumes = generatedFirst(out.Volumes, pod.Volumes, func(v corev1.Volume) string { return v.Name })
	for _, generated := range pod.Containers {
		c := findContainer(out.Containers, generated.Name)
		if c == nil {
			continue
		}
		c.Env = generatedFirst(c.Env, generated.Env, func(e corev1.EnvVar) string { return e.Name })
		c.Ports = generatedFirst(c.Ports, generated.Ports, func(p corev1.ContainerPort) int32 { return p.ContainerPort })
		c.VolumeMounts = generatedFirst(c.VolumeMounts, generated.VolumeMounts, func(m corev1.VolumeMount) string { return m.MountPath })
	}
	return out, nil
}

// generatedFirst orders a merged list as generated elements first, in their
// generated order, then the user's additions in the merge's order. The
// strategic merge puts a patch's new elements first, which would make a
// user's extra container the pod's first one, the one kubectl logs and exec
// pick by default.
func generatedFirst[T any, K comparable](merged, generated []T, key func(T) K) []T {
	rank := make(map[K]int, len(generated))
	for i, g := range generated {
		if _, seen := rank[key(g)]; !seen {
			rank[key(g)] = i
		}
	}
	rankOf := func(e T) int {
		if r, ok := rank[key(e)]; ok {
			return r
		}
		return len(generated)
	}
	slices.SortStableFunc(merged, func(a, b T) int { return rankOf(a) - rankOf(b) })
	return merged
}

func containerName(c corev1.Container) string { return c.Name }

// patchWithoutNulls marshals a typed patch without its null values. A typed
// struct marshals unset fields without omitempty as null (PodSpec's
// containers), which a strategic merge patch reads as "delete this field".
func patchWithoutNulls(patch any) ([]byte, error) {
	raw, err := json.Marshal(patch)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	dropNulls(m)
	return json.Marshal(m)
}

func dropNulls(v any) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if e == nil {
				delete(v, k)
				continue
			}
			dropNulls(e)
		}
	case []any:
		for _, e := range v {
			dropNulls(e)
		}
	}
}

func findContainer(containers []corev1.Container, name string) *corev1.Container {
	for i := range containers {
		if containers[i].Name == name {
			return &containers[i]
		}
	}
	return nil
}

// appendEnvFrom appends the user's sources after the generated ones, so the
// user's win on a shared key, skipping exact repeats.
func appendEnvFrom(base, user []corev1.EnvFromSource) []corev1.EnvFromSource {
	out := base
	for _, u := range user {
		repeated := false
		for _, have := range out {
			if reflect.DeepEqual(have, u) {
				repeated = true
				break
			}
		}
		if !repeated {
			out = append(out, u)
		}
	}
	return out
}

// mergeClaims replaces a claim of the same name in place, or appends it.
func mergeClaims(base, user []corev1.ResourceClaim) []corev1.ResourceClaim {
	out := base
	for _, u := range user {
		replaced := false
		for i := range out {
			if out[i].Name == u.Name {
				out[i], replaced = u, true
				break
			}
		}
		if !replaced {
			out = append(out, u)
		}
	}
	return out
}
