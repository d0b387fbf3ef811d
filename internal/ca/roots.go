package ca

import (
	"crypto/x509"
	"fmt"
	"os"
)

// RootsWith returns the system's roots plus the CA certificates in the PEM
// file, when one is named (empty: the system's roots alone), for a client
// that must trust a private CA (an upstream's, a database's).
func RootsWith(file string) (*x509.CertPool, error) {
	roots, err := x509.SystemCertPool()
	if err != nil || roots == nil {
		roots = x509.NewCertPool()
	}
	if file == "" {
		return roots, nil
	}
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	if !roots.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s: no PEM certificate in the file", file)
	}
	return roots, nil
}
