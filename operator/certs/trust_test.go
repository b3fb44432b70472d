package certs

import (
	"crypto/x509"
	"testing"
	"time"
)

// A CA counts as trusted only from the moment every bundle holds it: the
// webhook configurations' and the CRDs' conversion webhook's alike, so a new
// CA the CRDs do not hold yet never signs the certificate conversion
// requests are sent to.
func TestTrustWaitsForEveryBundle(t *testing.T) {
	now := time.Now()
	oldCA, err := newCA(now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	nextCA, err := newCA(now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	old := encodeCerts([]*x509.Certificate{oldCA.cert})
	both := encodeCerts([]*x509.Certificate{oldCA.cert, nextCA.cert})
	m := &Manager{trusted: map[string]time.Time{}}
	next := fingerprint(nextCA.cert)

	// Configurations updated, the CRD not yet.
	m.recordTrust([][]byte{both, both, old}, now)
	if _, ok := m.trustedSince(next); ok {
		t.Fatal("the new CA counts as trusted while the CRD's bundle lacks it")
	}
	if _, ok := m.trustedSince(fingerprint(oldCA.cert)); !ok {
		t.Fatal("the old CA, in every bundle, is not trusted")
	}
	later := now.Add(time.Second)
	m.recordTrust([][]byte{both, both, both}, later)
	if since, ok := m.trustedSince(next); !ok || !since.Equal(later) {
		t.Fatalf("the new CA trusted since %v (%t), want %v", since, ok, later)
	}
	// A user edits the CRD's bundle away: the new CA is trusted no more.
	m.recordTrust([][]byte{both, both, old}, later.Add(time.Second))
	if _, ok := m.trustedSince(next); ok {
		t.Fatal("the new CA still counts as trusted after the CRD lost it")
	}
}
