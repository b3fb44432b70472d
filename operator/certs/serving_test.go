package certs

import (
	"crypto/tls"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func servingPair(t *testing.T) *keyPair {
	t.Helper()
	ca, err := newCA(time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	p, err := newServing(ca, testHosts, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func served(t *testing.T, cfg *tls.Config) string {
	t.Helper()
	c, err := cfg.GetCertificate(&tls.ClientHelloInfo{})
	if err != nil {
		t.Fatal(err)
	}
	return c.Leaf.SerialNumber.String()
}

// The webhook server serves whatever pair is in the directory now, without
// a restart, and keeps the last good pair while the directory holds a
// mismatched one.
func TestServeFromDirReloadsChangedFiles(t *testing.T) {
	dir := t.TempDir()
	cfg := &tls.Config{}
	ServeFromDir(dir)(cfg)
	if _, err := cfg.GetCertificate(&tls.ClientHelloInfo{}); err == nil {
		t.Fatal("a certificate was served from an empty directory")
	}

	first, second := servingPair(t), servingPair(t)
	if wrote, err := writePair(dir, first.certPEM, first.keyPEM); err != nil || !wrote {
		t.Fatalf("wrote=%v err=%v", wrote, err)
	}
	if got := served(t, cfg); got != first.cert.SerialNumber.String() {
		t.Errorf("served %s, want the first pair", got)
	}
	if wrote, _ := writePair(dir, first.certPEM, first.keyPEM); wrote {
		t.Error("an unchanged pair was written again")
	}

	// Half a rotation: the new key next to the old certificate.
	if err := writeAtomic(filepath.Join(dir, "tls.key"), second.keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if got := served(t, cfg); got != first.cert.SerialNumber.String() {
		t.Errorf("a mismatched pair replaced the good one: served %s", got)
	}
	if _, err := writePair(dir, second.certPEM, second.keyPEM); err != nil {
		t.Fatal(err)
	}
	if got := served(t, cfg); got != second.cert.SerialNumber.String() {
		t.Errorf("served %s after rotation, want the second pair", got)
	}
	if fi, err := os.Stat(filepath.Join(dir, "tls.key")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("key file mode: %v %v", fi.Mode(), err)
	}
}

func TestPairInDir(t *testing.T) {
	dir := t.TempDir()
	if pairInDir(dir) {
		t.Fatal("an empty directory holds no pair")
	}
	if _, err := writePair(dir, []byte("cert"), []byte("key")); err != nil {
		t.Fatal(err)
	}
	if !pairInDir(dir) {
		t.Error("a written pair must be found")
	}
}
