package faults

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"math/big"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// certExpiry replaces the webhook serving certificate in its Secret with
// one for the same names that expired an hour ago (a new key, self-signed),
// as if rotation had been missed. An operator in `auto` certificate mode
// must notice and issue a new one; until it does, admission fails.
func certExpiry(ctx context.Context, env Env, r Request) (string, error) {
	ns, name := env.OperatorNamespace, env.WebhookCertSecret
	if r.Secret != "" {
		var ok bool
		if ns, name, ok = strings.Cut(r.Secret, "/"); !ok || ns == "" || name == "" {
			return "", fmt.Errorf("cert-expiry: --secret %q: want namespace/name", r.Secret)
		}
	}
	secrets := env.Client.CoreV1().Secrets(ns)
	sec, err := secrets.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", fmt.Errorf("cert-expiry: no Secret %s/%s: is the operator running with --enable-webhooks=false or a cert mode other than auto?", ns, name)
	}
	if err != nil {
		return "", err
	}
	block, _ := pem.Decode(sec.Data["tls.crt"])
	if block == nil {
		return "", fmt.Errorf("cert-expiry: Secret %s/%s has no PEM tls.crt", ns, name)
	}
	old, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return "", fmt.Errorf("cert-expiry: tls.crt of %s/%s: %w", ns, name, err)
	}
	certPEM, keyPEM, err := expiredCopy(old, env.Clock.Now())
	if err != nil {
		return "", err
	}
	sec.Data["tls.crt"], sec.Data["tls.key"] = certPEM, keyPEM
	if _, err := secrets.Update(ctx, sec, metav1.UpdateOptions{}); err != nil {
		return "", fmt.Errorf("cert-expiry: updating %s/%s: %w", ns, name, err)
	}
	return fmt.Sprintf("Secret %s/%s now holds a certificate for %v that expired at %s", ns, name, old.DNSNames, now1h(env.Clock.Now()).Format(time.RFC3339)), nil
}

func now1h(now time.Time) time.Time { return now.Add(-time.Hour) }

// expiredCopy makes a self-signed certificate with old's subject and names,
// valid from two hours ago until one hour ago.
func expiredCopy(old *x509.Certificate, now time.Time) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(now.UnixNano()),
		Subject:      old.Subject,
		DNSNames:     old.DNSNames,
		IPAddresses:  old.IPAddresses,
		NotBefore:    now.Add(-2 * time.Hour),
		NotAfter:     now1h(now),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}
