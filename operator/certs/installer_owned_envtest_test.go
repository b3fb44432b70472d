package certs_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/internal/await"
	"github.com/dynamoctl/dynamo-operator/internal/builders"
	"github.com/dynamoctl/dynamo-operator/internal/testenv"
	"github.com/dynamoctl/dynamo-operator/operator/app"
	"github.com/dynamoctl/dynamo-operator/operator/webhooks"
)

// TestInstallerOwnedConfigurations: with --webhook-manage-configurations=false
// (the chart) the auto mode injects its CA bundle into the installer's
// configurations and leaves every other field the installer's; it never
// creates them, not at start and not after they are deleted.
func TestInstallerOwnedConfigurations(t *testing.T) {
	ctx := context.Background()
	const secret = "installer-owned-cert"
	args := append(env.WebhookArgs(t), "--webhook-cert-mode=auto", "--webhook-cert-secret="+secret,
		"--webhook-manage-configurations=false")
	op, err := env.NewOperator(args, app.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	if err := op.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		op.Stop()
		deleteConfigurations(t)
		_ = env.Client.Delete(context.Background(), builders.MakeSecret(secret, testenv.OperatorNamespace).Obj())
	})

	// The operator acts (writes its certificate) but creates no configuration.
	waitForSecret(t, secret)
	assertNoConfigurations(t, op)

	// The installer creates them, with its own timeout; the operator injects
	// the bundle and nothing else.
	validating, mutating := webhooks.Configurations(webhooks.ConfigurationOptions{
		ServiceNamespace: testenv.OperatorNamespace, ServiceName: "dynamo-operator-webhook",
		URL: "https://127.0.0.1:" + webhookPort(t, args),
	})
	for i := range validating.Webhooks {
		validating.Webhooks[i].TimeoutSeconds = ptr.To[int32](7)
	}
	mutating.Webhooks[0].TimeoutSeconds = ptr.To[int32](7)
	for _, obj := range []client.Object{validating, mutating} {
		if err := env.Client.Create(ctx, obj, client.FieldOwner("installer")); err != nil {
			t.Fatal(err)
		}
	}
	eventuallyConfigurations(t, func(obj client.Object) error {
		for _, b := range bundles(obj) {
			if len(b) == 0 {
				return fmt.Errorf("%s: no caBundle yet", obj.GetName())
			}
		}
		switch c := obj.(type) {
		case *admissionregistrationv1.ValidatingWebhookConfiguration:
			for _, w := range c.Webhooks {
				if *w.TimeoutSeconds != 7 {
					return fmt.Errorf("%s: timeout %d, the installer's 7 overwritten", w.Name, *w.TimeoutSeconds)
				}
			}
		case *admissionregistrationv1.MutatingWebhookConfiguration:
			if *c.Webhooks[0].TimeoutSeconds != 7 {
				return fmt.Errorf("mutating timeout %d, the installer's 7 overwritten", *c.Webhooks[0].TimeoutSeconds)
			}
		}
		return nil
	})

	// The installer deletes them (helm uninstall); deleting the Secret too
	// makes the operator write again, and still it recreates no
	// configuration.
	deleteConfigurations(t)
	s := &corev1.Secret{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: testenv.OperatorNamespace, Name: secret}, s); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Delete(ctx, s); err != nil {
		t.Fatal(err)
	}
	waitForSecret(t, secret)
	assertNoConfigurations(t, op)
}

func waitForSecret(t *testing.T, name string) {
	t.Helper()
	await.New(t).Eventually(func(g gomega.Gomega) {
		s := &corev1.Secret{}
		g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: testenv.OperatorNamespace, Name: name}, s)).To(gomega.Succeed())
		g.Expect(s.Data).To(gomega.HaveKeyWithValue(corev1.TLSCertKey, gomega.Not(gomega.BeEmpty())))
	}).Should(gomega.Succeed(), "the operator writes a certificate into %s", name)
}

func assertNoConfigurations(t *testing.T, op *testenv.Operator) {
	t.Helper()
	for _, obj := range configurations() {
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); !apierrors.IsNotFound(err) {
			t.Errorf("%s exists (err %v): the operator must not create the installer's configurations", obj.GetName(), err)
		}
	}
	for _, w := range op.WritesSince(0) {
		if strings.Contains(w, "webhookconfigurations") && !strings.HasPrefix(w, "PATCH") {
			t.Errorf("the operator wrote a configuration other than by patching its caBundle: %s", w)
		}
	}
}
