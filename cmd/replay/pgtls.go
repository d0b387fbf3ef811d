package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"strings"

	"github.com/spf13/pflag"

	"github.com/replaykit/replay/internal/ca"
	"github.com/replaykit/replay/sqlcount"
)

// pgTLSOptions put TLS on either side of a SQL counter: toward the app
// (offered with a certificate from replay's CA) and toward the server.
type pgTLSOptions struct {
	prefix     string // of the flag names: "" for sqlcount, "postgres-" elsewhere
	offer      bool
	upstream   string
	upstreamCA string
}

func (o *pgTLSOptions) addFlags(f *pflag.FlagSet, prefix string) {
	o.prefix = prefix
	f.BoolVar(&o.offer, prefix+"tls", false,
		"offer TLS to the app's database connections (for sslmode=require or verify-full, ssl-mode=REQUIRED), with a certificate from replay's CA (--ca-dir)")
	f.StringVar(&o.upstream, prefix+"upstream-tls", sqlcount.TLSDisable,
		"TLS from the SQL counter to the database: `MODE` disable, require (certificate not verified) or verify-full (system roots plus --"+prefix+"upstream-tls-ca)")
	f.StringVar(&o.upstreamCA, prefix+"upstream-tls-ca", "",
		"PEM `FILE` of CA certificates trusted, with the system roots, for --"+prefix+"upstream-tls verify-full")
}

// used reports whether either side is to be encrypted.
func (o *pgTLSOptions) used() bool { return o.offer || o.upstreamOn() }

// upstreamOn reports whether the server side is to be encrypted (the zero
// value, as commands made in code have it, is disable).
func (o *pgTLSOptions) upstreamOn() bool {
	return o.upstream != "" && o.upstream != sqlcount.TLSDisable
}

// validate checks the flags; its errors are usage errors. withPostgres says
// whether --postgres is given, which they apply to.
func (o *pgTLSOptions) validate(cmd string, withPostgres bool) error {
	if o.prefix != "" && o.used() && !withPostgres {
		return usagef("%s: --%stls and --%supstream-tls apply to --%s, which is not given", cmd, o.prefix, o.prefix, strings.TrimSuffix(o.prefix, "-"))
	}
	switch o.upstream {
	case "", sqlcount.TLSDisable, sqlcount.TLSRequire, sqlcount.TLSVerifyFull:
	default:
		return usagef("%s: --%supstream-tls %q: want %s, %s or %s", cmd, o.prefix, o.upstream, sqlcount.TLSDisable, sqlcount.TLSRequire, sqlcount.TLSVerifyFull)
	}
	if o.upstreamCA != "" && o.upstream != sqlcount.TLSVerifyFull {
		return usagef("%s: --%supstream-tls-ca is for --%supstream-tls verify-full", cmd, o.prefix, o.prefix)
	}
	return nil
}

// set puts the TLS configurations into cfg (see configs).
func (o *pgTLSOptions) set(cfg *sqlcount.Config, caDir, listen string) error {
	client, upstream, err := o.configs(caDir, listen)
	cfg.ClientTLS, cfg.UpstreamTLS = client, upstream
	return err
}

// configs returns the TLS configurations of a SQL counter: toward the app
// (nil in the clear) and toward the server (nil in the clear). caDir is
// replay's CA (the default one when empty) and listen the address the
// counter listens on, whose host names the certificate for clients that
// send no server name.
func (o *pgTLSOptions) configs(caDir, listen string) (client, upstream *tls.Config, err error) {
	if o.offer {
		authority, err := ca.LoadOrCreate(caDir)
		if err != nil {
			return nil, nil, err
		}
		host, _, _ := net.SplitHostPort(listen)
		if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
			host = "127.0.0.1"
		}
		client = authority.TLSConfig(host)
	}
	var roots *x509.CertPool
	if o.upstream == sqlcount.TLSVerifyFull {
		if roots, err = ca.RootsWith(o.upstreamCA); err != nil {
			return nil, nil, fmt.Errorf("--%supstream-tls-ca: %w", o.prefix, err)
		}
	}
	upstream, err = sqlcount.UpstreamTLSConfig(o.upstream, roots)
	if err != nil {
		return nil, nil, err
	}
	return client, upstream, nil
}

// clientNote and upstreamNote describe the TLS of each side for the line a
// command prints when it starts; empty in the clear.
func (o *pgTLSOptions) clientNote() string {
	if o.offer {
		return " (TLS offered)"
	}
	return ""
}

func (o *pgTLSOptions) upstreamNote() string {
	if !o.upstreamOn() {
		return ""
	}
	return " over TLS (" + o.upstream + ")"
}
