package certs

import (
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	corev1 "k8s.io/api/core/v1"
)

// ServeFromDir returns a TLS option that serves the pair tls.crt/tls.key of
// dir. The files are checked (stat) on every handshake and read again when
// they changed, so a renewed certificate (written by this package, by
// cert-manager through a mounted Secret, or by hand) is served from the next
// connection on without a restart, and without the delay of a polling
// watcher. A pair that does not load (say, the certificate renamed into
// place but not yet its key) leaves the previous pair in use.
func ServeFromDir(dir string) func(*tls.Config) {
	r := &reloader{certFile: filepath.Join(dir, corev1.TLSCertKey), keyFile: filepath.Join(dir, corev1.TLSPrivateKeyKey)}
	return func(c *tls.Config) { c.GetCertificate = r.getCertificate }
}

type reloader struct {
	certFile, keyFile string

	mu    sync.Mutex
	stamp string
	cert  *tls.Certificate
}

func (r *reloader) getCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	stamp, err := fileStamp(r.certFile, r.keyFile)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil && stamp == r.stamp && r.cert != nil {
		return r.cert, nil
	}
	if err == nil {
		var pair tls.Certificate
		if pair, err = tls.LoadX509KeyPair(r.certFile, r.keyFile); err == nil {
			r.cert, r.stamp = &pair, stamp
			return r.cert, nil
		}
	}
	if r.cert != nil {
		return r.cert, nil
	}
	return nil, fmt.Errorf("no webhook serving certificate yet: %w", err)
}

// fileStamp identifies the current content of the files: inode (renames),
// size and modification time (in-place writes).
func fileStamp(paths ...string) (string, error) {
	var s string
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return "", err
		}
		var ino uint64
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			ino = st.Ino
		}
		s += fmt.Sprintf("%d/%d/%d;", ino, fi.Size(), fi.ModTime().UnixNano())
	}
	return s, nil
}
