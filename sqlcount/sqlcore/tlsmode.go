package sqlcore

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
)

// The TLS modes toward the server, named as libpq's sslmode.
const (
	TLSDisable    = "disable"     // in the clear
	TLSRequire    = "require"     // encrypted, the certificate not verified
	TLSVerifyFull = "verify-full" // encrypted, certificate and host name verified
)

// UpstreamTLSConfig returns Config.UpstreamTLS for a TLS mode: nil for
// TLSDisable (or ""), encrypted whoever answers for TLSRequire, and
// verified against roots (nil: the system's) for TLSVerifyFull.
func UpstreamTLSConfig(mode string, roots *x509.CertPool) (*tls.Config, error) {
	switch mode {
	case "", TLSDisable:
		return nil, nil
	case TLSRequire:
		// As libpq's sslmode=require: encrypted, whoever answers.
		return &tls.Config{InsecureSkipVerify: true}, nil
	case TLSVerifyFull:
		return &tls.Config{RootCAs: roots}, nil
	}
	return nil, fmt.Errorf("upstream TLS mode %q: want %s, %s or %s", mode, TLSDisable, TLSRequire, TLSVerifyFull)
}
