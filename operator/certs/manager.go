package certs

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/dynamoctl/dynamo-operator/operator/config"
)

// Options configure the certificate manager.
type Options struct {
	Mode config.WebhookCertMode
	// Namespace and SecretName locate the certificate Secret.
	Namespace  string
	SecretName string
	// CertDir receives tls.crt and tls.key for the webhook server.
	CertDir string
	// Hosts the serving certificate is made for (auto mode): the Service's
	// DNS names and the --webhook-url-host.
	Hosts []string
	// Timing of the auto mode's certificates.
	Timing Timing
	// Validating and Mutating are the desired webhook configurations,
	// without CA bundle.
	Validating *admissionregistrationv1.ValidatingWebhookConfiguration
	Mutating   *admissionregistrationv1.MutatingWebhookConfiguration
	// CertManagerCertificate names the cert-manager Certificate, in
	// Namespace, whose CA cert-manager injects (cert-manager mode).
	CertManagerCertificate string
	// Clock times rotation; the real clock when nil.
	Clock clock.WithTicker
	// InstallerOwnsConfigurations means the installer (the chart) creates,
	// updates and deletes Validating and Mutating: the manager never
	// creates or deletes them and writes only their webhooks' caBundle, in
	// the auto mode. A configuration that does not exist yet keeps the
	// manager not ready and is retried.
	InstallerOwnsConfigurations bool
	// CRDs names the CRDs that convert by webhook (crdinstall's
	// ConvertedNames), and Conversion is this operator's own conversion
	// webhook clientConfig (without caBundle): in the auto mode the
	// manager keeps its bundle injected into each of those CRDs that names
	// Conversion (see crds.go). Empty CRDs: CRDs are never read.
	CRDs       []string
	Conversion *apiextensionsv1.WebhookClientConfig
	// RenderCRD is a CRD of CRDs whole, as its installer applies it, with
	// bundle as its conversion webhook's caBundle (crdinstall's
	// Conversion.RenderConverted), and CRDFieldOwner the installer's field
	// manager: the manager applies that under it, so everything under
	// spec.conversion keeps one owner (see crds.go). Required with CRDs.
	RenderCRD     func(name string, bundle []byte) (*unstructured.Unstructured, error)
	CRDFieldOwner string
	// Leading is closed once this replica leads (the manager's Elected);
	// nil: it always does (one replica, no election). Until then the
	// manager serves the pair it reads from the Secret and leaves the
	// Secret, the configurations' and the CRDs' CA bundles to the leader,
	// so the replicas never race for them. One exception, in the auto
	// mode: while the Secret holds no serving pair at all (a first
	// install), any replica makes one. The election starts only once the
	// manager's caches have synced, and they may need this operator's
	// conversion webhook (objects stored in another version), which serves
	// only with a certificate: waiting for a leader would wait forever.
	Leading <-chan struct{}
}

// Manager keeps the certificate, the cert dir and the webhook
// configurations as the mode wants them. Every replica runs it (it needs no
// leader): each must serve the current pair. Only the leader writes (the
// Secret, the CA bundles); a standby copies the Secret's pair to its cert
// dir and is ready once it has one (see Options.Leading).
type Manager struct {
	o      Options
	cfg    *rest.Config
	scheme *runtime.Scheme
	client client.Client
	log    logr.Logger

	reader client.Reader            // the private cache, once started
	crds   map[string]client.Reader // a cache per CRD name, in the auto mode (watchesCRDs)
	poke   chan struct{}
	ready  atomic.Bool

	mu      sync.Mutex
	trusted map[string]time.Time // CA fingerprint -> in every configuration since

	// The cache may not show our own last write yet; until it does, the
	// Secret we wrote is the truth (see currentSecret).
	written     *corev1.Secret
	replacedRV  string
	writtenOnce bool
	applied     *writes // the configurations', see converge
	// The CRD injector's (crds.go): the bundle it is to inject, a poke, and
	// what it wrote.
	crdWant    atomic.Pointer[[]byte]
	crdPoke    chan struct{}
	crdApplied *writes
}

