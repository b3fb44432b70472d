package steps

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"time"

	"github.com/cucumber/godog"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/internal/await"
	"github.com/dynamoctl/dynamo-operator/sim/faults"
)

// The cluster-wide release's webhook certificate expiring under admission
// load (scenarios/faults.feature): renewed, and no request refused.

func registerCertExpirySteps(sc *godog.ScenarioContext, w *simWorld) {
	f := w.faultState()
	sc.Step(`^the webhook certificate of the cluster-wide release expires$`, f.certExpires)
	sc.Step(`^the certificate Secret eventually holds a renewed certificate$`, f.certRenewed)
	sc.Step(`^the admission client keeps sending for (\d+) seconds$`, f.keepSending)
}

func (f *faultWorld) certExpires(ctx context.Context) error {
	f.certEpoch = time.Now()
	msg, err := f.fault(ctx, faults.Request{Kind: "cert-expiry", Secret: ClusterNamespace + "/" + certSecret})
	if err != nil {
		return err
	}
	fmt.Printf("    %s\n", msg)
	return nil
}

// certRenewed waits until the Secret's serving certificate is valid now
// and for a while yet (the operator issued a new one).
func (f *faultWorld) certRenewed(ctx context.Context) error {
	err := f.w.eventually(ctx, "a renewed certificate in the certificate Secret", func() error {
		s := &corev1.Secret{}
		if err := f.w.Client.Get(ctx, client.ObjectKey{Namespace: ClusterNamespace, Name: certSecret}, s); err != nil {
			return err
		}
		block, _ := pem.Decode(s.Data[corev1.TLSCertKey])
		if block == nil {
			return fmt.Errorf("the Secret %s has no PEM certificate", certSecret)
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return err
		}
		if now := time.Now(); now.After(c.NotAfter) || now.Before(c.NotBefore) {
			return fmt.Errorf("the serving certificate is valid %s to %s, not now", c.NotBefore, c.NotAfter)
		}
		return nil
	}, await.Within(2*time.Minute))
	if err == nil {
		f.w.Figure("certificate renewed after (s)", fmt.Sprintf("%.1f", time.Since(f.certEpoch).Seconds()))
	}
	return err
}

// keepSending lets the admission client run on, so that its requests
// straddle the renewal and the webhook server's reload.
func (f *faultWorld) keepSending(ctx context.Context, seconds int) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Duration(seconds) * time.Second):
		return nil
	}
}
