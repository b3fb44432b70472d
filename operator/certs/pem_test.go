package certs_test

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
)

func parseAll(data []byte) []*x509.Certificate {
	var out []*x509.Certificate
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return out
		}
		if c, err := x509.ParseCertificate(b.Bytes); err == nil {
			out = append(out, c)
		}
	}
}

func parseFirst(data []byte) (*x509.Certificate, error) {
	all := parseAll(data)
	if len(all) == 0 {
		return nil, errors.New("no certificate")
	}
	return all[0], nil
}
