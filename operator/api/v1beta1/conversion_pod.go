package v1beta1

import (
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/probes"
)

// FrontendSidecarContainerName is the container v1alpha1's frontendSidecar
// renders as, and the name a v1beta1 frontendSidecar must give for the
// operator to render its defaults into that container. It is the
// renderer's SidecarContainerName (a test of package render checks they
// agree).
const FrontendSidecarContainerName = "frontend-sidecar"

// pvcMountRoot is where a v1alpha1 volumeMount without mountPoint is
// mounted, as the renderer does.
const pvcMountRoot = "/mnt/"

// hasPodFields reports whether a v1alpha1 service has anything that lives
// in v1beta1's podTemplate.
func hasPodFields(s *v1alpha1.DynamoComponentDeploymentSharedSpec) bool {
	return s.Resources != nil || len(s.Envs) > 0 || s.EnvFromSecret != nil ||
		s.LivenessProbe != nil || s.ReadinessProbe != nil || s.ExtraPodSpec != nil ||
		s.ExtraPodMetadata != nil || s.FrontendSidecar != nil || len(pvcMounts(s.VolumeMounts)) > 0
}

// hasMainFields reports whether a v1alpha1 service has anything of the main
// container.
func hasMainFields(s *v1alpha1.DynamoComponentDeploymentSharedSpec) bool {
	return s.Resources != nil || len(s.Envs) > 0 || s.EnvFromSecret != nil ||
		s.LivenessProbe != nil || s.ReadinessProbe != nil ||
		(s.ExtraPodSpec != nil && s.ExtraPodSpec.MainContainer != nil) || len(pvcMounts(s.VolumeMounts)) > 0
}

// pvcMounts are the volumeMounts that are not the compilation cache (the
// first one flagged useAsCompilationCache, which is compilationCache).
func pvcMounts(mounts []v1alpha1.VolumeMount) []v1alpha1.VolumeMount {
	var out []v1alpha1.VolumeMount
	cache := false
	for _, m := range mounts {
		if m.UseAsCompilationCache && !cache {
			cache = true
			continue
		}
		out = append(out, m)
	}
	return out
}

// podTemplateUp lays a v1alpha1 service's pod fields out as the pod
// template they render: extraPodSpec and extraPodMetadata as they are, the
// main container from mainContainer with the service's fields merged in the
// renderer's order, the claims of volumeMounts as volumes, the frontend
// sidecar as its container.
func podTemplateUp(s *v1alpha1.DynamoComponentDeploymentSharedSpec) *corev1.PodTemplateSpec {
	if !hasPodFields(s) {
		return nil
	}
	pt := &corev1.PodTemplateSpec{}
	if m := s.ExtraPodMetadata; m != nil {
		pt.Labels, pt.Annotations = maps.Clone(m.Labels), maps.Clone(m.Annotations)
	}
	var extra []corev1.Container
	if s.ExtraPodSpec != nil && s.ExtraPodSpec.PodSpec != nil {
		pt.Spec = *s.ExtraPodSpec.PodSpec.DeepCopy()
		extra, pt.Spec.Containers = pt.Spec.Containers, nil
	}
	if hasMainFields(s) {
		pt.Spec.Containers = append(pt.Spec.Containers, mainContainerUp(s))
	}
	for _, m := range pvcMounts(s.VolumeMounts) {
		if !slices.ContainsFunc(pt.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == m.Name }) {
			pt.Spec.Volumes = append(pt.Spec.Volumes, corev1.Volume{Name: m.Name, VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: m.Name},
			}})
		}
	}
	if s.FrontendSidecar != nil {
		extra = sidecarUp(s.FrontendSidecar, extra)
	}
	pt.Spec.Containers = append(pt.Spec.Containers, extra...)
	return pt
}