// Setup adds the certificate manager to mgr and a readiness check that
// passes once the serving pair is on disk and the configurations are right.
func Setup(mgr manager.Manager, o Options) (*Manager, error) {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Mode == config.WebhookCertModeAuto {
		if err := o.Timing.Validate(); err != nil {
			return nil, err
		}
		if len(o.Hosts) == 0 {
			return nil, errors.New("no host names for the serving certificate")
		}
		if len(o.CRDs) > 0 && (o.RenderCRD == nil || o.CRDFieldOwner == "") {
			return nil, errors.New("CRDs to inject the CA into, but no RenderCRD and CRDFieldOwner")
		}
	}
	m := &Manager{
		o:          o,
		cfg:        mgr.GetConfig(),
		scheme:     mgr.GetScheme(),
		client:     mgr.GetClient(),
		log:        mgr.GetLogger().WithName("webhook-certs"),
		poke:       make(chan struct{}, 1),
		trusted:    map[string]time.Time{},
		applied:    &writes{m: map[string]appliedConfiguration{}},
		crdPoke:    make(chan struct{}, 1),
		crdApplied: &writes{m: map[string]appliedConfiguration{}},
	}
	if err := mgr.Add(withWebhooks{m}); err != nil {
		return nil, err
	}
	if err := mgr.AddReadyzCheck("webhook-certs", m.ReadyCheck); err != nil {
		return nil, err
	}
	return m, nil
}

// withWebhooks makes the manager start the certificate manager with the
// webhook servers, before it waits for its caches to sync, rather than
// after (where a runnable that needs no leader goes). The caches list the
// graphs and components in v1alpha1: those stored in another version
// (Dynamo's v1beta1, before the storage migration) are converted by this
// operator's own webhook, which serves once this manager has put the
// serving pair on disk and injected the CA into the CRDs. Started after
// the caches, it would wait for them, and they for it.
type withWebhooks struct{ *Manager }

// Register, StartedChecker and WebhookMux complete webhook.Server: nothing
// is served here, the manager only starts it in that group.
func (withWebhooks) Register(string, http.Handler)   {}
func (withWebhooks) StartedChecker() healthz.Checker { return healthz.Ping }
func (withWebhooks) WebhookMux() *http.ServeMux      { return nil }

var _ webhook.Server = withWebhooks{}

// NeedLeaderElection is false: every replica serves webhooks.
func (m *Manager) NeedLeaderElection() bool { return false }

// ReadyCheck fails until the serving pair is on disk and, on the leader,
// the webhook configurations have been made right once; in the auto mode
// also until every CA bundle the API server calls this replica with trusts
// the pair's CA (setReady).
func (m *Manager) ReadyCheck(*http.Request) error {
	if !m.ready.Load() {
		return errors.New("webhook certificate not ready")
	}
	return nil
}

// Start watches the Secret and the two configurations (by name only), and
// in the auto mode the CRDs it may serve conversion for (each by name), and
// reconciles on every change of theirs and whenever rotation is due.
func (m *Manager) Start(ctx context.Context) error {
	c, err := startCache(ctx, m.cfg, cache.Options{
		Scheme: m.scheme,
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Secret{}: {
				Namespaces: map[string]cache.Config{m.o.Namespace: {}},
				Field:      byName(m.o.SecretName),
			},
			&admissionregistrationv1.ValidatingWebhookConfiguration{}: {Field: byName(m.o.Validating.Name)},
			&admissionregistrationv1.MutatingWebhookConfiguration{}:   {Field: byName(m.o.Mutating.Name)},
		},
	}, m.pokeOn, &corev1.Secret{}, &admissionregistrationv1.ValidatingWebhookConfiguration{}, &admissionregistrationv1.MutatingWebhookConfiguration{})
	if err != nil {
		return err
	}
	m.reader = c
	if m.watchesCRDs() {
		if m.crds, err = m.startCRDCaches(ctx, m.pokeOn); err != nil {
			return err
		}
		go m.runCRDInjector(ctx)
	}

	if m.o.Leading != nil {
		// Elected: write what a standby left to the leader, at once.
		go func() {
			select {
			case <-ctx.Done():
			case <-m.o.Leading:
				m.Poke()
			}
		}()
	}

	backoff := time.Second
	for {
		wake, err := m.reconcile(ctx)
		now := m.o.Clock.Now()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			passesTotal.WithLabelValues(passError).Inc()
			m.log.Error(err, "Reconciling the webhook certificate", "retryIn", backoff)
			wake = now.Add(backoff)
			backoff = min(2*backoff, 30*time.Second)
		} else {
			passesTotal.WithLabelValues(passOK).Inc()
			backoff = time.Second
		}
		timer := m.o.Clock.NewTimer(max(wake.Sub(now), 0))
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case <-m.poke:
		case <-timer.C():
		}
		timer.Stop()
	}
}

