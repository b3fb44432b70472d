package builders

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ConfigMapWrapper builds a ConfigMap.
type ConfigMapWrapper struct{ corev1.ConfigMap }

// MakeConfigMap starts an empty ConfigMap.
func MakeConfigMap(name, namespace string) *ConfigMapWrapper {
	return &ConfigMapWrapper{corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: corev1.SchemeGroupVersion.String(), Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
	}}
}

// Obj returns the ConfigMap.
func (c *ConfigMapWrapper) Obj() *corev1.ConfigMap { return &c.ConfigMap }

// DataKey sets a key of its data.
func (c *ConfigMapWrapper) DataKey(k, v string) *ConfigMapWrapper {
	if c.ConfigMap.Data == nil {
		c.ConfigMap.Data = map[string]string{}
	}
	c.ConfigMap.Data[k] = v
	return c
}