// mainContainerUp is mainContainer with the service's fields merged as the
// renderer merges them: envs under mainContainer.env, envFromSecret before
// mainContainer.envFrom, the short resources under mainContainer's, the
// service's probes under mainContainer's, the volumeMounts' mounts after.
func mainContainerUp(s *v1alpha1.DynamoComponentDeploymentSharedSpec) corev1.Container {
	main := corev1.Container{}
	if s.ExtraPodSpec != nil && s.ExtraPodSpec.MainContainer != nil {
		main = *s.ExtraPodSpec.MainContainer.DeepCopy()
	}
	main.Name = MainContainerName
	main.Env = mergeEnv(s.Envs, main.Env)
	main.EnvFrom = appendEnvFrom(secretEnvFrom(s.EnvFromSecret), main.EnvFrom)
	main.Resources = mergeResources(toNative(s.Resources), main.Resources)
	main.LivenessProbe = probes.Overlay(s.LivenessProbe, main.LivenessProbe)
	main.ReadinessProbe = probes.Overlay(s.ReadinessProbe, main.ReadinessProbe)
	for _, m := range pvcMounts(s.VolumeMounts) {
		path := m.MountPoint
		if path == "" {
			path = pvcMountRoot + m.Name
		}
		if !slices.ContainsFunc(main.VolumeMounts, func(v corev1.VolumeMount) bool { return v.MountPath == path }) {
			main.VolumeMounts = append(main.VolumeMounts, corev1.VolumeMount{Name: m.Name, MountPath: path})
		}
	}
	return main
}

// sidecarUp adds the frontend sidecar's container to the other containers:
// the sidecar's fields, with those of a container of extraPodSpec of the
// same name over them (the renderer merges that one into the sidecar).
func sidecarUp(fs *v1alpha1.FrontendSidecar, extra []corev1.Container) []corev1.Container {
	c := corev1.Container{
		Name:    FrontendSidecarContainerName,
		Image:   fs.Image,
		Command: slices.Clone(fs.Command),
		Args:    slices.Clone(fs.Args),
		Env:     slices.Clone(fs.Envs),
		EnvFrom: secretEnvFrom(fs.EnvFromSecret),
	}
	i := slices.IndexFunc(extra, func(e corev1.Container) bool { return e.Name == FrontendSidecarContainerName })
	if i < 0 {
		return append(extra, c)
	}
	extra[i] = overlayContainer(c, extra[i])
	return extra
}

// overlayContainer lays the fields user set over base: the strategic merge
// of two containers as far as the frontend sidecar's fields go (scalars and
// lists replaced).
func overlayContainer(base, user corev1.Container) corev1.Container {
	out := *base.DeepCopy()
	raw, err := json.Marshal(user)
	if err == nil {
		err = json.Unmarshal(raw, &out)
	}
	if err != nil {
		return user
	}
	return out
}

// podTemplateDown splits a v1beta1 pod template into the v1alpha1 fields
// that render it: the main container's env, first envFrom secret,
// resources and probes into the service's own fields, the rest of it into
// mainContainer, the frontend sidecar's container into frontendSidecar, and
// the rest of the pod into extraPodSpec and extraPodMetadata.
func podTemplateDown(pt *corev1.PodTemplateSpec, sidecar *string, dst *v1alpha1.DynamoComponentDeploymentSharedSpec) {
	if pt == nil {
		return
	}
	if len(pt.Labels) > 0 || len(pt.Annotations) > 0 {
		dst.ExtraPodMetadata = &v1alpha1.ExtraPodMetadata{
			Labels: maps.Clone(pt.Labels), Annotations: maps.Clone(pt.Annotations),
		}
	}
	spec := pt.Spec.DeepCopy()
	var main *corev1.Container
	others := make([]corev1.Container, 0, len(spec.Containers))
	for i := range spec.Containers {
		if spec.Containers[i].Name == MainContainerName && main == nil {
			main = &spec.Containers[i]
			continue
		}
		others = append(others, spec.Containers[i])
	}
	if sidecar != nil && *sidecar == FrontendSidecarContainerName {
		dst.FrontendSidecar, others = sidecarDown(others)
	}
	spec.Containers = nil
	if len(others) > 0 {
		spec.Containers = others
	}
	eps := &v1alpha1.ExtraPodSpec{}
	if main != nil {
		eps.MainContainer = mainContainerDown(*main, dst)
	}
	if !apiequality.Semantic.DeepEqual(*spec, corev1.PodSpec{}) {
		eps.PodSpec = spec
	}
	if eps.PodSpec != nil || eps.MainContainer != nil {
		dst.ExtraPodSpec = eps
	}
}

