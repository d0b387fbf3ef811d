package ca

import (
	"crypto/tls"
	"fmt"

	"github.com/elazarl/goproxy"
)

// TLSConfig returns a server configuration that presents Leaf(SNI), or
// Leaf(fallbackHost) when the client sends no server name (as clients do
// when they connect to an IP address).
func (c *CA) TLSConfig(fallbackHost string) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
			name := hello.ServerName
			if name == "" {
				name = fallbackHost
			}
			return c.Leaf(name)
		},
	}
}

// MITM returns a goproxy CONNECT action that intercepts the tunnel, serving
// leaves signed by this CA; use it from
// proxy.OnRequest().HandleConnectFunc. Leaves are signed during the TLS
// handshake, for the name the client asks for.
func (c *CA) MITM() *goproxy.ConnectAction {
	return &goproxy.ConnectAction{
		Action: goproxy.ConnectMitm,
		TLSConfig: func(host string, _ *goproxy.ProxyCtx) (*tls.Config, error) {
			if _, err := normalizeHost(host); err != nil {
				return nil, fmt.Errorf("intercept CONNECT %s: %w", host, err)
			}
			return c.TLSConfig(host), nil
		},
	}
}
