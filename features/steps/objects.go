package steps

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/util/jsonpath"
	"sigs.k8s.io/controller-runtime/pkg/conversion"
)

// ParseManifests reads a multi-document YAML or JSON stream into objects,
// skipping empty documents. Every object must name its apiVersion and kind.
func ParseManifests(data []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for i := 1; ; i++ {
		var obj map[string]any
		if err := dec.Decode(&obj); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if len(obj) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: obj}
		if u.GetAPIVersion() == "" || u.GetKind() == "" {
			return nil, fmt.Errorf("document %d: apiVersion and kind are required", i)
		}
		out = append(out, u)
	}
}

// shortNames are the kubectl short names of this project's kinds.
var shortNames = map[string]string{
	"dgd":   "DynamoGraphDeployment",
	"dcd":   "DynamoComponentDeployment",
	"dm":    "DynamoModel",
	"dc":    "DynamoComponent",
	"dwm":   "DynamoWorkerMetadata",
	"dgdsa": "DynamoGraphDeploymentScalingAdapter",
}

// writtenIn is the version the feature files write a group's kinds in when
// a step names a kind without one. Discovery prefers nvidia.com/v1beta1 (as
// `kubectl get dgd` does), but the feature files predate it and name
// v1alpha1's fields; a step about v1beta1 says so as kubectl would,
// "dgd.v1beta1.nvidia.com".
var writtenIn = map[string]string{"nvidia.com": "v1alpha1"}

// ResolveKind turns a name as a user writes it into a group, version and
// kind: a Kind, resource, plural or short name ("DynamoGraphDeployment",
// "dgd", "deployment", "services"), or kubectl's fully qualified
// resource.version.group ("dgd.v1beta1.nvidia.com") for one version of a
// kind served in several. Unqualified, a kind resolves to the version of
// writtenIn, else to the one discovery prefers. known (may be nil) names
// the groups of the kinds it knows: a lazy RESTMapper finds a kind by
// resource alone only in the groups it has loaded already, and a scenario
// may be the first to ask for one (LeaderWorkerSet).
func ResolveKind(mapper meta.RESTMapper, known *runtime.Scheme, name string) (schema.GroupVersionKind, error) {
	var tried []error
	for _, gvr := range candidateResources(known, name) {
		gvks, err := mapper.KindsFor(userResource(gvr))
		if err != nil || len(gvks) == 0 {
			tried = append(tried, err)
			continue
		}
		if gvr.Version == "" {
			for _, gvk := range gvks {
				if writtenIn[gvk.Group] == gvk.Version {
					return gvk, nil
				}
			}
		}
		return gvks[0], nil
	}
	return schema.GroupVersionKind{}, fmt.Errorf("unknown kind %q: %w", name, errors.Join(tried...))
}

// candidateResources are the readings of name to try in turn: as
// resource.version.group, as resource.group, as a resource in any group
// the mapper knows, and as a kind of known in its own group.
func candidateResources(known *runtime.Scheme, name string) []schema.GroupVersionResource {
	var out []schema.GroupVersionResource
	full, partial := schema.ParseResourceArg(name)
	if full != nil {
		out = append(out, *full)
	}
	if partial.Group != "" {
		out = append(out, partial.WithVersion(""))
	}
	out = append(out, schema.GroupVersionResource{Resource: name})
	if known == nil {
		return out
	}
	kind := userResource(schema.GroupVersionResource{Resource: name}).Resource
	groups := map[string]bool{}
	for gvk := range known.AllKnownTypes() {
		if strings.ToLower(gvk.Kind) == kind && gvk.Group != "" {
			groups[gvk.Group] = true
		}
	}
	for _, g := range sortedKeys(groups) {
		out = append(out, schema.GroupVersionResource{Group: g, Resource: name})
	}
	return out
}

// userResource spells a resource as the RESTMapper knows it: short names
// expanded, lower case (a Kind's lower case is its singular resource).
func userResource(gvr schema.GroupVersionResource) schema.GroupVersionResource {
	if kind, ok := shortNames[strings.ToLower(gvr.Resource)]; ok {
		gvr.Resource = kind
	}
	gvr.Resource = strings.ToLower(gvr.Resource)
	return gvr
}

// JSONPathValue evaluates a kubectl-style JSONPath ("{.spec.replicas}" or
// ".spec.replicas") against obj and prints the result as kubectl -o jsonpath
// would. A path that matches nothing is an error naming the path.
func JSONPathValue(obj map[string]any, path string) (string, error) {
	if !strings.HasPrefix(path, "{") {
		path = "{" + path + "}"
	}
	jp := jsonpath.New("field")
	if err := jp.Parse(path); err != nil {
		return "", fmt.Errorf("bad field path %s: %w", path, err)
	}
	var buf bytes.Buffer
	if err := jp.Execute(&buf, obj); err != nil {
		return "", fmt.Errorf("field %s: %w", path, err)
	}
	return buf.String(), nil
}

// condition is the condition of type condType in obj's status.conditions,
// nil when it has none (or it does not parse): the one reading of an
// unstructured object's conditions for the steps.
func condition(obj *unstructured.Unstructured, condType string) *metav1.Condition {
	raw, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, r := range raw {
		m, ok := r.(map[string]any)
		if !ok || m["type"] != condType {
			continue
		}
		c := &metav1.Condition{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, c); err != nil {
			return nil
		}
		return c
	}
	return nil
}

// ConvertManifest converts obj, written in one version of a kind the
// operator converts (the nvidia.com/v1alpha1 hub and its v1beta1 spokes,
// operator/api/v1beta1), into version gv with the operator's own
// conversion, as the API server's conversion webhook does for a client
// reading obj there.
func ConvertManifest(s *runtime.Scheme, obj *unstructured.Unstructured, gv schema.GroupVersion) (*unstructured.Unstructured, error) {
	kind := obj.GetKind()
	from, err := s.New(obj.GroupVersionKind())
	if err != nil {
		return nil, err
	}
	to, err := s.New(gv.WithKind(kind))
	if err != nil {
		return nil, err
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, from); err != nil {
		return nil, fmt.Errorf("%s %s: %w", kind, obj.GetName(), err)
	}
	if err := convert(from, to); err != nil {
		return nil, fmt.Errorf("converting %s %s from %s to %s: %w", kind, obj.GetName(), obj.GetAPIVersion(), gv, err)
	}
	out, err := runtime.DefaultUnstructuredConverter.ToUnstructured(to)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: out}
	u.SetGroupVersionKind(gv.WithKind(kind))
	return u, nil
}

// convert converts a spoke to the hub, or the hub to a spoke.
func convert(from, to runtime.Object) error {
	spoke, fromSpoke := from.(conversion.Convertible)
	hub, toHub := to.(conversion.Hub)
	if fromSpoke && toHub {
		return spoke.ConvertTo(hub)
	}
	hub, fromHub := from.(conversion.Hub)
	spoke, toSpoke := to.(conversion.Convertible)
	if fromHub && toSpoke {
		return spoke.ConvertFrom(hub)
	}
	return errors.New("the kind has no conversion between these versions")
}
