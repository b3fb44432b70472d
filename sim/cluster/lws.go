package cluster

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The LeaderWorkerSet controller (sigs.k8s.io/lws, built by make lws from
// tools/lws) runs as a process beside the control plane, as a pod of its
// own would on a real cluster: its own user, its webhook server on the
// namespace's loopback with a certificate the simulator's CA signs (its
// internal certificate rotation, which writes a Secret and patches the
// webhook configurations, is off: the simulator makes both instead).
const (
	LWSUser        = "lws-controller"
	lwsWebhookPort = 9543
	lwsHealthPort  = 8181
	lwsProcess     = "lws-controller"
)

func (c *Cluster) lwsKubeconfig() string {
	return filepath.Join(c.cfg.Dir, "lws-controller.kubeconfig")
}
func (c *Cluster) lwsCertDir() string { return filepath.Join(c.pki, "lws-webhook") }

// writeLWSPKI writes the controller's webhook serving certificate (as
// controller-runtime reads it: tls.crt and tls.key in its cert dir) and
// its kubeconfig.
func (c *Cluster) writeLWSPKI(ca *CA, now time.Time, server string) error {
	serving, err := ca.Issue(now, "lws-webhook", nil, []string{"127.0.0.1", "localhost"})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(c.lwsCertDir(), 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(c.lwsCertDir(), "tls.crt"), serving.CertPEM, 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(c.lwsCertDir(), "tls.key"), serving.KeyPEM, 0o600); err != nil {
		return err
	}
	// system:masters: the simulator does not install LWS's ClusterRole;
	// what it may do is not what the simulator tests.
	kp, err := ca.Issue(now, LWSUser, []string{"system:masters"}, nil)
	if err != nil {
		return err
	}
	kc, err := KubeConfig(server, ca.CertPEM, LWSUser, kp)
	if err != nil {
		return err
	}
	return os.WriteFile(c.lwsKubeconfig(), kc, 0o600)
}

// lwsConfig is the controller's configuration file
// (config.lws.x-k8s.io/v1alpha1): one replica, so no leader election; no
// metrics server (nothing scrapes it); the webhook server on loopback.
const lwsConfig = `apiVersion: config.lws.x-k8s.io/v1alpha1
kind: Configuration
leaderElection:
  leaderElect: false
internalCertManagement:
  enable: false
webhook:
  host: 127.0.0.1
  port: %d
  certDir: %s
metrics:
  bindAddress: "0"
health:
  healthProbeBindAddress: 127.0.0.1:%d
clientConnection:
  qps: 500
  burst: 1000
`

// StartLWS runs the LeaderWorkerSet controller bin, registers its
// admission webhooks (called at 127.0.0.1, there is no kube-proxy) and
// returns once it serves them. Its CRDs must be installed first: it
// watches them from the start.
func (c *Cluster) StartLWS(ctx context.Context, bin string) error {
	cfgPath := filepath.Join(c.cfg.Dir, "lws-config.yaml")
	cfg := fmt.Sprintf(lwsConfig, lwsWebhookPort, c.lwsCertDir(), lwsHealthPort)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		return err
	}
	p, err := StartProcess(lwsProcess, c.logs, bin, []string{"--config=" + cfgPath, "--zap-log-level=info"},
		[]string{"KUBECONFIG=" + c.lwsKubeconfig()})
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.procs[lwsProcess] = p
	c.mu.Unlock()
	if err := c.registerLWSWebhooks(ctx); err != nil {
		return err
	}
	hc := &http.Client{Timeout: 2 * time.Second}
	if err := c.poll(ctx, lwsProcess, func() bool {
		return get(ctx, hc, "http://127.0.0.1:"+strconv.Itoa(lwsHealthPort)+"/readyz")
	}); err != nil {
		return err
	}
	// Ready is the manager's, not the webhook server's: wait until the
	// webhook port takes TLS connections too, so the first LeaderWorkerSet
	// applied is not refused.
	return c.poll(ctx, lwsProcess, func() bool { return tlsDial(ctx, "127.0.0.1:"+strconv.Itoa(lwsWebhookPort)) })
}

// registerLWSWebhooks is what LWS's kustomize manifests install
// (config/webhook with its patches: the pod webhooks only for pods that
// carry leaderworkerset.sigs.k8s.io/name), pointed at the process.
func (c *Cluster) registerLWSWebhooks(ctx context.Context) error {
	ca, err := os.ReadFile(c.path("ca.crt"))
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(c.AdminConfig())
	if err != nil {
		return err
	}
	fail := admissionregistrationv1.Fail
	none := admissionregistrationv1.SideEffectClassNone
	cfg := func(path string) admissionregistrationv1.WebhookClientConfig {
		url := "https://127.0.0.1:" + strconv.Itoa(lwsWebhookPort) + path
		return admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: ca}
	}
	rule := func(group, resource string, ops ...admissionregistrationv1.OperationType) []admissionregistrationv1.RuleWithOperations {
		return []admissionregistrationv1.RuleWithOperations{{Operations: ops, Rule: admissionregistrationv1.Rule{
			APIGroups: []string{group}, APIVersions: []string{"v1"}, Resources: []string{resource}}}}
	}
	lwsPods := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
		Key: "leaderworkerset.sigs.k8s.io/name", Operator: metav1.LabelSelectorOpExists}}}
	create, update := admissionregistrationv1.Create, admissionregistrationv1.Update
	mutating := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "lws-mutating-webhook-configuration"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{
			{Name: "mleaderworkerset.kb.io", ClientConfig: cfg("/mutate-leaderworkerset-x-k8s-io-v1-leaderworkerset"),
				Rules: rule("leaderworkerset.x-k8s.io", "leaderworkersets", create, update), FailurePolicy: &fail, SideEffects: &none, AdmissionReviewVersions: []string{"v1"}},
			{Name: "mpod.kb.io", ClientConfig: cfg("/mutate--v1-pod"), ObjectSelector: lwsPods,
				Rules: rule("", "pods", create), FailurePolicy: &fail, SideEffects: &none, AdmissionReviewVersions: []string{"v1"}},
		},
	}
	validating := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "lws-validating-webhook-configuration"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{
			{Name: "vleaderworkerset.kb.io", ClientConfig: cfg("/validate-leaderworkerset-x-k8s-io-v1-leaderworkerset"),
				Rules: rule("leaderworkerset.x-k8s.io", "leaderworkersets", create, update), FailurePolicy: &fail, SideEffects: &none, AdmissionReviewVersions: []string{"v1"}},
			{Name: "vpod.kb.io", ClientConfig: cfg("/validate--v1-pod"), ObjectSelector: lwsPods,
				Rules: rule("", "pods", create, update), FailurePolicy: &fail, SideEffects: &none, AdmissionReviewVersions: []string{"v1"}},
		},
	}
	if _, err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, mutating, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("registering LeaderWorkerSet's mutating webhooks: %w", err)
	}
	if _, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, validating, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("registering LeaderWorkerSet's validating webhooks: %w", err)
	}
	return nil
}

func tlsDial(ctx context.Context, addr string) bool {
	d := &tls.Dialer{Config: &tls.Config{InsecureSkipVerify: true}} //nolint:gosec // a liveness check of our own process
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return false
	}
	_ = conn.Close()
	return true
}
