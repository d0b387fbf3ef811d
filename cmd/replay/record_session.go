package main

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"

	"github.com/replaykit/replay/internal/ca"
	"github.com/replaykit/replay/recorder"
	"github.com/replaykit/replay/snapshots"
	"github.com/replaykit/replay/sqlcount"
)

var _ recorder.PostgresProxy = (*sqlcount.Proxy)(nil)

// newSession makes the recording session of plan p: it listens and creates
// the snapshot. It returns replay's CA too when --outbound intercepts with it.
func newSession(p *recordPlan, opts *recordOptions, logger *slog.Logger) (*recorder.Session, *ca.CA, error) {
	cfg := recorder.SessionConfig{
		Snapshot:  opts.out,
		Rules:     p.rules,
		BodyLimit: p.bodyLimit,
		Redact:    opts.redact,
		Logger:    logger,
		Limits:    opts.limits,
		Warn:      func(err error) { fmt.Fprintf(opts.stderr, "replay: warning: %v\n", err) },
	}
	for _, in := range p.inbound {
		si := recorder.SessionInbound{Listen: in.listen, Target: in.target}
		if opts.inboundTLS.used() {
			var err error
			if si.TLS, _, err = opts.inboundTLS.config(opts.caDir, in.listen); err != nil {
				return nil, nil, err
			}
		}
		cfg.Inbound = append(cfg.Inbound, si)
	}
	if opts.upstreamCA != "" {
		var err error
		if cfg.UpstreamTLS, err = upstreamTLSConfig(opts.upstreamCA); err != nil {
			return nil, nil, err
		}
	}
	var authority *ca.CA
	if p.outbound != "" {
		var err error
		if authority, err = ca.LoadOrCreate(opts.caDir); err != nil {
			return nil, nil, fmt.Errorf("record: %w", err)
		}
		cfg.Outbound = &recorder.SessionOutbound{Listen: p.outbound, CA: authority, Resolve: p.resolve, HTTP2: opts.outboundHTTP2}
	}
	if p.pgListen != "" {
		cfg.Postgres = &recorder.SessionPostgres{Listen: p.pgListen, New: newSQLCounter(p.pgServer, &opts.postgres, opts, logger)}
	}
	if p.myListen != "" {
		cfg.MySQL = &recorder.SessionPostgres{Listen: p.myListen, New: newSQLCounter(p.myServer, &opts.mysql, opts, logger)}
	}
	s, err := recorder.NewSession(cfg)
	if err != nil {
		return nil, nil, sessionError(err)
	}
	return s, authority, nil
}

// newSQLCounter returns the maker of the --postgres (or --mysql) proxy to
// server.
func newSQLCounter(server string, db *postgresFlags, opts *recordOptions, logger *slog.Logger) func(net.Addr, func(*snapshots.Statement)) (recorder.PostgresProxy, error) {
	return func(addr net.Addr, onStatement func(*snapshots.Statement)) (recorder.PostgresProxy, error) {
		cfg := sqlcount.Config{Upstream: server, Protocol: db.flag(), OnStatement: onStatement, Logger: logger}
		cfg.StartupTimeout, cfg.IdleTimeout = opts.limits.SQLTimeouts()
		if err := db.tls.set(&cfg, opts.caDir, addr.String()); err != nil {
			return nil, err
		}
		proxy, err := sqlcount.New(cfg)
		if err != nil {
			return nil, err
		}
		return proxy, nil
	}
}

// sessionError names the flag of the part of the session that failed.
func sessionError(err error) error {
	var pe *recorder.PartError
	if errors.As(err, &pe) {
		return fmt.Errorf("record: --%s: %w", pe.Part, pe.Err)
	}
	return fmt.Errorf("record: %w", err)
}

// upstreamTLSConfig trusts the system roots plus the certificates in file.
func upstreamTLSConfig(file string) (*tls.Config, error) {
	roots, err := ca.RootsWith(file)
	if err != nil {
		return nil, fmt.Errorf("record: --upstream-ca: %w", err)
	}
	return &tls.Config{RootCAs: roots}, nil
}