func (m *Manager) pokeOn(any) { m.Poke() }

func byName(name string) fields.Selector { return fields.OneTermEqualSelector("metadata.name", name) }

// startCache starts a cache with opts that calls poke on every change of
// the objects of watched's kinds, and waits until it has synced. It stops
// with ctx.
func startCache(ctx context.Context, cfg *rest.Config, opts cache.Options, poke func(any), watched ...client.Object) (cache.Cache, error) {
	c, err := cache.New(cfg, opts)
	if err != nil {
		return nil, err
	}
	for _, obj := range watched {
		inf, err := c.GetInformer(ctx, obj)
		if err != nil {
			return nil, err
		}
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc: poke, DeleteFunc: poke, UpdateFunc: func(_, o any) { poke(o) },
		}); err != nil {
			return nil, err
		}
	}
	cacheDone := make(chan error, 1)
	go func() { cacheDone <- c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		return nil, errors.Join(errors.New("webhook certificate caches did not sync"), <-cacheDone)
	}
	return c, nil
}

// Poke makes the manager reconcile now.
func (m *Manager) Poke() {
	select {
	case m.poke <- struct{}{}:
	default:
	}
}

// leading reports whether this replica leads (Options.Leading).
func (m *Manager) leading() bool {
	if m.o.Leading == nil {
		return true
	}
	select {
	case <-m.o.Leading:
		return true
	default:
		return false
	}
}

// reconcile makes one pass and returns when the next one is due at the latest.
func (m *Manager) reconcile(ctx context.Context) (time.Time, error) {
	now := m.o.Clock.Now()
	secret, err := m.currentSecret(ctx)
	if err != nil {
		return now, err
	}
	if !m.leading() && (m.o.Mode != config.WebhookCertModeAuto || hasServingPair(secret)) {
		return m.serveAsStandby(ctx, secret, now)
	}
	wake := now.Add(10 * time.Minute)
	var bundle, certPEM, keyPEM []byte
	var cas []*x509.Certificate
	var servingCert *x509.Certificate
	if m.o.Mode == config.WebhookCertModeAuto {
		var data map[string][]byte
		if secret != nil {
			data = secret.Data
		}
		a := loadAuthority(data)
		changed, w, err := plan(a, now, m.o.Timing, m.o.Hosts, m.trustedSince)
		if err != nil {
			return now, err
		}
		wake = w
		if changed {
			if err := m.writeSecret(ctx, secret, a.data()); err != nil {
				return now, err
			}
			m.log.Info("Wrote the webhook certificate", "secret", m.o.Namespace+"/"+m.o.SecretName,
				"notAfter", a.serving.cert.NotAfter, "trustedCAs", len(a.bundle), "nextCAPending", a.next != nil)
		}
		bundle, certPEM, keyPEM, cas, servingCert = encodeCerts(a.bundle), a.serving.certPEM, a.serving.keyPEM, a.bundle, a.serving.cert
	} else if secret != nil {
		certPEM, keyPEM = secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey]
	}

	if err := m.servePair(certPEM, keyPEM); err != nil {
		return now, err
	}
	bundles, err := m.ensureConfigurations(ctx, bundle, now)
	if err != nil {
		return now, err
	}
	m.setReady(certPEM, servingCert, cas, bundles)
	return wake, nil
}

// setReady records whether this replica can serve: with a serving pair
// and, in the auto mode, once every bundle the API server calls it with
// holds the CA that signed serving (recordTrust's record, taken from the
// bundles of this pass). Until then the API server refuses to call it
// ("x509: certificate signed by unknown authority"), so it is not ready:
// `helm install --wait` returning before would leave the first graph's
// create refused. With no bundle at all (nothing installed calls the
// operator yet) there is nothing to wait for. Outside auto mode the pair
// may come from a mounted Secret volume rather than the Secret read here,
// and the CA is the installer's to inject.
func (m *Manager) setReady(certPEM []byte, serving *x509.Certificate, cas []*x509.Certificate, bundles [][]byte) {
	if m.o.Mode != config.WebhookCertModeAuto {
		m.ready.Store(len(certPEM) > 0 || pairInDir(m.o.CertDir))
		return
	}
	ready := false
	if serving != nil {
		if issuer := issuerOf(serving, cas); issuer != "" {
			_, trusted := m.trustedSince(issuer)
			ready = trusted || len(bundles) == 0
		}
	}
	if ready != m.ready.Load() && !ready {
		m.log.Info("Not ready: the API server does not trust the serving certificate's CA everywhere yet")
	}
	m.ready.Store(ready)
}