// mainContainerDown moves the main container's env, envFrom secret,
// resources and probes into the service's fields, and returns the rest.
func mainContainerDown(main corev1.Container, dst *v1alpha1.DynamoComponentDeploymentSharedSpec) *corev1.Container {
	dst.Envs, main.Env = main.Env, nil
	if len(main.EnvFrom) > 0 {
		if name, ok := plainSecret(main.EnvFrom[0]); ok {
			dst.EnvFromSecret = &name
			main.EnvFrom = main.EnvFrom[1:]
		}
	}
	if len(main.EnvFrom) == 0 {
		main.EnvFrom = nil
	}
	// Claims stay in mainContainer, where Dynamo's manifests write them.
	claims := main.Resources.Claims
	main.Resources.Claims = nil
	dst.Resources, main.Resources = fromNative(main.Resources), corev1.ResourceRequirements{Claims: claims}
	dst.LivenessProbe, main.LivenessProbe = main.LivenessProbe, nil
	dst.ReadinessProbe, main.ReadinessProbe = main.ReadinessProbe, nil
	main.Name = ""
	return &main
}

// sidecarDown takes the frontend sidecar's container out of the others:
// the fields frontendSidecar has, and what else the container sets as a
// container left among the others under its name.
func sidecarDown(others []corev1.Container) (*v1alpha1.FrontendSidecar, []corev1.Container) {
	i := slices.IndexFunc(others, func(c corev1.Container) bool { return c.Name == FrontendSidecarContainerName })
	if i < 0 {
		return nil, others
	}
	c := others[i]
	fs := &v1alpha1.FrontendSidecar{Image: c.Image, Command: c.Command, Args: c.Args, Envs: c.Env}
	c.Image, c.Command, c.Args, c.Env = "", nil, nil, nil
	if len(c.EnvFrom) == 1 {
		if name, ok := plainSecret(c.EnvFrom[0]); ok {
			fs.EnvFromSecret, c.EnvFrom = &name, nil
		}
	}
	if apiequality.Semantic.DeepEqual(c, corev1.Container{Name: c.Name}) {
		return fs, slices.Delete(others, i, i+1)
	}
	others[i] = c
	return fs, others
}

// plainSecret reports whether an envFrom entry is what envFromSecret
// renders: a whole Secret by name, without prefix or optional.
func plainSecret(e corev1.EnvFromSource) (string, bool) {
	if e.SecretRef == nil || e.ConfigMapRef != nil || e.Prefix != "" || e.SecretRef.Optional != nil || e.SecretRef.Name == "" {
		return "", false
	}
	return e.SecretRef.Name, true
}

func secretEnvFrom(secret *string) []corev1.EnvFromSource {
	if secret == nil || *secret == "" {
		return nil
	}
	return []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: *secret},
	}}}
}

// mergeEnv is base with each variable of override replacing the one of the
// same name in place, or appended: the renderer's env precedence.
func mergeEnv(base, override []corev1.EnvVar) []corev1.EnvVar {
	var out []corev1.EnvVar
	index := map[string]int{}
	for _, e := range slices.Concat(base, override) {
		if i, ok := index[e.Name]; ok {
			out[i] = *e.DeepCopy()
			continue
		}
		index[e.Name] = len(out)
		out = append(out, *e.DeepCopy())
	}
	return out
}

// appendEnvFrom appends the user's sources after base, skipping exact
// repeats, as the renderer does.
func appendEnvFrom(base, user []corev1.EnvFromSource) []corev1.EnvFromSource {
	out := base
	for _, u := range user {
		if !slices.ContainsFunc(out, func(have corev1.EnvFromSource) bool { return reflect.DeepEqual(have, u) }) {
			out = append(out, *u.DeepCopy())
		}
	}
	return out
}

// toNative is the short resource form as Kubernetes requirements, each
// side as written: a GPU count is a resource of its gpuType (nvidia.com/gpu
// by default) on the side that names it. Values that do not parse are left
// out (the webhook rejects them; the saved part keeps them).
func toNative(r *v1alpha1.Resources) corev1.ResourceRequirements {
	if r == nil {
		return corev1.ResourceRequirements{}
	}
	return corev1.ResourceRequirements{
		Requests: itemToList(r.Requests),
		Limits:   itemToList(r.Limits),
		Claims:   slices.Clone(r.Claims),
	}
}

