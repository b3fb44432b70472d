package certs

import (
	"crypto/x509"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

var testHosts = []string{"127.0.0.1", "svc.ns.svc"}

func verifies(serving *x509.Certificate, bundle []*x509.Certificate, at time.Time) error {
	pool := x509.NewCertPool()
	for _, c := range bundle {
		pool.AddCert(c)
	}
	_, err := serving.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: at, DNSName: "svc.ns.svc"})
	return err
}

func TestTimingValidate(t *testing.T) {
	if err := (Timing{CertValidity: 4 * time.Second, CAValidity: 12 * time.Second}).Validate(); err != nil {
		t.Error(err)
	}
	if err := (Timing{CertValidity: 4 * time.Second, CAValidity: 11 * time.Second}).Validate(); err == nil {
		t.Error("a CA shorter than two certificate lifetimes plus grace was accepted")
	}
}

// TestPlanStartsFromNothingAndFromGarbage: a missing or corrupt Secret gives
// a fresh CA and serving certificate for the hosts.
func TestPlanStartsFromNothingAndFromGarbage(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	timing := Timing{CertValidity: time.Hour, CAValidity: 10 * time.Hour}
	for name, data := range map[string]map[string][]byte{
		"empty":   nil,
		"garbage": {KeyCABundle: []byte("x"), keyCAKey: []byte("y"), "tls.crt": []byte("z")},
	} {
		a := loadAuthority(data)
		changed, wake, err := plan(a, now, timing, testHosts, func(string) (time.Time, bool) { return time.Time{}, false })
		if err != nil || !changed {
			t.Fatalf("%s: changed=%v err=%v", name, changed, err)
		}
		if len(a.bundle) != 1 || a.next != nil || verifies(a.serving.cert, a.bundle, now) != nil {
			t.Errorf("%s: bundle %d next %v", name, len(a.bundle), a.next)
		}
		if !sameHosts(a.serving.cert, testHosts) {
			t.Errorf("%s: hosts %v %v", name, a.serving.cert.DNSNames, a.serving.cert.IPAddresses)
		}
		if want := now.Add(timing.CertValidity - timing.CertRenewBefore()); !wake.Equal(want) {
			t.Errorf("%s: wake %v, want %v", name, wake, want)
		}
		// Read back from its own data, nothing is due.
		b := loadAuthority(a.data())
		if changed, _, _ := plan(b, now.Add(time.Minute), timing, testHosts, nil); changed {
			t.Errorf("%s: a fresh authority changed again", name)
		}
	}
}

// TestRotationNeverServesAnUntrustedCertificate runs the auto mode through
// several CA lifetimes on a fake clock, with API servers that see a bundle
// only some time after it is injected, and checks at every step that the
// certificate served then verifies against the bundle the API server has.
func TestRotationNeverServesAnUntrustedCertificate(t *testing.T) {
	timing := Timing{CertValidity: 4 * time.Minute, CAValidity: 12 * time.Minute}
	lag := timing.Grace() / 2 // API servers see a bundle this long after injection
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))

	type injection struct {
		at     time.Time
		bundle []*x509.Certificate
	}
	var injected []injection
	trusted := map[string]time.Time{}
	trustedSince := func(fp string) (time.Time, bool) { t, ok := trusted[fp]; return t, ok }
	apiServerBundle := func(now time.Time) []*x509.Certificate {
		var b []*x509.Certificate
		for _, in := range injected {
			if !now.Before(in.at.Add(lag)) {
				b = in.bundle
			}
		}
		return b
	}

	a := loadAuthority(nil)
	var data map[string][]byte
	servings, cas := map[string]bool{}, map[string]bool{}
	for clk.Now().Before(time.Date(2026, 1, 1, 1, 0, 0, 0, time.UTC)) {
		now := clk.Now()
		a = loadAuthority(data) // every pass starts from the stored Secret
		changed, wake, err := plan(a, now, timing, testHosts, trustedSince)
		if err != nil {
			t.Fatal(err)
		}
		if changed {
			data = a.data()
			injected = append(injected, injection{at: now, bundle: a.bundle})
			for _, c := range a.bundle {
				if _, ok := trusted[fingerprint(c)]; !ok {
					trusted[fingerprint(c)] = now
				}
			}
		}
		servings[fingerprint(a.serving.cert)] = true
		for _, c := range a.bundle {
			cas[fingerprint(c)] = true
		}
		// Until the first bundle arrives, the API server calls no webhook.
		if seen := apiServerBundle(now); seen != nil {
			if err := verifies(a.serving.cert, seen, now); err != nil {
				t.Fatalf("at %v the served certificate does not verify against the API server's bundle: %v", now, err)
			}
		}
		if !wake.After(now) {
			t.Fatalf("at %v plan asked to wake at %v", now, wake)
		}
		// Step in small increments, never past the wake-up.
		clk.SetTime(minTime(wake, now.Add(timing.Grace()/3)))
	}
	if len(cas) < 4 || len(servings) < 10 {
		t.Errorf("over an hour: %d CAs and %d serving certificates", len(cas), len(servings))
	}
	if n := len(loadAuthority(data).bundle); n > 2 {
		t.Errorf("expired CAs kept: %d in the bundle", n)
	}
	t.Logf("%d CAs, %d serving certificates, none ever untrusted", len(cas), len(servings))
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// TestPlanReissuesForNewHosts: a changed --webhook-url-host or Service
// name gets a certificate for the new names.
func TestPlanReissuesForNewHosts(t *testing.T) {
	now := time.Now()
	timing := Timing{CertValidity: time.Hour, CAValidity: 10 * time.Hour}
	a := loadAuthority(nil)
	if _, _, err := plan(a, now, timing, testHosts, nil); err != nil {
		t.Fatal(err)
	}
	old := a.serving.cert
	changed, _, _ := plan(a, now, timing, []string{"other.ns.svc"}, nil)
	if !changed || a.serving.cert == old || a.serving.cert.DNSNames[0] != "other.ns.svc" {
		t.Errorf("hosts change: changed=%v names=%v", changed, a.serving.cert.DNSNames)
	}
}
