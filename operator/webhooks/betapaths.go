package webhooks

import (
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1beta1"
)

// The API server converts a v1beta1 request to v1alpha1 before it calls the
// webhooks (their rules name v1alpha1, matchPolicy Equivalent), so the rules
// run once, on v1alpha1, for both versions. A user who wrote v1beta1 must
// still read each violation at the path they wrote: these functions move a
// v1alpha1 field path to its v1beta1 place, following the conversion's
// mapping (operator/api/v1beta1 package doc). A path with no v1beta1 place of
// its own (a v1alpha1-only field kept in an annotation) keeps its spelling
// under the component it belongs to.

// betaGraphErrors moves the paths of errs, found on the v1alpha1 form of
// graph, to the v1beta1 paths of the same fields.
func betaGraphErrors(graph *v1alpha1.DynamoGraphDeployment, errs field.ErrorList) field.ErrorList {
	beta := &v1beta1.DynamoGraphDeployment{}
	if err := beta.ConvertFrom(graph.DeepCopy()); err != nil {
		return errs
	}
	return mapErrors(errs, func(path string) string {
		if rest, ok := strings.CutPrefix(path, "spec.pvcs["); ok {
			return betaClaimPath(path, rest, graph, beta)
		}
		return betaGraphPath(path, beta)
	})
}

// betaComponentErrors does the same for a DynamoComponentDeployment.
func betaComponentErrors(dcd *v1alpha1.DynamoComponentDeployment, errs field.ErrorList) field.ErrorList {
	beta := &v1beta1.DynamoComponentDeployment{}
	if err := beta.ConvertFrom(dcd.DeepCopy()); err != nil {
		return errs
	}
	return mapErrors(errs, func(path string) string {
		rest, ok := strings.CutPrefix(path, "spec.")
		if !ok {
			return path
		}
		return "spec" + betaComponentPath(rest, &beta.Spec.DynamoComponentDeploymentSharedSpec)
	})
}

func mapErrors(errs field.ErrorList, move func(string) string) field.ErrorList {
	out := make(field.ErrorList, len(errs))
	for i, e := range errs {
		c := *e
		c.Field = move(e.Field)
		out[i] = &c
	}
	return out
}

// graphLevel are the graph fields v1beta1 names differently.
var graphLevel = map[string]string{"envs": "env", "services": "components"}

// betaGraphPath maps one v1alpha1 path of a graph.
func betaGraphPath(path string, beta *v1beta1.DynamoGraphDeployment) string {
	rest, ok := strings.CutPrefix(path, "spec.services")
	if !ok || rest == "" {
		head, tail := splitHead(strings.TrimPrefix(path, "spec."))
		if renamed, ok := graphLevel[head]; ok && strings.HasPrefix(path, "spec.") {
			return "spec." + renamed + tail
		}
		return path
	}
	name, rest := serviceKey(rest)
	i := slices.IndexFunc(beta.Spec.Components, func(c v1beta1.DynamoComponentDeploymentSharedSpec) bool {
		return c.ComponentName == name
	})
	if i < 0 {
		return path
	}
	return "spec.components[" + strconv.Itoa(i) + "]" + betaComponentPath(strings.TrimPrefix(rest, "."), &beta.Spec.Components[i])
}

// betaClaimPath maps spec.pvcs[i]... (rest is what follows "spec.pvcs[").
// v1beta1 has no list of claims: a claim there comes from the
// compilationCache that names it, whose pvcName is the claim's name. A
// claim only v1alpha1 spelled keeps its path.
func betaClaimPath(path, rest string, graph *v1alpha1.DynamoGraphDeployment, beta *v1beta1.DynamoGraphDeployment) string {
	end := strings.Index(rest, "]")
	if end < 0 {
		return path
	}
	i, err := strconv.Atoi(rest[:end])
	if err != nil || i < 0 || i >= len(graph.Spec.PVCs) {
		return path
	}
	name := graph.Spec.PVCs[i].Name
	j := slices.IndexFunc(beta.Spec.Components, func(c v1beta1.DynamoComponentDeploymentSharedSpec) bool {
		return c.CompilationCache != nil && c.CompilationCache.PVCName == name
	})
	if j < 0 {
		return path
	}
	cache := "spec.components[" + strconv.Itoa(j) + "].compilationCache"
	if rest[end+1:] == ".name" {
		return cache + ".pvcName"
	}
	return cache
}

