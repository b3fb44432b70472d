package kubelet

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dynamoctl/dynamo-operator/sim/command"
)

// Objects looks up the Secrets and ConfigMaps a pod's env and volumes
// refer to.
type Objects interface {
	Secret(ctx context.Context, namespace, name string) (*corev1.Secret, error)
	ConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error)
}

// envName is what the kubelet accepts as an environment variable name from
// envFrom (C identifier-like, dots and dashes allowed).
var envName = regexp.MustCompile(`^[-._a-zA-Z][-._a-zA-Z0-9]*$`)

// ResolveEnv is the environment of container c in pod as the kubelet
// builds it: base first (the service variables), then envFrom in order,
// then env, where later entries win and $(VAR) refers to any variable
// defined before. A missing Secret, ConfigMap or key that is not optional
// is an error naming the field, and the container does not start.
func ResolveEnv(ctx context.Context, objs Objects, pod *corev1.Pod, c *corev1.Container, base []corev1.EnvVar) ([]string, error) {
	vals := map[string]string{}
	var order []string
	set := func(k, v string) {
		if _, ok := vals[k]; !ok {
			order = append(order, k)
		}
		vals[k] = v
	}
	for _, e := range base {
		set(e.Name, e.Value)
	}
	for i, from := range c.EnvFrom {
		data, err := envFromData(ctx, objs, pod.Namespace, from)
		if err != nil {
			return nil, fmt.Errorf("spec.containers[%s].envFrom[%d].%w", c.Name, i, err)
		}
		keys := make([]string, 0, len(data))
		for k := range data {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if name := from.Prefix + k; envName.MatchString(name) {
				set(name, data[k])
			}
		}
	}
	for _, e := range c.Env {
		field := fmt.Sprintf("spec.containers[%s].env[%s]", c.Name, e.Name)
		if e.ValueFrom == nil {
			set(e.Name, command.Expand(e.Value, vals))
			continue
		}
		v, ok, err := valueFrom(ctx, objs, pod, c, e.ValueFrom)
		if err != nil {
			return nil, fmt.Errorf("%s.valueFrom: %w", field, err)
		}
		if ok {
			set(e.Name, v)
		}
	}
	out := make([]string, 0, len(order))
	for _, k := range order {
		out = append(out, k+"="+vals[k])
	}
	return out, nil
}

// envFromData is the data of an envFrom source: nothing for an optional
// source that is missing.
func envFromData(ctx context.Context, objs Objects, namespace string, from corev1.EnvFromSource) (map[string]string, error) {
	switch {
	case from.ConfigMapRef != nil:
		cm, err := objs.ConfigMap(ctx, namespace, from.ConfigMapRef.Name)
		if err != nil {
			if apierrors.IsNotFound(err) && isTrue(from.ConfigMapRef.Optional) {
				return nil, nil
			}
			return nil, fmt.Errorf("configMapRef: configmap %q: %w", from.ConfigMapRef.Name, err)
		}
		return cm.Data, nil
	case from.SecretRef != nil:
		s, err := objs.Secret(ctx, namespace, from.SecretRef.Name)
		if err != nil {
			if apierrors.IsNotFound(err) && isTrue(from.SecretRef.Optional) {
				return nil, nil
			}
			return nil, fmt.Errorf("secretRef: secret %q: %w", from.SecretRef.Name, err)
		}
		data := map[string]string{}
		for k, v := range s.Data {
			data[k] = string(v)
		}
		return data, nil
	}
	return nil, nil
}

