package certs_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/onsi/gomega"
	"go.uber.org/zap/zapcore"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/dynamoctl/dynamo-operator/internal/await"
	"github.com/dynamoctl/dynamo-operator/internal/builders"
	"github.com/dynamoctl/dynamo-operator/internal/testenv"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1beta1"
	"github.com/dynamoctl/dynamo-operator/operator/app"
	"github.com/dynamoctl/dynamo-operator/operator/certs"
	"github.com/dynamoctl/dynamo-operator/operator/crdinstall"
	"github.com/dynamoctl/dynamo-operator/operator/webhooks"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	os.Exit(testenv.Run(m, func(e *testenv.Env) { env = e }))
}

// TestRotationLosesNoAdmission runs the operator in the auto cert mode with
// certificates that live seconds, sends admission requests at a steady rate
// through several serving-certificate and CA rotations, and counts the
// failures: there must be none. The operator also serves the CRDs'
// conversion webhook, and reads of a graph in v1beta1 (each one a
// conversion) must not fail either: a new CA must be trusted by the CRDs
// too before it signs. A probe also opens fresh TLS connections, verified
// against the bundle the configuration and the CRD hold at that moment, to
// check the new certificate is served without a restart.
func TestRotationLosesNoAdmission(t *testing.T) {
	testenv.Long(t)
	// Renewal is due a third of a certificate's life before its expiry
	// (10 s) and a new CA waits a quarter of it (7.5 s) in the bundle:
	// margins a loaded CI machine running -race keeps, with the CRD patches
	// a CA change adds to a pass (seconds each on a loaded machine: the
	// CRDs are ~300 kB, and the API server rebuilds what serves them).
	// Shorter lifetimes (12 s) let a served certificate expire at load 30.
	// Three serving rotations and one of the CA fit in the run.
	const (
		certValidity = 30 * time.Second
		caValidity   = 90 * time.Second
		duration     = 75 * time.Second
		interval     = 20 * time.Millisecond
	)
	args := append(env.WebhookArgs(t),
		"--webhook-cert-validity="+certValidity.String(), "--webhook-ca-validity="+caValidity.String())
	op, err := env.NewOperator(args, app.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := op.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		op.Stop()
		deleteConfigurations(t)
	})
	port := webhookPort(t, args)
	env.RouteConversion(t, crdinstall.Conversion{URL: "https://127.0.0.1:" + port})
	ns := env.Namespace(t, "rotation")
	waitForWebhook(t, ns)
	// The CRD must trust what the operator serves before the run counts
	// conversions. Checked by a verified TLS connection, not by comparing
	// bundles: on a loaded machine the start can take long enough for the
	// first CA rotation to begin, and the stored bundle then changes under
	// the comparison.
	await.New(t).Eventually(func() error {
		_, err := dialVerified(port, crdBundle(t, "dynamographdeployments.nvidia.com"))
		return err
	}).Should(gomega.Succeed(), "the CRD's conversion webhook bundle verifies the certificate the operator serves")
	stored := builders.MakeGraph("stored", ns).Service("Frontend", builders.MakeEmptyService()).Obj()
	if err := env.Client.Create(context.Background(), stored); err != nil {
		t.Fatal(err)
	}
	await.New(t).Eventually(func() error {
		return env.Client.Get(context.Background(), client.ObjectKeyFromObject(stored), &v1beta1.DynamoGraphDeployment{})
	}).Should(gomega.Succeed(), "the operator converts")

	var (
		sent, failed, denied  atomic.Int64
		probes, probeFailed   atomic.Int64
		converted, convFailed atomic.Int64
		mu                    sync.Mutex
		failures              []string
		servedSerials         = map[string]bool{}
		storedSerials         = map[string]bool{}
		cas                   = map[string]bool{}
	)
	record := func(format string, a ...any) {
		mu.Lock()
		defer mu.Unlock()
		if len(failures) < 10 {
			failures = append(failures, fmt.Sprintf(format, a...))
		}
	}
	// Admissions must span the whole run, rotations included; how many fit
	// in it depends on the machine's load, so coverage is what is checked:
	// some admission in flight in every span of the run. A request counts
	// for every span from its send to its answer: one the API server took
	// seconds to answer on a loaded machine was at the webhook's mercy all
	// that time.
	const span = 2 * time.Second
	covered := make([]atomic.Int64, int(duration/span))
	start := time.Now()
	inFlight := func(from time.Time) {
		for i := int(from.Sub(start) / span); i <= int(time.Since(start)/span) && i < len(covered); i++ {
			covered[i].Add(1)
		}
	}
	runCtx, stop := context.WithTimeout(ctx, duration)
	defer stop()
	var wg sync.WaitGroup
	every := func(d time.Duration, f func()) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(d)
			defer tick.Stop()
			for {
				select {
				case <-runCtx.Done():
					return
				case <-tick.C:
					f()
				}
			}
		}()
	}

	// Admissions: dry-run creates of a valid graph, and every tenth an
	// invalid one, which only the webhook can deny: a denial proves it ran.
	n := 0
	every(interval, func() {
		n++
		sent.Add(1)
		defer inFlight(time.Now())
		if n%10 == 0 {
			err := env.Client.Create(context.Background(), builders.MakeGraph("bad", ns).Service("my_worker", builders.MakeEmptyService()).Obj(), client.DryRunAll)
			if err != nil && strings.Contains(err.Error(), `admission webhook "validate.dynamographdeployments.nvidia.com" denied the request`) {
				denied.Add(1)
				return
			}
			failed.Add(1)
			record("invalid graph: %v", err)
			return
		}
		dgd := builders.MakeGraph("llm", ns).Service("Frontend", builders.MakeEmptyService()).Obj()
		if err := env.Client.Create(context.Background(), dgd, client.DryRunAll); err != nil {
			failed.Add(1)
			record("valid graph: %v", err)
			return
		}
		if r := dgd.Spec.Services["Frontend"].Replicas; r == nil || *r != 1 {
			failed.Add(1)
			// Seen once in CI (1 of 449): what the mutating configuration
			// held at that moment says whether the API server had a
			// defaulting webhook to call.
			mwc := &admissionregistrationv1.MutatingWebhookConfiguration{}
			err := env.Client.Get(context.Background(), client.ObjectKey{Name: webhooks.MutatingConfigurationName("")}, mwc)
			var hooks []string
			for _, h := range mwc.Webhooks {
				hooks = append(hooks, fmt.Sprintf("%s (caBundle %d bytes)", h.Name, len(h.ClientConfig.CABundle)))
			}
			record("valid graph not defaulted at %s: replicas %v; mutating configuration rv %s webhooks %v (get: %v)",
				time.Since(start).Round(time.Millisecond), r, mwc.ResourceVersion, hooks, err)
		}
	})

	// Conversions: reads of the stored graph in v1beta1.
	every(5*interval, func() {
		err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(stored), &v1beta1.DynamoGraphDeployment{})
		if err != nil {
			convFailed.Add(1)
			record("v1beta1 read: %v", err)
			return
		}
		converted.Add(1)
	})

	// Fresh TLS connections, verified against the bundles injected now.
	probe := func(bundle []byte) {
		probes.Add(1)
		serial, err := dialVerified(port, bundle)
		if err != nil {
			probeFailed.Add(1)
			record("TLS probe: %v", err)
			return
		}
		mu.Lock()
		servedSerials[serial] = true
		mu.Unlock()
	}
	every(100*time.Millisecond, func() {
		vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := env.Client.Get(context.Background(), client.ObjectKey{Name: webhooks.ValidatingConfigurationName("")}, vwc); err != nil {
			probes.Add(1)
			probeFailed.Add(1)
			record("reading the configuration: %v", err)
			return
		}
		probe(vwc.Webhooks[0].ClientConfig.CABundle)
	})
	// The same against the CRD's bundle, less often: reading it reads
	// ~1 MB of schema.
	every(500*time.Millisecond, func() { probe(crdBundle(t, "dynamographdeployments.nvidia.com")) })

	// What the operator stores: serving certificates and CAs.
	every(100*time.Millisecond, func() {
		s := &corev1.Secret{}
		if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: testenv.OperatorNamespace, Name: "dynamo-operator-webhook-cert"}, s); err != nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if served, err := certs.ParseCertificates(s.Data[corev1.TLSCertKey]); err == nil {
			storedSerials[served[0].SerialNumber.String()] = true
		}
		bundle, _ := certs.ParseCertificates(s.Data[certs.KeyCABundle])
		for _, c := range bundle {
			cas[string(c.Signature[:16])] = true
		}
	})
	<-runCtx.Done()
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	servingRotations, caRotations := len(storedSerials)-1, len(cas)-1
	fmt.Printf("admissions sent=%d failed=%d (webhook denials of invalid graphs=%d); conversions sent=%d failed=%d; "+
		"TLS probes=%d failed=%d; serving certificate rotations=%d, CA rotations=%d, certificates served=%d, over %s\n",
		sent.Load(), failed.Load(), denied.Load(), converted.Load()+convFailed.Load(), convFailed.Load(),
		probes.Load(), probeFailed.Load(), servingRotations, caRotations, len(servedSerials), duration)
	for _, f := range failures {
		t.Log(f)
	}
	if failed.Load() > 0 || probeFailed.Load() > 0 || convFailed.Load() > 0 {
		t.Errorf("%d of %d admissions, %d of %d conversions and %d of %d TLS probes failed during rotation", failed.Load(), sent.Load(),
			convFailed.Load(), converted.Load()+convFailed.Load(), probeFailed.Load(), probes.Load())
	}
	if converted.Load() == 0 {
		t.Error("no conversion was made")
	}
	for i := range covered {
		if covered[i].Load() == 0 {
			t.Errorf("no admission was in flight from %s to %s of the run", time.Duration(i)*span, time.Duration(i+1)*span)
		}
	}
	if servingRotations < 2 || caRotations < 1 || len(servedSerials) < 3 {
		t.Errorf("too few rotations to prove anything: serving %d, CA %d, served %d", servingRotations, caRotations, len(servedSerials))
	}
}

