package certs

import (
	"bytes"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
)

// writePair writes the serving pair into dir when it differs from what is
// there, key first: a handshake between the two renames then finds a
// mismatched pair and keeps serving the previous one (see ServeFromDir).
// It reports whether it wrote.
func writePair(dir string, certPEM, keyPEM []byte) (bool, error) {
	certPath, keyPath := filepath.Join(dir, corev1.TLSCertKey), filepath.Join(dir, corev1.TLSPrivateKeyKey)
	haveCert, _ := os.ReadFile(certPath)
	haveKey, _ := os.ReadFile(keyPath)
	if bytes.Equal(haveCert, certPEM) && bytes.Equal(haveKey, keyPEM) {
		return false, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return false, err
	}
	if err := writeAtomic(keyPath, keyPEM, 0o600); err != nil {
		return false, err
	}
	return true, writeAtomic(certPath, certPEM, 0o644)
}

// pairInDir reports whether dir holds a serving certificate and key.
func pairInDir(dir string) bool {
	for _, name := range []string{corev1.TLSCertKey, corev1.TLSPrivateKeyKey} {
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.Size() == 0 {
			return false
		}
	}
	return true
}

// writeAtomic replaces path with data by a rename, so readers see the old or
// the new content, never a part.
func writeAtomic(path string, data []byte, mode os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() { _ = os.Remove(tmp) }()
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Chmod(mode); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