// serviceKey splits ".Name.rest" or "[Name].rest" into the service name and
// the rest.
func serviceKey(s string) (name, rest string) {
	if strings.HasPrefix(s, "[") {
		if end := strings.Index(s, "]"); end > 0 {
			return s[1:end], s[end+1:]
		}
	}
	s = strings.TrimPrefix(s, ".")
	if end := strings.IndexAny(s, ".["); end >= 0 {
		return s[:end], s[end:]
	}
	return s, ""
}

// splitHead splits "a.b", "a[0].b" into "a" and ".b", "[0].b".
func splitHead(s string) (head, tail string) {
	if end := strings.IndexAny(s, ".["); end >= 0 {
		return s[:end], s[end:]
	}
	return s, ""
}

// betaComponentPath maps the path of a field within a v1alpha1 service (no
// leading dot) to its path within the v1beta1 component c, with a leading
// separator (or "" for the component itself).
func betaComponentPath(rest string, c *v1beta1.DynamoComponentDeploymentSharedSpec) string {
	if rest == "" {
		return ""
	}
	head, tail := splitHead(rest)
	main := "podTemplate.spec.containers[" + strconv.Itoa(mainIndex(c)) + "]"
	switch head {
	case "componentType", "subComponentType":
		return ".type"
	case "sharedMemory":
		return ".sharedMemorySize"
	case "failover", "gpuMemoryService":
		return ".experimental." + head + tail
	case "resources":
		return "." + main + ".resources" + tail
	case "envs":
		return "." + main + ".env" + tail
	case "envFromSecret":
		return "." + main + ".envFrom[0]"
	case "livenessProbe", "readinessProbe":
		return "." + main + "." + head + tail
	case "extraPodMetadata":
		return ".podTemplate.metadata" + tail
	case "extraPodSpec":
		return extraPodSpecPath(tail, c, main)
	case "volumeMounts":
		if c.CompilationCache != nil {
			return ".compilationCache"
		}
		return "." + main + ".volumeMounts" + tail
	}
	return "." + head + tail
}

// extraPodSpecPath maps a path under extraPodSpec: mainContainer is the
// main container, containers[j] the j-th container other than it, the rest
// the pod spec's own fields.
func extraPodSpecPath(tail string, c *v1beta1.DynamoComponentDeploymentSharedSpec, main string) string {
	if rest, ok := strings.CutPrefix(tail, ".mainContainer"); ok {
		return "." + main + rest
	}
	if rest, ok := strings.CutPrefix(tail, ".containers["); ok {
		if end := strings.Index(rest, "]"); end > 0 {
			if j, err := strconv.Atoi(rest[:end]); err == nil {
				if i := otherIndex(c, j); i >= 0 {
					return ".podTemplate.spec.containers[" + strconv.Itoa(i) + "]" + rest[end+1:]
				}
			}
		}
	}
	return ".podTemplate.spec" + tail
}

// mainIndex is the index of the main container in c's pod template: where
// the conversion puts it, or where it would be added (last).
func mainIndex(c *v1beta1.DynamoComponentDeploymentSharedSpec) int {
	if c.PodTemplate == nil {
		return 0
	}
	containers := c.PodTemplate.Spec.Containers
	if i := slices.IndexFunc(containers, func(k corev1.Container) bool { return k.Name == v1beta1.MainContainerName }); i >= 0 {
		return i
	}
	return len(containers)
}

// otherIndex is the index in c's pod template of the j-th container that is
// neither the main container nor the frontend sidecar v1alpha1 holds in a
// field of its own, or -1.
func otherIndex(c *v1beta1.DynamoComponentDeploymentSharedSpec, j int) int {
	if c.PodTemplate == nil {
		return -1
	}
	sidecar := ""
	if c.FrontendSidecar != nil && *c.FrontendSidecar == v1beta1.FrontendSidecarContainerName {
		sidecar = v1beta1.FrontendSidecarContainerName
	}
	n := 0
	for i, k := range c.PodTemplate.Spec.Containers {
		if k.Name == v1beta1.MainContainerName || (sidecar != "" && k.Name == sidecar) {
			continue
		}
		if n == j {
			return i
		}
		n++
	}
	return -1
}
