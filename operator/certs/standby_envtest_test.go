package certs_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/internal/await"
	"github.com/dynamoctl/dynamo-operator/internal/builders"
	"github.com/dynamoctl/dynamo-operator/internal/testenv"
)

// TestStandbyWritesNothing: of two replicas in the auto mode, the one that
// leads writes the certificate Secret and its CA bundles; the one that
// starts beside it, not leading, serves the pair it reads from the Secret
// and sends no write at all (not the Secret, not a CA bundle, not an
// event).
func TestStandbyWritesNothing(t *testing.T) {
	ctx := context.Background()
	const (
		secret = "standby-cert"
		lease  = "standby-cert-leader"
	)
	election := []string{"--webhook-cert-mode=auto", "--webhook-cert-secret=" + secret,
		"--leader-elect=true", "--leader-election-id=" + lease, "--leader-election-namespace=" + testenv.OperatorNamespace}
	start := func(certDir string) *testenv.Operator {
		t.Helper()
		return env.StartOperator(ctx, t, append(env.WebhookArgsIn(t, certDir), election...)...)
	}
	t.Cleanup(func() {
		deleteConfigurations(t)
		_ = env.Client.Delete(context.Background(), builders.MakeSecret(secret, testenv.OperatorNamespace).Obj())
		_ = env.Client.Delete(context.Background(), &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: testenv.OperatorNamespace, Name: lease}})
	})

	leader := start(t.TempDir())
	waitForSecret(t, secret)
	holder := func(g gomega.Gomega) string {
		l := &coordinationv1.Lease{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: testenv.OperatorNamespace, Name: lease}, l)).To(gomega.Succeed())
		return ptr.Deref(l.Spec.HolderIdentity, "")
	}
	var leaderID string
	await.New(t).Eventually(func(g gomega.Gomega) {
		leaderID = holder(g)
		g.Expect(leaderID).NotTo(gomega.BeEmpty())
	}).Should(gomega.Succeed(), "the first replica leads")
	if leader.Writes() == 0 {
		t.Fatal("the leader wrote nothing: it should have written the certificate Secret")
	}

	standbyDir := t.TempDir()
	standby := start(standbyDir)
	stored := func() []byte {
		s := &corev1.Secret{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: testenv.OperatorNamespace, Name: secret}, s); err != nil {
			return nil
		}
		return s.Data[corev1.TLSCertKey]
	}
	await.New(t).Eventually(func(g gomega.Gomega) {
		served, err := os.ReadFile(filepath.Join(standbyDir, corev1.TLSCertKey))
		g.Expect(err).NotTo(gomega.HaveOccurred())
		g.Expect(bytes.Equal(served, stored())).To(gomega.BeTrue(), "the standby's cert dir holds the Secret's certificate")
	}).Should(gomega.Succeed(), "the standby serves the leader's certificate")
	// A starting replica's certificate pass is done by then; a few more
	// seconds cover a late one.
	await.New(t).Consistently(func(g gomega.Gomega) {
		g.Expect(holder(g)).To(gomega.Equal(leaderID), "the first replica still leads")
		g.Expect(standby.WritesSince(0)).To(gomega.BeEmpty(), "the standby's writes")
	}).WithTimeout(5*time.Second).Should(gomega.Succeed(), fmt.Sprintf("the standby (not leading; %s leads) writes nothing", leaderID))
}
