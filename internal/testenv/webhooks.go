package testenv

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/internal/await"
	dynamov1alpha1 "github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

// FreePort returns a TCP port on 127.0.0.1 that nothing listens on now.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// OperatorNamespace is the namespace in-process operators run in (the
// default of DYNAMO_SYSTEM_NAMESPACE, as NewOperator passes no environment);
// their webhook certificate Secret lives there.
const OperatorNamespace = "dynamo"

// WebhookArgs are the flags that make an in-process operator serve its
// admission webhooks to the Env's API server: on a free port of 127.0.0.1,
// called by URL, with certificates in a directory of the test's own. It
// makes sure OperatorNamespace exists.
func (e *Env) WebhookArgs(t testing.TB) []string {
	t.Helper()
	return e.WebhookArgsIn(t, t.TempDir())
}

// WebhookArgsIn is WebhookArgs with certificates in certDir: for an
// operator a package shares, which outlives the test that starts it (a
// test's TempDir is removed when that test ends, under the running
// operator); its caller removes certDir once the operator stopped.
func (e *Env) WebhookArgsIn(t testing.TB, certDir string) []string {
	t.Helper()
	port, err := FreePort()
	if err != nil {
		t.Fatalf("finding a free port: %v", err)
	}
	if err := e.EnsureNamespace(context.Background(), OperatorNamespace); err != nil {
		t.Fatal(err)
	}
	return []string{
		"--enable-webhooks=true",
		"--webhook-url-host=127.0.0.1",
		"--webhook-port=" + strconv.Itoa(port),
		"--webhook-cert-dir=" + certDir,
	}
}

// EnsureNamespace creates the namespace unless it exists.
func (e *Env) EnsureNamespace(ctx context.Context, name string) error {
	err := e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	return nil
}

// WaitForWebhooks waits until the API server sends DynamoGraphDeployments
// to an operator's validating webhook: a dry-run create of a graph only the
// webhook rejects (a service name no Service can carry) is denied by it.
func (e *Env) WaitForWebhooks(ctx context.Context, timeout time.Duration) error {
	ns, err := e.CreateNamespace(ctx, "webhook-probe")
	if err != nil {
		return err
	}
	defer e.DeleteNamespace(context.Background(), ns)
	probe := &dynamov1alpha1.DynamoGraphDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: ns},
		Spec: dynamov1alpha1.DynamoGraphDeploymentSpec{
			Services: map[string]*dynamov1alpha1.DynamoComponentDeploymentSharedSpec{"not_a_dns_label": {}},
		},
	}
	return await.Until(ctx, "the operator's webhooks judge a graph", func() error {
		err := e.Client.Create(ctx, probe.DeepCopy(), client.DryRunAll)
		if err != nil && strings.Contains(err.Error(), "admission webhook") && strings.Contains(err.Error(), "denied the request") {
			return nil
		}
		return fmt.Errorf("a graph only the webhook refuses: %v", err)
	}, await.Within(timeout))
}