// waitForWebhook waits until the API server calls both webhook
// configurations: the validating one denies an invalid graph and the
// mutating one defaults a valid graph. The API server learns of each
// configuration from its own watch, one after the other: CI once saw the
// first valid graph of the run, 93 ms after the validating webhook first
// denied, pass undefaulted.
func waitForWebhook(t *testing.T, ns string) {
	t.Helper()
	await.New(t).Eventually(func(g gomega.Gomega) {
		err := env.Client.Create(context.Background(), builders.MakeGraph("bad", ns).Service("my_worker", builders.MakeEmptyService()).Obj(), client.DryRunAll)
		g.Expect(err).To(gomega.MatchError(gomega.ContainSubstring("denied the request")), "the validating webhook judges")
		dgd := builders.MakeGraph("llm", ns).Service("Frontend", builders.MakeEmptyService()).Obj()
		g.Expect(env.Client.Create(context.Background(), dgd, client.DryRunAll)).To(gomega.Succeed())
		g.Expect(dgd.Spec.Services["Frontend"].Replicas).To(gomega.HaveValue(gomega.BeEquivalentTo(1)), "the mutating webhook defaults replicas")
	}).Should(gomega.Succeed(), "both webhooks act on a graph")
}

// dialVerified opens a TLS connection to the webhook server, verified
// against bundle, and returns the serial of the certificate it serves.
func dialVerified(port string, bundle []byte) (string, error) {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(bundle)
	// The API server allows a webhook call 10 s; on a loaded machine a
	// handshake alone took over 2 s. A probe that fails is one the API
	// server would have failed too.
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", "127.0.0.1:"+port,
		&tls.Config{RootCAs: pool, ServerName: "127.0.0.1"})
	if err != nil {
		return "", err
	}
	defer func() { _ = conn.Close() }()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber.String(), nil
}

func webhookPort(t *testing.T, args []string) string {
	for _, a := range args {
		if p, ok := strings.CutPrefix(a, "--webhook-port="); ok {
			if _, err := strconv.Atoi(p); err == nil {
				return p
			}
		}
	}
	t.Fatal("no --webhook-port")
	return ""
}
