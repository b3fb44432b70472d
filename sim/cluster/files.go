package cluster

import (
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// writePKI writes the CA, the API server's serving certificate, the
// service account key, a kubeconfig per user, the audit policy and the
// scheduler's configuration.
func (c *Cluster) writePKI() error {
	now := time.Now()
	ca, err := c.writeCA(now)
	if err != nil {
		return err
	}
	if err := c.writeAPIServerFiles(ca, now); err != nil {
		return err
	}
	inside := "https://127.0.0.1:" + strconv.Itoa(APIServerPort)
	if err := c.writeKubeconfigs(ca, now, inside); err != nil {
		return err
	}
	if err := c.writeLWSPKI(ca, now, inside); err != nil {
		return err
	}
	sched := fmt.Sprintf(schedulerConfig, filepath.Join(c.cfg.Dir, "kube-scheduler.kubeconfig"))
	return os.WriteFile(filepath.Join(c.cfg.Dir, "kube-scheduler.yaml"), []byte(sched), 0o644)
}

// writeCA makes the cluster's CA and writes its certificate and key.
func (c *Cluster) writeCA(now time.Time) (*CA, error) {
	ca, err := NewCA(now)
	if err != nil {
		return nil, err
	}
	caKey, err := x509.MarshalECPrivateKey(ca.Key)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(c.path("ca.crt"), ca.CertPEM, 0o644); err != nil {
		return nil, err
	}
	return ca, os.WriteFile(c.path("ca.key"), pemBlock("EC PRIVATE KEY", caKey), 0o600)
}

// writeAPIServerFiles writes what the API server reads: its serving
// certificate, the service account key pair and the audit policy.
func (c *Cluster) writeAPIServerFiles(ca *CA, now time.Time) error {
	serving, err := ca.Issue(now, "kube-apiserver", nil, []string{
		"127.0.0.1", NodeIP, "10.96.0.1", "localhost",
		"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local",
	})
	if err != nil {
		return err
	}
	if _, _, err := serving.Write(c.pki, "apiserver"); err != nil {
		return err
	}
	saPriv, saPub, err := ServiceAccountKey()
	if err != nil {
		return err
	}
	if err := os.WriteFile(c.path("sa.key"), saPriv, 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(c.path("sa.pub"), saPub, 0o644); err != nil {
		return err
	}
	return os.WriteFile(c.path("audit-policy.yaml"), auditPolicy, 0o644)
}

// kubeconfigUser is a kubeconfig file for a user with a client certificate.
type kubeconfigUser struct {
	file, cn string
	groups   []string
	server   string
}

// writeKubeconfigs writes a kubeconfig for each user with a client
// certificate, the API server at inside (and, with a host port, the
// administrator's for the host).
func (c *Cluster) writeKubeconfigs(ca *CA, now time.Time, inside string) error {
	users := []kubeconfigUser{
		{"admin.kubeconfig", AdminUser, []string{"system:masters"}, inside},
		{"operator.kubeconfig", OperatorUser, []string{"system:masters"}, inside},
		{"operator-local.kubeconfig", LocalOperatorUser, []string{"system:masters"}, inside},
		{"kube-controller-manager.kubeconfig", "system:kube-controller-manager", nil, inside},
		{"kube-scheduler.kubeconfig", "system:kube-scheduler", nil, inside},
	}
	if c.cfg.HostPort != 0 {
		users = append(users, kubeconfigUser{"kubeconfig", AdminUser, []string{"system:masters"}, "https://127.0.0.1:" + strconv.Itoa(c.cfg.HostPort)})
	}
	for _, u := range users {
		kp, err := ca.Issue(now, u.cn, u.groups, nil)
		if err != nil {
			return err
		}
		kc, err := KubeConfig(u.server, ca.CertPEM, u.cn, kp)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(c.cfg.Dir, u.file), kc, 0o600); err != nil {
			return fmt.Errorf("writing %s: %w", u.file, err)
		}
	}
	return nil
}