// valueFrom resolves one env source; ok is false for an optional source
// that is missing (the variable is then not set).
func valueFrom(ctx context.Context, objs Objects, pod *corev1.Pod, c *corev1.Container, src *corev1.EnvVarSource) (string, bool, error) {
	switch {
	case src.FieldRef != nil:
		v, err := FieldValue(pod, src.FieldRef.FieldPath)
		return v, err == nil, err
	case src.ResourceFieldRef != nil:
		v, err := resourceValue(c, src.ResourceFieldRef)
		return v, err == nil, err
	case src.SecretKeyRef != nil:
		ref := src.SecretKeyRef
		s, err := objs.Secret(ctx, pod.Namespace, ref.Name)
		if err != nil {
			if apierrors.IsNotFound(err) && isTrue(ref.Optional) {
				return "", false, nil
			}
			return "", false, fmt.Errorf("secretKeyRef: secret %q: %w", ref.Name, err)
		}
		v, ok := s.Data[ref.Key]
		if !ok {
			if isTrue(ref.Optional) {
				return "", false, nil
			}
			return "", false, fmt.Errorf("secretKeyRef: secret %q has no key %q", ref.Name, ref.Key)
		}
		return string(v), true, nil
	case src.ConfigMapKeyRef != nil:
		ref := src.ConfigMapKeyRef
		cm, err := objs.ConfigMap(ctx, pod.Namespace, ref.Name)
		if err != nil {
			if apierrors.IsNotFound(err) && isTrue(ref.Optional) {
				return "", false, nil
			}
			return "", false, fmt.Errorf("configMapKeyRef: configmap %q: %w", ref.Name, err)
		}
		v, ok := cm.Data[ref.Key]
		if !ok {
			if isTrue(ref.Optional) {
				return "", false, nil
			}
			return "", false, fmt.Errorf("configMapKeyRef: configmap %q has no key %q", ref.Name, ref.Key)
		}
		return v, true, nil
	}
	return "", false, fmt.Errorf("no source set")
}

var subscript = regexp.MustCompile(`^metadata\.(labels|annotations)\['(.+)'\]$`)

// FieldValue is the downward API's value of fieldPath for pod.
func FieldValue(pod *corev1.Pod, fieldPath string) (string, error) {
	if m := subscript.FindStringSubmatch(fieldPath); m != nil {
		if m[1] == "labels" {
			return pod.Labels[m[2]], nil
		}
		return pod.Annotations[m[2]], nil
	}
	switch fieldPath {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "metadata.labels":
		return formatMap(pod.Labels), nil
	case "metadata.annotations":
		return formatMap(pod.Annotations), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.hostIP":
		return pod.Status.HostIP, nil
	case "status.hostIPs":
		var ips []string
		for _, ip := range pod.Status.HostIPs {
			ips = append(ips, ip.IP)
		}
		return strings.Join(ips, ","), nil
	case "status.podIP":
		return pod.Status.PodIP, nil
	case "status.podIPs":
		var ips []string
		for _, ip := range pod.Status.PodIPs {
			ips = append(ips, ip.IP)
		}
		return strings.Join(ips, ","), nil
	}
	return "", fmt.Errorf("fieldRef: unsupported fieldPath %q", fieldPath)
}

// formatMap renders labels or annotations as the downward API does:
// key="value" lines, sorted.
func formatMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(k + "=" + strconv.Quote(m[k]))
	}
	return b.String()
}

// resourceValue is a resourceFieldRef: the container's limit or request
// divided by the divisor, rounded up, as the kubelet reports it. A limit
// that is not set is reported as 0 here (a kubelet would use the node's
// allocatable).
func resourceValue(c *corev1.Container, ref *corev1.ResourceFieldSelector) (string, error) {
	kind, name, ok := strings.Cut(ref.Resource, ".")
	if !ok || (kind != "limits" && kind != "requests") {
		return "", fmt.Errorf("resourceFieldRef: unsupported resource %q", ref.Resource)
	}
	list := c.Resources.Limits
	if kind == "requests" {
		list = c.Resources.Requests
	}
	q := list[corev1.ResourceName(name)]
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	v := math.Ceil(float64(q.MilliValue()) / float64(divisor.MilliValue()))
	return strconv.FormatInt(int64(v), 10), nil
}

// EnvMap turns KEY=VALUE entries into a map (later entries win).
func EnvMap(env []string) map[string]string {
	m := make(map[string]string, len(env))
	for _, e := range env {
		k, v, _ := strings.Cut(e, "=")
		m[k] = v
	}
	return m
}

func isTrue(b *bool) bool { return b != nil && *b }
