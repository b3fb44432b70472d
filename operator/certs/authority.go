package certs

import (
	"crypto/x509"
	"fmt"
	"net"
	"slices"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Keys of the auto mode's Secret. tls.crt and tls.key make it a
// kubernetes.io/tls Secret that could also be mounted directly.
const (
	// KeyCABundle holds every CA the webhook configurations trust.
	KeyCABundle = "ca.crt"
	// keyCAKey is the key of the CA that signs serving certificates.
	keyCAKey = "ca.key"
	// keyNextCAKey is the key of a new CA already in the bundle that signs
	// only once the bundle has reached the API server (Timing.Grace).
	keyNextCAKey = "ca-next.key"
)

// Timing is how long certificates of the auto mode live.
type Timing struct {
	// CAValidity is the lifetime of a CA.
	CAValidity time.Duration
	// CertValidity is the lifetime of a serving certificate.
	CertValidity time.Duration
}

// Grace is how long a new CA must have been in the injected bundle before
// it signs: the time API servers are given to see the new bundle.
func (t Timing) Grace() time.Duration { return min(time.Minute, t.CertValidity/4) }

// CertRenewBefore: a serving certificate is renewed when a third of its
// life is left.
func (t Timing) CertRenewBefore() time.Duration { return t.CertValidity / 3 }

// CARenewBefore: the next CA is made early enough that the current one
// outlives its grace and every serving certificate it signed.
func (t Timing) CARenewBefore() time.Duration { return t.CertValidity + 2*t.Grace() }

// Validate reports timings under which rotation could not be seamless.
func (t Timing) Validate() error {
	if t.CertValidity <= 0 {
		return fmt.Errorf("certificate validity must be positive, got %s", t.CertValidity)
	}
	if t.CAValidity < 2*t.CARenewBefore() {
		return fmt.Errorf("CA validity %s must be at least %s (twice the certificate validity %s plus 4 grace periods of %s)",
			t.CAValidity, 2*t.CARenewBefore(), t.CertValidity, t.Grace())
	}
	return nil
}

// authority is the auto mode's state, as stored in its Secret.
type authority struct {
	bundle  []*x509.Certificate // every trusted CA, oldest first
	active  *keyPair            // signs serving certificates
	next    *keyPair            // in the bundle, not signing yet
	serving *keyPair
}

// loadAuthority reads what is usable from a Secret's data; anything missing
// or corrupt is left nil and plan replaces it.
func loadAuthority(data map[string][]byte) *authority {
	a := &authority{}
	if data == nil {
		return a
	}
	a.bundle, _ = ParseCertificates(data[KeyCABundle])
	findCA := func(keyPEM []byte) *keyPair {
		key, err := ParsePrivateKey(keyPEM)
		if err != nil {
			return nil
		}
		for _, c := range a.bundle {
			if matches(c, key) {
				return &keyPair{cert: c, key: key, keyPEM: keyPEM}
			}
		}
		return nil
	}
	a.active = findCA(data[keyCAKey])
	a.next = findCA(data[keyNextCAKey])
	if certs, err := ParseCertificates(data[corev1.TLSCertKey]); err == nil {
		if key, err := ParsePrivateKey(data[corev1.TLSPrivateKeyKey]); err == nil && matches(certs[0], key) {
			a.serving = &keyPair{cert: certs[0], key: key, certPEM: data[corev1.TLSCertKey], keyPEM: data[corev1.TLSPrivateKeyKey]}
		}
	}
	return a
}

// data is the Secret's data for a.
func (a *authority) data() map[string][]byte {
	d := map[string][]byte{
		KeyCABundle:             encodeCerts(a.bundle),
		keyCAKey:                a.active.keyPEM,
		corev1.TLSCertKey:       a.serving.certPEM,
		corev1.TLSPrivateKeyKey: a.serving.keyPEM,
	}
	if a.next != nil {
		d[keyNextCAKey] = a.next.keyPEM
	}
	return d
}

// plan moves a one step toward what it should be at now, and returns
// whether it changed and when plan should run again at the latest.
//
// trustedSince reports since when a CA (by fingerprint) has been in the CA
// bundle of every webhook configuration; only then, after Grace, may it sign.
func plan(a *authority, now time.Time, t Timing, hosts []string, trustedSince func(fp string) (time.Time, bool)) (changed bool, wake time.Time, err error) {
	if changed, err = ensureCAs(a, now, t); err != nil {
		return false, now, err
	}
	w := wakeAt{at: now.Add(t.CAValidity)}
	changed = rotateCA(a, now, t, trustedSince, &w) || changed
	changed = pruneBundle(a, now, &w) || changed
	served, err := ensureServing(a, now, t, hosts)
	if err != nil {
		return false, now, err
	}
	w.soonest(a.serving.cert.NotAfter.Add(-t.CertRenewBefore()))
	return changed || served, w.at, nil
}

// wakeAt is the soonest time a plan must be made again.
type wakeAt struct{ at time.Time }

func (w *wakeAt) soonest(at time.Time) {
	if at.Before(w.at) {
		w.at = at
	}
}

// ensureCAs makes an active CA when there is no usable one, and the next
// CA once the active one is due for renewal.
func ensureCAs(a *authority, now time.Time, t Timing) (changed bool, err error) {
	valid := func(c *x509.Certificate) bool { return now.Before(c.NotAfter) }
	// No usable CA (first start, a lost or corrupt Secret): start over.
	// Nothing trusts the old serving certificate's chain any more anyway.
	if a.active == nil || !valid(a.active.cert) {
		ca, err := newCA(now, t.CAValidity)
		if err != nil {
			return false, err
		}
		a.active, a.next, a.serving = ca, nil, nil
		a.bundle = append(slices.DeleteFunc(a.bundle, func(c *x509.Certificate) bool { return !valid(c) }), ca.cert)
		changed = true
	}
	// The next CA is made well before the active one expires, and signs
	// once the API servers have had Grace to trust it (rotateCA).
	if a.next == nil && !now.Before(a.active.cert.NotAfter.Add(-t.CARenewBefore())) {
		ca, err := newCA(now, t.CAValidity)
		if err != nil {
			return false, err
		}
		a.next = ca
		a.bundle = append(a.bundle, ca.cert)
		changed = true
	}
	return changed, nil
}

// rotateCA makes the next CA the active one once the API servers have
// trusted it for Grace, and says when to look again.
func rotateCA(a *authority, now time.Time, t Timing, trustedSince func(fp string) (time.Time, bool), w *wakeAt) (changed bool) {
	if a.next != nil {
		since, ok := trustedSince(fingerprint(a.next.cert))
		switch {
		case ok && !now.Before(since.Add(t.Grace())):
			a.active, a.next, a.serving = a.next, nil, nil
			changed = true
		case ok:
			w.soonest(since.Add(t.Grace()))
		default:
			// Woken when the bundle is seen injected; check again anyway.
			w.soonest(now.Add(t.Grace()))
		}
	}
	if a.next == nil {
		w.soonest(a.active.cert.NotAfter.Add(-t.CARenewBefore()))
	}
	return changed
}

// pruneBundle drops expired CAs from the bundle, and wakes when the next
// one expires.
func pruneBundle(a *authority, now time.Time, w *wakeAt) (changed bool) {
	valid := func(c *x509.Certificate) bool { return now.Before(c.NotAfter) }
	kept := slices.DeleteFunc(slices.Clone(a.bundle), func(c *x509.Certificate) bool {
		return !valid(c) && c != a.active.cert && (a.next == nil || c != a.next.cert)
	})
	if len(kept) != len(a.bundle) {
		a.bundle, changed = kept, true
	}
	for _, c := range a.bundle {
		if valid(c) {
			w.soonest(c.NotAfter)
		}
	}
	return changed
}

// ensureServing issues a serving certificate when there is none signed by
// the active CA for hosts, or it is due for renewal.
func ensureServing(a *authority, now time.Time, t Timing, hosts []string) (changed bool, err error) {
	if a.serving == nil || a.serving.cert.CheckSignatureFrom(a.active.cert) != nil ||
		!now.Before(a.serving.cert.NotAfter.Add(-t.CertRenewBefore())) || !sameHosts(a.serving.cert, hosts) {
		s, err := newServing(a.active, hosts, now, t.CertValidity)
		if err != nil {
			return false, err
		}
		a.serving = s
		return true, nil
	}
	return false, nil
}

func sameHosts(c *x509.Certificate, hosts []string) bool {
	have := slices.Clone(c.DNSNames)
	for _, ip := range c.IPAddresses {
		have = append(have, ip.String())
	}
	// IP hosts compare in canonical form ("::FFFF:127.0.0.1" is
	// 127.0.0.1), or a certificate would be issued again on every pass.
	want := make([]string, 0, len(hosts))
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			h = ip.String()
		}
		want = append(want, h)
	}
	sort.Strings(have)
	sort.Strings(want)
	return slices.Equal(have, want)
}
