package builders

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SecretWrapper builds a Secret.
type SecretWrapper struct{ corev1.Secret }

// MakeSecret starts an empty Opaque Secret.
func MakeSecret(name, namespace string) *SecretWrapper {
	return &SecretWrapper{corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: corev1.SchemeGroupVersion.String(), Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Type:       corev1.SecretTypeOpaque,
	}}
}

// Obj returns the Secret.
func (s *SecretWrapper) Obj() *corev1.Secret { return &s.Secret }

// Label sets a label.
func (s *SecretWrapper) Label(k, v string) *SecretWrapper {
	if s.Labels == nil {
		s.Labels = map[string]string{}
	}
	s.Labels[k] = v
	return s
}
