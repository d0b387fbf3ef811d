package main

import (
	"crypto/tls"
	"fmt"
	"net"

	"github.com/spf13/pflag"

	"github.com/replaykit/replay/internal/ca"
)

// inboundTLSFlags are the flags that put TLS on `record --inbound`
// listeners: a certificate given, or one from replay's CA.
type inboundTLSFlags struct {
	on        bool
	cert, key string
}

func (f *inboundTLSFlags) addFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&f.on, "inbound-tls", false, "serve TLS on the --inbound listeners (h2 and HTTP/1.1 by ALPN) with a certificate from replay's CA (--ca-dir), or the one of --inbound-cert")
	fs.StringVar(&f.cert, "inbound-cert", "", "for --inbound: serve TLS with the certificate in PEM `FILE` (with --inbound-key)")
	fs.StringVar(&f.key, "inbound-key", "", "for --inbound: the private key in PEM `FILE` of --inbound-cert")
}

// used reports whether TLS was asked for.
func (f *inboundTLSFlags) used() bool { return f.on || f.cert != "" || f.key != "" }

// validate checks the flags go together.
func (f *inboundTLSFlags) validate(inbound int) error {
	switch {
	case (f.cert == "") != (f.key == ""):
		return usagef("record: --inbound-cert and --inbound-key go together")
	case f.used() && inbound == 0:
		return usagef("record: --inbound-tls, --inbound-cert and --inbound-key need an --inbound LISTEN=URL")
	}
	return nil
}

// config returns the server TLS configuration of a listener on listen, and
// the CA that signs its certificate (nil with --inbound-cert).
func (f *inboundTLSFlags) config(caDir, listen string) (*tls.Config, *ca.CA, error) {
	if f.cert != "" {
		cert, err := tls.LoadX509KeyPair(f.cert, f.key)
		if err != nil {
			return nil, nil, fmt.Errorf("record: --inbound-cert: %w", err)
		}
		return &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}, nil, nil
	}
	authority, err := ca.LoadOrCreate(caDir)
	if err != nil {
		return nil, nil, fmt.Errorf("record: --inbound-tls: %w", err)
	}
	host, _, err := net.SplitHostPort(listen)
	if err != nil || host == "" || net.ParseIP(host) != nil && net.ParseIP(host).IsUnspecified() {
		host = "127.0.0.1"
	}
	return authority.TLSConfig(host), authority, nil
}
