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

// TLS makes it a kubernetes.io/tls Secret holding data (tls.crt, tls.key
// and what else the test puts there).
func (s *SecretWrapper) TLS(data map[string][]byte) *SecretWrapper {
	s.Type = corev1.SecretTypeTLS
	s.Data = data
	return s
}

// Label sets a label.
func (s *SecretWrapper) Label(k, v string) *SecretWrapper {
	if s.Labels == nil {
		s.Labels = map[string]string{}
	}
	s.Labels[k] = v
	return s
}

// DataKey sets a key of its data.
func (s *SecretWrapper) DataKey(k, v string) *SecretWrapper {
	if s.Secret.Data == nil {
		s.Secret.Data = map[string][]byte{}
	}
	s.Secret.Data[k] = []byte(v)
	return s
}

// StringDataKey sets a key of its stringData, as a manifest writes it.
func (s *SecretWrapper) StringDataKey(k, v string) *SecretWrapper {
	if s.Secret.StringData == nil {
		s.Secret.StringData = map[string]string{}
	}
	s.Secret.StringData[k] = v
	return s
}
