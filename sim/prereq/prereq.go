// Package prereq finds the Secrets and ConfigMaps a manifest's pods will
// need and that its users create by hand beforehand (Dynamo's docs: `kubectl
// create secret generic hf-token-secret --from-literal=HF_TOKEN=...`, a
// ConfigMap from the engine's config file). The simulator's kubelet keeps a
// pod whose Secret or ConfigMap does not exist from starting, as a real one
// does; `dynamo-sim apply` and the compat scenario create these first, with
// placeholder values, so users' graphs run as their docs say.
package prereq

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Placeholder is the value of every key of a placeholder object.
const Placeholder = "simulated"

// For returns the Secrets and ConfigMaps that objs refer to and do not
// themselves contain, in namespace ns, each with the keys referred to
// (keyed references) or a placeholder key, sorted by kind and name. It
// reads every reference a pod template can hold, wherever it sits in an
// object: envFromSecret, secretKeyRef and configMapKeyRef, envFrom's
// secretRef and configMapRef, secret and configMap volumes; optional ones
// are left out.
func For(objs []*unstructured.Unstructured, ns string) []client.Object {
	secrets, configMaps := map[string]map[string]bool{}, map[string]map[string]bool{}
	have := map[string]bool{}
	for _, o := range objs {
		have[o.GetKind()+"/"+o.GetName()] = true
		walk(o.Object, secrets, configMaps)
	}
	var out []client.Object
	for _, name := range sortedKeys(secrets) {
		if have["Secret/"+name] {
			continue
		}
		s := &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, StringData: map[string]string{}}
		for _, k := range keysOr(secrets[name], strings.ToUpper(strings.ReplaceAll(name, "-", "_"))) {
			s.StringData[k] = Placeholder
		}
		out = append(out, s)
	}
	for _, name := range sortedKeys(configMaps) {
		if have["ConfigMap/"+name] {
			continue
		}
		cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Data: map[string]string{}}
		for _, k := range keysOr(configMaps[name], "config") {
			cm.Data[k] = Placeholder
		}
		out = append(out, cm)
	}
	return out
}

// Claims returns the names of the PersistentVolumeClaims objs mount and do
// not themselves contain or have the operator create, sorted: a pod
// template's persistentVolumeClaim volumes, a v1beta1 compilationCache's
// pvcName, and v1alpha1's pvcs and pvc entries without create: true. For
// makes no placeholders of them: the docs have users create and fill them
// (model weights, a LoRA cache), and an empty claim would hide that the
// graph cannot run as written; its pods stay Pending until the claim
// exists, which the scheduler and the graph's status say.
func Claims(objs []*unstructured.Unstructured) []string {
	claims := map[string]bool{}
	have := map[string]bool{}
	for _, o := range objs {
		if o.GetKind() == "PersistentVolumeClaim" {
			have[o.GetName()] = true
		}
		walkClaims(o.Object, claims)
	}
	var out []string
	for _, name := range sortedKeys(claims) {
		if !have[name] {
			out = append(out, name)
		}
	}
	return out
}

// walkClaims collects the claims v names.
func walkClaims(v any, claims map[string]bool) {
	switch t := v.(type) {
	case []any:
		for _, e := range t {
			walkClaims(e, claims)
		}
	case map[string]any:
		for field, key := range map[string]string{"persistentVolumeClaim": "claimName", "compilationCache": "pvcName"} {
			if r, ok := t[field].(map[string]any); ok {
				if name, _ := r[key].(string); name != "" {
					claims[name] = true
				}
			}
		}
		var entries []any
		if list, ok := t["pvcs"].([]any); ok {
			entries = list
		}
		if one, ok := t["pvc"].(map[string]any); ok {
			entries = append(entries, one)
		}
		for _, e := range entries {
			entry, _ := e.(map[string]any)
			name, _ := entry["name"].(string)
			if create, _ := entry["create"].(bool); name != "" && !create {
				claims[name] = true
			}
		}
		for _, e := range t {
			walkClaims(e, claims)
		}
	}
}

// walk collects the references in v.
func walk(v any, secrets, configMaps map[string]map[string]bool) {
	switch t := v.(type) {
	case []any:
		for _, e := range t {
			walk(e, secrets, configMaps)
		}
	case map[string]any:
		if name, ok := t["envFromSecret"].(string); ok && name != "" {
			add(secrets, name, "")
		}
		ref := func(field, nameKey string, into map[string]map[string]bool) {
			r, ok := t[field].(map[string]any)
			if !ok {
				return
			}
			if opt, _ := r["optional"].(bool); opt {
				return
			}
			name, _ := r[nameKey].(string)
			key, _ := r["key"].(string)
			if name != "" {
				add(into, name, key)
			}
		}
		ref("secretKeyRef", "name", secrets)
		ref("configMapKeyRef", "name", configMaps)
		ref("secretRef", "name", secrets)
		ref("configMapRef", "name", configMaps)
		// Volumes: {name, secret: {secretName}} and {name, configMap: {name}}.
		if _, isVolume := t["name"]; isVolume {
			ref("secret", "secretName", secrets)
			ref("configMap", "name", configMaps)
		}
		for _, e := range t {
			walk(e, secrets, configMaps)
		}
	}
}

func add(m map[string]map[string]bool, name, key string) {
	if m[name] == nil {
		m[name] = map[string]bool{}
	}
	if key != "" {
		m[name][key] = true
	}
}

func keysOr(keys map[string]bool, fallback string) []string {
	if len(keys) == 0 {
		return []string{fallback}
	}
	return sortedKeys(keys)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
