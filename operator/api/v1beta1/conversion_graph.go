package v1beta1

import (
	"encoding/json"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

type alphaGraph = v1alpha1.DynamoGraphDeployment

// graphUp is a v1alpha1 graph's spec as v1beta1's, without anything saved:
// the services as components sorted by name (a service without a spec has
// no component), envs as env.
func graphUp(a *alphaGraph) *DynamoGraphDeployment {
	b := &DynamoGraphDeployment{
		ObjectMeta: withoutConversionAnnotations(a.ObjectMeta),
		Spec: DynamoGraphDeploymentSpec{
			Annotations:      a.Spec.Annotations,
			Labels:           a.Spec.Labels,
			Env:              a.Spec.Envs,
			BackendFramework: string(a.Spec.BackendFramework),
			Restart:          restartUp(a.Spec.Restart),
		},
		Status: graphStatusUp(&a.Status),
	}
	if t := a.Spec.TopologyConstraint; t != nil {
		b.Spec.TopologyConstraint = &SpecTopologyConstraint{
			ClusterTopologyName: t.TopologyProfile, PackDomain: TopologyDomain(t.PackDomain)}
	}
	for _, name := range sortedKeys(a.Spec.Services) {
		if s := a.Spec.Services[name]; s != nil {
			c := componentUp(s)
			c.ComponentName = name
			b.Spec.Components = append(b.Spec.Components, c)
		}
	}
	return b.DeepCopy()
}

// graphDown is a v1beta1 graph's spec as v1alpha1's, without anything
// saved. A claim a compilationCache names is added to spec.pvcs, which the
// renderer mounts volumeMounts from.
func graphDown(b *DynamoGraphDeployment) (*alphaGraph, error) {
	a := &alphaGraph{
		ObjectMeta: withoutConversionAnnotations(b.ObjectMeta),
		Spec: v1alpha1.DynamoGraphDeploymentSpec{
			Annotations:      b.Spec.Annotations,
			Labels:           b.Spec.Labels,
			Envs:             b.Spec.Env,
			BackendFramework: v1alpha1.BackendFramework(b.Spec.BackendFramework),
			PVCs:             cachePVCs(b),
			Restart:          restartDown(b.Spec.Restart),
		},
		Status: graphStatusDown(&b.Status),
	}
	if t := b.Spec.TopologyConstraint; t != nil {
		a.Spec.TopologyConstraint = &v1alpha1.SpecTopologyConstraint{
			TopologyProfile: t.ClusterTopologyName, PackDomain: v1alpha1.TopologyDomain(t.PackDomain)}
	}
	for i := range b.Spec.Components {
		c := &b.Spec.Components[i]
		if _, dup := a.Spec.Services[c.ComponentName]; dup {
			return nil, fmt.Errorf("spec.components[%d]: duplicate name %q", i, c.ComponentName)
		}
		s := componentDown(c)
		if a.Spec.Services == nil {
			a.Spec.Services = map[string]*alphaService{}
		}
		a.Spec.Services[c.ComponentName] = &s
	}
	return a.DeepCopy(), nil
}

// cachePVCs are the claims the components' compilation caches name, once
// each, in order.
func cachePVCs(b *DynamoGraphDeployment) []v1alpha1.GraphPVC {
	var out []v1alpha1.GraphPVC
	for _, name := range cacheNames(b) {
		if !slices.ContainsFunc(out, func(p v1alpha1.GraphPVC) bool { return p.Name == name }) {
			out = append(out, v1alpha1.GraphPVC{Name: name})
		}
	}
	return out
}

func cacheNames(b *DynamoGraphDeployment) []string {
	var names []string
	for _, c := range b.Spec.Components {
		if c.CompilationCache != nil {
			names = append(names, c.CompilationCache.PVCName)
		}
	}
	return names
}

// alphaGraphParts are the fields of a v1alpha1 graph besides its services.
var alphaGraphParts = []part[alphaGraph, DynamoGraphDeployment]{
	alphaGraphField("dynamoComponent", func(a *alphaGraph) string { return a.Spec.DynamoComponent },
		func(a *alphaGraph, v string) { a.Spec.DynamoComponent = v }, nil),
	alphaGraphField("envs", func(a *alphaGraph) []corev1.EnvVar { return a.Spec.Envs },
		func(a *alphaGraph, v []corev1.EnvVar) { a.Spec.Envs = v },
		func(b *DynamoGraphDeployment) any { return b.Spec.Env }),
	alphaGraphField("backendFramework", func(a *alphaGraph) v1alpha1.BackendFramework { return a.Spec.BackendFramework },
		func(a *alphaGraph, v v1alpha1.BackendFramework) { a.Spec.BackendFramework = v },
		func(b *DynamoGraphDeployment) any { return b.Spec.BackendFramework }),
	alphaGraphField("annotations", func(a *alphaGraph) map[string]string { return a.Spec.Annotations },
		func(a *alphaGraph, v map[string]string) { a.Spec.Annotations = v },
		func(b *DynamoGraphDeployment) any { return b.Spec.Annotations }),
	alphaGraphField("labels", func(a *alphaGraph) map[string]string { return a.Spec.Labels },
		func(a *alphaGraph, v map[string]string) { a.Spec.Labels = v },
		func(b *DynamoGraphDeployment) any { return b.Spec.Labels }),
	withMerge(alphaGraphField("pvcs", func(a *alphaGraph) []v1alpha1.GraphPVC { return a.Spec.PVCs },
		func(a *alphaGraph, v []v1alpha1.GraphPVC) { a.Spec.PVCs = v },
		func(b *DynamoGraphDeployment) any { return cacheNames(b) }), mergePVCs),
	alphaGraphField("servicesWithoutSpec", servicesWithoutSpec, setServicesWithoutSpec, nil),
	alphaGraphField("topologyConstraint", func(a *alphaGraph) *v1alpha1.SpecTopologyConstraint { return a.Spec.TopologyConstraint },
		func(a *alphaGraph, v *v1alpha1.SpecTopologyConstraint) { a.Spec.TopologyConstraint = v },
		func(b *DynamoGraphDeployment) any { return b.Spec.TopologyConstraint }),
}

// mergePVCs keeps the saved claims once the compilation caches changed:
// v1beta1 has no claims, so no edit there removed one; a claim a new cache
// names is added after them.
func mergePVCs(a *alphaGraph, raw []byte) error {
	var saved []v1alpha1.GraphPVC
	if err := json.Unmarshal(raw, &saved); err != nil {
		return err
	}
	for _, p := range a.Spec.PVCs {
		if !slices.ContainsFunc(saved, func(s v1alpha1.GraphPVC) bool { return s.Name == p.Name }) {
			saved = append(saved, p)
		}
	}
	a.Spec.PVCs = saved
	return nil
}

// servicesWithoutSpec are the names of the services written without a
// spec (a null in the map), which have no component.
func servicesWithoutSpec(a *alphaGraph) []string {
	var names []string
	for _, name := range sortedKeys(a.Spec.Services) {
		if a.Spec.Services[name] == nil {
			names = append(names, name)
		}
	}
	return names
}

func setServicesWithoutSpec(a *alphaGraph, names []string) {
	for _, name := range names {
		if _, taken := a.Spec.Services[name]; taken {
			continue
		}
		if a.Spec.Services == nil {
			a.Spec.Services = map[string]*alphaService{}
		}
		a.Spec.Services[name] = nil
	}
}

// betaGraphParts are the fields of a v1beta1 graph besides its components.
var betaGraphParts = []part[DynamoGraphDeployment, alphaGraph]{
	betaGraphField("providerOverride", func(b *DynamoGraphDeployment) *ProviderOverride { return b.Spec.ProviderOverride },
		func(b *DynamoGraphDeployment, v *ProviderOverride) { b.Spec.ProviderOverride = v }, nil),
	betaGraphField("annotations", func(b *DynamoGraphDeployment) map[string]string { return b.Spec.Annotations },
		func(b *DynamoGraphDeployment, v map[string]string) { b.Spec.Annotations = v },
		func(a *alphaGraph) any { return a.Spec.Annotations }),
	betaGraphField("labels", func(b *DynamoGraphDeployment) map[string]string { return b.Spec.Labels },
		func(b *DynamoGraphDeployment, v map[string]string) { b.Spec.Labels = v },
		func(a *alphaGraph) any { return a.Spec.Labels }),
	betaGraphField("priorityClassName", func(b *DynamoGraphDeployment) string { return b.Spec.PriorityClassName },
		func(b *DynamoGraphDeployment, v string) { b.Spec.PriorityClassName = v }, nil),
	betaGraphField("env", func(b *DynamoGraphDeployment) []corev1.EnvVar { return b.Spec.Env },
		func(b *DynamoGraphDeployment, v []corev1.EnvVar) { b.Spec.Env = v },
		func(a *alphaGraph) any { return a.Spec.Envs }),
	betaGraphField("backendFramework", func(b *DynamoGraphDeployment) string { return b.Spec.BackendFramework },
		func(b *DynamoGraphDeployment, v string) { b.Spec.BackendFramework = v },
		func(a *alphaGraph) any { return a.Spec.BackendFramework }),
	// Both versions have restart now; a value saved here was written through
	// v1beta1 while v1alpha1 had no restart, and is shown until either
	// version sets one.
	betaGraphField("restart", func(b *DynamoGraphDeployment) *Restart { return b.Spec.Restart },
		setLegacyRestart, nil),
	betaGraphField("topologyConstraint", func(b *DynamoGraphDeployment) *SpecTopologyConstraint { return b.Spec.TopologyConstraint },
		func(b *DynamoGraphDeployment, v *SpecTopologyConstraint) { b.Spec.TopologyConstraint = v },
		func(a *alphaGraph) any { return a.Spec.TopologyConstraint }),
	betaGraphField("experimental", func(b *DynamoGraphDeployment) *DynamoGraphDeploymentExperimentalSpec { return b.Spec.Experimental },
		func(b *DynamoGraphDeployment, v *DynamoGraphDeploymentExperimentalSpec) { b.Spec.Experimental = v }, nil),
	betaGraphField("componentOrder", componentOrder, setComponentOrder, nil),
}

// setLegacyRestart restores a restart saved before v1alpha1 had the field,
// unless v1alpha1 holds one now.
func setLegacyRestart(b *DynamoGraphDeployment, v *Restart) {
	if b.Spec.Restart == nil {
		b.Spec.Restart = v
	}
}

// componentOrder is the names of the components in order; v1alpha1's map
// has none, and the conversion sorts them by name.
func componentOrder(b *DynamoGraphDeployment) []string {
	names := make([]string, 0, len(b.Spec.Components))
	for _, c := range b.Spec.Components {
		names = append(names, c.ComponentName)
	}
	return names
}

// setComponentOrder puts the components named in order first, in that
// order; services added in v1alpha1 since follow, by name.
func setComponentOrder(b *DynamoGraphDeployment, order []string) {
	rest := b.Spec.Components
	out := make([]DynamoComponentDeploymentSharedSpec, 0, len(rest))
	for _, name := range order {
		if i := slices.IndexFunc(rest, func(c DynamoComponentDeploymentSharedSpec) bool { return c.ComponentName == name }); i >= 0 {
			out = append(out, rest[i])
			rest = slices.Delete(rest, i, i+1)
		}
	}
	b.Spec.Components = append(out, rest...)
}

// alphaGraphServiceParts are a graph service's parts: the service's own,
// and serviceName, which in a graph only repeats the map key (v1beta1 has
// the key as the component's name, and nothing for serviceName).
var alphaGraphServiceParts = append(slices.Clone(alphaServiceParts),
	alphaField("serviceName", func(s *alphaService) string { return s.ServiceName },
		func(s *alphaService, v string) { s.ServiceName = v }, nil))

func alphaGraphField[T any](name string, get func(*alphaGraph) T, set func(*alphaGraph, T), of func(*DynamoGraphDeployment) any) part[alphaGraph, DynamoGraphDeployment] {
	return fieldPart(name, get, set, of)
}

func betaGraphField[T any](name string, get func(*DynamoGraphDeployment) T, set func(*DynamoGraphDeployment, T), of func(*alphaGraph) any) part[DynamoGraphDeployment, alphaGraph] {
	return fieldPart(name, get, set, of)
}

func withMerge[S, O any](p part[S, O], merge func(*S, []byte) error) part[S, O] {
	p.merge = merge
	return p
}

// componentByName returns the graph's component of that name, nil if none.
func componentByName(b *DynamoGraphDeployment, name string) *betaService {
	for i := range b.Spec.Components {
		if b.Spec.Components[i].ComponentName == name {
			return &b.Spec.Components[i]
		}
	}
	return nil
}