// hasServingPair reports whether secret holds a serving certificate and
// its key (auto mode).
func hasServingPair(secret *corev1.Secret) bool {
	return secret != nil && loadAuthority(secret.Data).serving != nil
}

// serveAsStandby is a pass of a replica that does not lead: it copies the
// Secret's serving pair to the cert dir and writes nothing to the API
// server. It rotates nothing either: the leader does, and the Secret's
// change pokes this pass again; so does the election. In the auto mode it
// is called only with a pair in the Secret (hasServingPair).
func (m *Manager) serveAsStandby(ctx context.Context, secret *corev1.Secret, now time.Time) (time.Time, error) {
	wake := now.Add(10 * time.Minute)
	var certPEM, keyPEM []byte
	var a *authority
	if secret != nil {
		if a = loadAuthority(secret.Data); m.o.Mode == config.WebhookCertModeAuto && a.serving != nil {
			certPEM, keyPEM = a.serving.certPEM, a.serving.keyPEM
		} else if m.o.Mode != config.WebhookCertModeAuto {
			certPEM, keyPEM = secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey]
		}
	}
	if err := m.servePair(certPEM, keyPEM); err != nil {
		return now, err
	}
	var bundles [][]byte
	var cas []*x509.Certificate
	var servingCert *x509.Certificate
	if m.o.Mode == config.WebhookCertModeAuto && a != nil && a.serving != nil {
		var err error
		if bundles, err = m.liveBundles(ctx, encodeCerts(a.bundle)); err != nil {
			return now, err
		}
		// Observed only: what the bundles trust, for readiness now and for
		// the rotation once this replica leads.
		m.recordTrust(bundles, now)
		cas, servingCert = a.bundle, a.serving.cert
	}
	m.setReady(certPEM, servingCert, cas, bundles)
	return wake, nil
}

// servePair puts the serving pair, when there is one, in the cert dir.
func (m *Manager) servePair(certPEM, keyPEM []byte) error {
	if len(certPEM) == 0 || len(keyPEM) == 0 {
		return nil
	}
	if _, err := writePair(m.o.CertDir, certPEM, keyPEM); err != nil {
		if m.o.Mode == config.WebhookCertModeAuto {
			return fmt.Errorf("writing the serving certificate to %s: %w", m.o.CertDir, err)
		}
		// A mounted Secret volume is read-only and already current.
		m.log.V(1).Info("Not copying the certificate Secret to the cert dir", "dir", m.o.CertDir, "reason", err.Error())
	}
	return nil
}

// currentSecret reads the Secret from the cache, or the one this manager
// wrote last while the cache still shows the version that write replaced.
func (m *Manager) currentSecret(ctx context.Context) (*corev1.Secret, error) {
	s := &corev1.Secret{}
	err := m.reader.Get(ctx, client.ObjectKey{Namespace: m.o.Namespace, Name: m.o.SecretName}, s)
	if apierrors.IsNotFound(err) {
		s, err = nil, nil
	}
	if err != nil {
		return nil, err
	}
	if m.writtenOnce {
		rv := ""
		if s != nil {
			rv = s.ResourceVersion
		}
		if rv == m.replacedRV {
			return m.written.DeepCopy(), nil
		}
		m.writtenOnce, m.written = false, nil
	}
	return s, nil
}

// writeSecret creates or updates the Secret; a conflict means another
// replica wrote first, and the next pass starts from its version.
func (m *Manager) writeSecret(ctx context.Context, current *corev1.Secret, data map[string][]byte) error {
	var s *corev1.Secret
	replaced := ""
	if current == nil {
		s = &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: m.o.Namespace, Name: m.o.SecretName,
				Labels: map[string]string{"app.kubernetes.io/managed-by": FieldOwner}},
			Type: corev1.SecretTypeTLS,
			Data: data,
		}
		if err := m.client.Create(ctx, s); err != nil {
			return fmt.Errorf("creating Secret %s/%s: %w", m.o.Namespace, m.o.SecretName, err)
		}
	} else {
		replaced = current.ResourceVersion
		s = current.DeepCopy()
		s.Data = data
		if err := m.client.Update(ctx, s); err != nil {
			return fmt.Errorf("updating Secret %s/%s: %w", m.o.Namespace, m.o.SecretName, err)
		}
	}
	m.written, m.replacedRV, m.writtenOnce = s.DeepCopy(), replaced, true
	return nil
}