func itemToList(item *v1alpha1.ResourceItem) corev1.ResourceList {
	if item == nil {
		return nil
	}
	out := corev1.ResourceList{}
	set := func(name, value string) {
		if q, err := resource.ParseQuantity(value); err == nil && value != "" {
			out[corev1.ResourceName(name)] = q
		}
	}
	for _, name := range sortedKeys(item.Custom) {
		set(name, item.Custom[name])
	}
	set(string(corev1.ResourceCPU), item.CPU)
	set(string(corev1.ResourceMemory), item.Memory)
	if item.GPU != "" {
		set(gpuTypeOf(item), item.GPU)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func gpuTypeOf(item *v1alpha1.ResourceItem) string {
	if item.GPUType != "" {
		return item.GPUType
	}
	return v1alpha1.DefaultGPUType
}

// mergeResources lays user's requirements over base: the lists merged by
// resource name, claims by name, user's winning, as the strategic merge of
// mainContainer does.
func mergeResources(base, user corev1.ResourceRequirements) corev1.ResourceRequirements {
	out := *base.DeepCopy()
	out.Limits = mergeList(out.Limits, user.Limits)
	out.Requests = mergeList(out.Requests, user.Requests)
	for _, c := range user.Claims {
		if i := slices.IndexFunc(out.Claims, func(have corev1.ResourceClaim) bool { return have.Name == c.Name }); i >= 0 {
			out.Claims[i] = c
		} else {
			out.Claims = append(out.Claims, c)
		}
	}
	return out
}

func mergeList(base, user corev1.ResourceList) corev1.ResourceList {
	if len(user) == 0 {
		return base
	}
	out := base.DeepCopy()
	if out == nil {
		out = corev1.ResourceList{}
	}
	for k, v := range user {
		out[k] = v.DeepCopy()
	}
	return out
}

// fromNative is the short form of Kubernetes requirements: cpu and memory
// by name, the limit of one GPU resource (nvidia.com/gpu first, else the
// first resource named like a GPU, see isGPU) as gpu and gpuType when it is a whole
// positive count (the renderer applies a GPU count as both limit and
// request, so a request is a GPU count only where it equals the limit),
// every other resource as custom. Each value comes back as it parses, so
// the renderer sees the same numbers.
func fromNative(rr corev1.ResourceRequirements) *v1alpha1.Resources {
	gpu, n := gpuLimit(rr.Limits)
	out := &v1alpha1.Resources{
		Limits:   listToItem(rr.Limits, gpu, n),
		Requests: listToItem(rr.Requests, gpu, n),
		Claims:   slices.Clone(rr.Claims),
	}
	if out.Limits == nil && out.Requests == nil && len(out.Claims) == 0 {
		return nil
	}
	return out
}

// gpuLimit returns the resource a side's gpu stands for and its count, or
// "" when no limit is a whole positive GPU count.
func gpuLimit(limits corev1.ResourceList) (corev1.ResourceName, int64) {
	names := slices.Sorted(maps.Keys(limits))
	if i := slices.Index(names, corev1.ResourceName(v1alpha1.DefaultGPUType)); i > 0 {
		names[0], names[i] = names[i], names[0]
	}
	for _, name := range names {
		if !isGPU(name) {
			continue
		}
		if n, ok := wholeCount(limits[name]); ok {
			return name, n
		}
	}
	return "", 0
}

// isGPU reports whether a resource is named like a GPU: nvidia.com/gpu,
// amd.com/gpu, gpu.intel.com/i915, or a MIG slice (nvidia.com/mig-3g.40gb).
func isGPU(name corev1.ResourceName) bool {
	return strings.Contains(string(name), "gpu") || strings.HasPrefix(string(name), "nvidia.com/mig-")
}

// wholeCount is q as a GPU count the renderer takes: a positive integer
// that fits 31 bits.
func wholeCount(q resource.Quantity) (int64, bool) {
	n, ok := q.AsInt64()
	return n, ok && n > 0 && n < 1<<31
}

func listToItem(list corev1.ResourceList, gpu corev1.ResourceName, n int64) *v1alpha1.ResourceItem {
	if len(list) == 0 {
		return nil
	}
	item := &v1alpha1.ResourceItem{}
	for name, q := range list {
		switch {
		case name == corev1.ResourceCPU:
			item.CPU = q.String()
		case name == corev1.ResourceMemory:
			item.Memory = q.String()
		case name == gpu && q.Value() == n && q.CmpInt64(n) == 0:
			item.GPU = strconv.FormatInt(n, 10)
			if gpu != v1alpha1.DefaultGPUType {
				item.GPUType = string(gpu)
			}
		default:
			if item.Custom == nil {
				item.Custom = map[string]string{}
			}
			item.Custom[string(name)] = q.String()
		}
	}
	return item
}
