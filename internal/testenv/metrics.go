package testenv

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/dynamoctl/dynamo-operator/internal/await"
)

// MetricsArgs returns the flags that serve an in-process operator's
// /metrics as the binary does (HTTPS, TokenReview and SubjectAccessReview)
// on a free loopback port, and the URL to scrape.
func MetricsArgs() (args []string, url string, err error) {
	port, err := FreePort()
	if err != nil {
		return nil, "", err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	return []string{"--metrics-bind-address=" + addr, "--metrics-secure=true"}, "https://" + addr + "/metrics", nil
}

// MetricsReaderRole is the ClusterRole that lets a scraper "get /metrics",
// as the chart grants Prometheus.
const MetricsReaderRole = "dynamo-operator-metrics-reader"

// ServiceAccountToken creates the ServiceAccount namespace/name (when
// missing), binds it to MetricsReaderRole when allowMetrics, and returns a
// token for it from the TokenRequest API, as a pod would mount.
func (e *Env) ServiceAccountToken(ctx context.Context, namespace, name string, allowMetrics bool) (string, error) {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	if err := e.Client.Create(ctx, sa); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", err
	}
	if allowMetrics {
		role := &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: MetricsReaderRole},
			Rules:      []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}},
		}
		if err := e.Client.Create(ctx, role); err != nil && !apierrors.IsAlreadyExists(err) {
			return "", err
		}
		binding := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: MetricsReaderRole + "-" + namespace + "-" + name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: MetricsReaderRole},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: name}},
		}
		if err := e.Client.Create(ctx, binding); err != nil && !apierrors.IsAlreadyExists(err) {
			return "", err
		}
	}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
	if err := e.Client.SubResource("token").Create(ctx, sa, tr); err != nil {
		return "", fmt.Errorf("requesting a token for %s/%s: %w", namespace, name, err)
	}
	return tr.Status.Token, nil
}

// Scrape GETs url with the bearer token (none when empty) and returns the
// status code and body. The operator's metrics certificate is self-signed
// in tests, so it is not verified; Prometheus is configured the same way.
func Scrape(ctx context.Context, url, token string) (int, []byte, error) {
	c := &http.Client{
		Timeout:   10 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec // self-signed test pair
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

// Scraper returns a function that scrapes url as a ServiceAccount allowed
// to, failing on anything but 200. It returns once a scrape succeeds (the
// operator's caches sync before its metrics server listens, and RBAC
// takes a moment to reach the authorizer), or fails after 30 s.
func (e *Env) Scraper(ctx context.Context, url string) (func(context.Context) ([]byte, error), error) {
	token, err := e.ServiceAccountToken(ctx, metav1.NamespaceDefault, "metrics-scraper", true)
	if err != nil {
		return nil, err
	}
	scrape := func(ctx context.Context) ([]byte, error) {
		code, body, err := Scrape(ctx, url, token)
		if err != nil {
			return nil, err
		}
		if code != http.StatusOK {
			return nil, fmt.Errorf("scraping %s: HTTP %d: %s", url, code, body)
		}
		return body, nil
	}
	err = await.Until(ctx, "the operator's /metrics answers", func() error {
		_, err := scrape(ctx)
		return err
	}, await.Within(30*time.Second))
	if err != nil {
		return nil, err
	}
	return scrape, nil
}

// MetricValue is the sum of the series of the in-process operators'
// registry named name that carry every label of labels with its value
// (every series of name with nil), 0 when there is none.
func MetricValue(t testing.TB, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			matched := 0
			for _, l := range m.GetLabel() {
				if v, ok := labels[l.GetName()]; ok && v == l.GetValue() {
					matched++
				}
			}
			if matched == len(labels) {
				sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
			}
		}
	}
	return sum
}
