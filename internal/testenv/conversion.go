package testenv

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/cert"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/dynamoctl/dynamo-operator/internal/await"
	"github.com/dynamoctl/dynamo-operator/operator/crdinstall"
	"github.com/dynamoctl/dynamo-operator/operator/webhooks"
)

// Every Env's CRDs convert by webhook, and the API server calls that webhook
// not only for a client that asks for another version: the garbage
// collector, the namespace controller and discovery-driven clients read the
// group's preferred version, v1beta1. With no conversion endpoint answering,
// foreground deletion and namespace deletion of graphs hang. So an Env, like
// a cluster whose cluster-wide operator installed the CRDs, has one
// answering for its whole life: unless Options.Conversion names another, it
// serves the operator's own conversion handler itself, on 127.0.0.1. A test
// of an operator's /convert routes conversion to that operator with
// RouteConversion.

// conversionServer serves webhooks.ConversionHandler over TLS on a free port
// of 127.0.0.1.
type conversionServer struct {
	conv   crdinstall.Conversion
	cancel context.CancelFunc
	done   chan error
}

// startConversionServer starts one with a self-signed certificate in dir,
// and returns once it serves.
func startConversionServer(scheme *runtime.Scheme, dir string) (*conversionServer, error) {
	certPEM, keyPEM, err := cert.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.ParseIP("127.0.0.1")}, nil)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	for name, data := range map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return nil, err
		}
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	srv := webhook.NewServer(webhook.Options{Host: "127.0.0.1", Port: port, CertDir: dir})
	srv.Register(webhooks.PathConvert, webhooks.ConversionHandler(scheme, nil))
	ctx, cancel := context.WithCancel(context.Background())
	s := &conversionServer{
		conv:   crdinstall.Conversion{URL: "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), CABundle: certPEM},
		cancel: cancel,
		done:   make(chan error, 1),
	}
	go func() { s.done <- srv.Start(ctx) }()
	started := func() error { return srv.StartedChecker()(nil) }
	if err := await.Until(ctx, fmt.Sprintf("the conversion webhook server starts on port %d", port), started,
		await.Within(10*time.Second), await.Every(20*time.Millisecond)); err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

func (s *conversionServer) stop() {
	s.cancel()
	<-s.done
}

// Conversion is where the Env's CRDs send conversion reviews unless a test
// routes them elsewhere (RouteConversion).
func (e *Env) Conversion() crdinstall.Conversion { return e.conversion }

// ApplyCRDs server-side applies the project's CRDs again, as the operator
// installs them, with their conversion webhook pointing at conv; it waits
// until they are served.
func (e *Env) ApplyCRDs(ctx context.Context, conv crdinstall.Conversion) error {
	return crdinstall.Apply(ctx, e.Client, crdWait, conv)
}

// RouteConversion points the CRDs' conversion webhook at conv (e.g. the
// URL of an operator started with WebhookArgs) until the test ends, then
// back at the Env's own.
func (e *Env) RouteConversion(t testing.TB, conv crdinstall.Conversion) {
	t.Helper()
	if err := e.ApplyCRDs(context.Background(), conv); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.ApplyCRDs(context.Background(), e.conversion); err != nil {
			t.Errorf("routing conversion back to the test environment: %v", err)
		}
	})
}
