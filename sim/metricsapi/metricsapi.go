// Package metricsapi serves the simulator's external metrics API
// (external.metrics.k8s.io/v1beta1), so that a HorizontalPodAutoscaler's
// External metrics work on the simulator as a metrics adapter (Prometheus
// Adapter, KEDA's) makes them work on a cluster: the kube-controller-
// manager's HPA controller reads them through the API server's aggregation
// layer.
//
// A metric's value is what a test sets: the key named after the metric in
// the ConfigMap ConfigMapName of the namespace asked about, a quantity
// ("30", "500m"). A metric that is not there is not found, as a real
// adapter answers for a series it does not have; label selectors are not
// applied (every series of a name is one value).
package metricsapi

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

const (
	// ConfigMapName holds a namespace's external metrics, one key each.
	ConfigMapName = "dynamo-sim-external-metrics"
	// Group and Version of the API served.
	Group   = "external.metrics.k8s.io"
	Version = "v1beta1"
	// serviceName is the Service in kube-system the APIService names; its
	// EndpointSlice points at the server.
	serviceName = "dynamo-sim-external-metrics"
	namespace   = "kube-system"
)

// Start serves the API at ip:port (an address the API server reaches:
// with --enable-aggregator-routing it calls the Service's endpoint) until
// ctx ends, and registers it: a Service without selector, its
// EndpointSlice and the APIService.
func Start(ctx context.Context, kube kubernetes.Interface, dyn dynamic.Interface, ip string, port int) error {
	cert, err := selfSigned(ip)
	if err != nil {
		return err
	}
	ln, err := tls.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port)), &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	if err != nil {
		return fmt.Errorf("external metrics API: %w", err)
	}
	srv := &http.Server{Handler: &server{kube: kube}, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	go func() { <-ctx.Done(); _ = srv.Close() }()
	return register(ctx, kube, dyn, ip, port)
}

// register makes the API server route the group to ip:port.
func register(ctx context.Context, kube kubernetes.Interface, dyn dynamic.Interface, ip string, port int) error {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: serviceName, Namespace: namespace},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "https", Port: 443, TargetPort: intstr.FromInt32(int32(port))}}},
	}
	if _, err := kube.CoreV1().Services(namespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("external metrics Service: %w", err)
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: serviceName, Namespace: namespace, Labels: map[string]string{discoveryv1.LabelServiceName: serviceName}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To(int32(port)), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	if _, err := kube.DiscoveryV1().EndpointSlices(namespace).Create(ctx, slice, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("external metrics EndpointSlice: %w", err)
	}
	apiService := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
		"metadata": map[string]any{"name": Version + "." + Group},
		"spec": map[string]any{
			"group": Group, "version": Version, "groupPriorityMinimum": int64(100), "versionPriority": int64(100),
			"insecureSkipTLSVerify": true,
			"service":               map[string]any{"namespace": namespace, "name": serviceName, "port": int64(443)},
		},
	}}
	gvr := schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}
	if _, err := dyn.Resource(gvr).Create(ctx, apiService, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("external metrics APIService: %w", err)
	}
	return nil
}

type server struct{ kube kubernetes.Interface }

// ServeHTTP answers discovery of the group version and
// GET /apis/external.metrics.k8s.io/v1beta1/namespaces/NS/METRIC.
func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	prefix := "/apis/" + Group + "/" + Version
	rest, ok := strings.CutPrefix(r.URL.Path, prefix)
	switch {
	case !ok:
		notFound(w, r.URL.Path)
	case rest == "" || rest == "/":
		writeJSON(w, http.StatusOK, metav1.APIResourceList{
			TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
			GroupVersion: Group + "/" + Version,
			APIResources: []metav1.APIResource{{Name: "*", Namespaced: true, Kind: "ExternalMetricValueList", Verbs: []string{"get"}}},
		})
	default:
		parts := strings.Split(strings.Trim(rest, "/"), "/")
		if len(parts) != 3 || parts[0] != "namespaces" {
			notFound(w, r.URL.Path)
			return
		}
		s.serveMetric(w, r, parts[1], parts[2])
	}
}

// externalMetricValueList is external.metrics.k8s.io/v1beta1's
// ExternalMetricValueList.
type externalMetricValueList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata"`
	Items           []externalMetricValue `json:"items"`
}

type externalMetricValue struct {
	MetricName   string            `json:"metricName"`
	MetricLabels map[string]string `json:"metricLabels"`
	Timestamp    metav1.Time       `json:"timestamp"`
	Value        resource.Quantity `json:"value"`
}

func (s *server) serveMetric(w http.ResponseWriter, r *http.Request, ns, metric string) {
	cm, err := s.kube.CoreV1().ConfigMaps(ns).Get(r.Context(), ConfigMapName, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		writeJSON(w, http.StatusInternalServerError, status(http.StatusInternalServerError, err.Error()))
		return
	}
	raw, ok := "", false
	if cm != nil {
		raw, ok = cm.Data[metric]
	}
	if !ok {
		notFound(w, fmt.Sprintf("metric %s in namespace %s", metric, ns))
		return
	}
	q, err := resource.ParseQuantity(strings.TrimSpace(raw))
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, status(http.StatusInternalServerError,
			fmt.Sprintf("%s/%s key %s: %v", ns, ConfigMapName, metric, errors.Unwrap(err))))
		return
	}
	writeJSON(w, http.StatusOK, externalMetricValueList{
		TypeMeta: metav1.TypeMeta{Kind: "ExternalMetricValueList", APIVersion: Group + "/" + Version},
		Items:    []externalMetricValue{{MetricName: metric, MetricLabels: map[string]string{}, Timestamp: metav1.Now(), Value: q}},
	})
}

func notFound(w http.ResponseWriter, what string) {
	writeJSON(w, http.StatusNotFound, status(http.StatusNotFound, what+" not found"))
}

func status(code int32, msg string) *metav1.Status {
	return &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure, Code: code, Message: msg}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// selfSigned is a serving certificate for ip; the APIService skips its
// verification (insecureSkipTLSVerify), as nothing else calls it.
func selfSigned(ip string) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: serviceName},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(10 * 365 * 24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP(ip)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
