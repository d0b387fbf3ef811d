package recorder

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"sync"
	"time"

	"github.com/replaykit/replay/internal/ca"
	"github.com/replaykit/replay/internal/conntrack"
	"github.com/replaykit/replay/internal/listen"
	"github.com/replaykit/replay/internal/redact"
	"github.com/replaykit/replay/snapshots"
)

// SessionConfig configures a Session. Snapshot and at least one of
// Inbound, Outbound and Postgres are required.
type SessionConfig struct {
	// Snapshot is the path of the snapshot file to create; it must not
	// exist.
	Snapshot string
	// Rules are endpoint templates that win over the computed ones; nil
	// computes every endpoint.
	Rules []snapshots.Rule
	// Inbound are the reverse proxies in front of the app, one per address.
	Inbound []SessionInbound
	// Outbound, when set, is the forward proxy the app reaches upstream
	// services through.
	Outbound *SessionOutbound
	// Postgres, when set, is the SQL proxy in front of the app's database.
	Postgres *SessionPostgres
	// MySQL, when set, is the SQL proxy in front of the app's MySQL or
	// MariaDB, as Postgres (an app with both has both counted).
	MySQL *SessionPostgres
	// BodyLimit is the number of body bytes recorded per message. Zero means
	// DefaultBodyLimit; negative records no body bytes.
	BodyLimit int64
	// Redact says what is redacted from every exchange before it is written
	// (redact.Config); the zero value redacts the secret-looking headers,
	// query parameters, body fields and URL passwords.
	Redact redact.Config
	// UpstreamTLS is the client TLS configuration toward an https:// app and
	// HTTPS upstreams; nil verifies them against the system roots.
	UpstreamTLS *tls.Config
	// Logger receives the proxies' diagnostics and the warnings of Stop; nil
	// discards them.
	Logger *slog.Logger
	// Limits bound every listener's connections (the zero Limits: the
	// defaults); Postgres.New applies the SQL ones.
	Limits listen.Limits
	// Warn, when set, is told of each listener reachable from the network
	// (an address with a non-loopback host; one without a host is loopback).
	Warn func(error)
}

// SessionInbound is one inbound reverse proxy of a session.
type SessionInbound struct {
	// Listen is the [host]:port to listen on; port 0 picks a free one.
	Listen string
	// Target is the app the proxy forwards to, e.g. http://127.0.0.1:8080.
	Target *url.URL
	// TLS, when set, serves TLS with it (its certificates; ALPN offers h2
	// and http/1.1); nil serves HTTP/1.1 and h2c in the clear, told apart
	// by the HTTP/2 preface.
	TLS *tls.Config
}

// SessionOutbound is the outbound forward proxy of a session.
type SessionOutbound struct {
	// Listen is the [host]:port to listen on; port 0 picks a free one.
	Listen string
	// CA signs the certificates with which HTTPS is intercepted; required.
	CA *ca.CA
	// Resolve maps "host:port" to the address to dial instead; nil dials
	// every host as named.
	Resolve map[string]string
	// HTTP2 lets apps speak HTTP/2 inside intercepted TLS.
	HTTP2 bool
}

// SessionPostgres is the PostgreSQL proxy of a session.
type SessionPostgres struct {
	// Listen is the [host]:port to listen on; port 0 picks a free one.
	Listen string
	// New makes the proxy once the session listens on addr; it must report
	// every statement to onStatement. Required.
	New func(addr net.Addr, onStatement func(*snapshots.Statement)) (PostgresProxy, error)
}

// PostgresProxy is a SQL proxy that attributes statements to the inbound
// requests in flight; *sqlcount.Proxy is one.
type PostgresProxy interface {
	RequestTracker
	// Serve accepts connections on l until ctx ends.
	Serve(ctx context.Context, l net.Listener) error
}

// Part names one kind of proxy of a session.
type Part string

// The parts of a session.
const (
	PartInbound  Part = "inbound"
	PartOutbound Part = "outbound"
	PartPostgres Part = "postgres"
	PartMySQL    Part = "mysql"
)

// PartError reports a part of a session that could not be set up: its
// address could not be listened on or its proxy could not be made.
type PartError struct {
	Part Part
	Err  error
}

func (e *PartError) Error() string { return string(e.Part) + ": " + e.Err.Error() }

// Unwrap returns the cause.
func (e *PartError) Unwrap() error { return e.Err }

// Session records a running app: its inbound, outbound and PostgreSQL
// proxies write through one Tally to one snapshot, and share the registry
// of inbound requests in flight that links calls and statements to them.
type Session struct {
	writer   *snapshots.Writer
	tally    *Tally
	inflight *Inflight
	logger   *slog.Logger

	inbound  []*httpPart
	outbound *httpPart
	proxy    *Outbound
	sql      []*pgPart // PostgreSQL's, then MySQL's

	errc    chan error // an unexpected end of a server
	wg      sync.WaitGroup
	started bool
}

// httpPart is an HTTP proxy and its listener.
type httpPart struct {
	part Part
	l    net.Listener
	srv  *http.Server
	tls  bool
}

// pgPart is a SQL proxy and its listener.
type pgPart struct {
	part   Part
	cfg    *SessionPostgres
	l      net.Listener
	proxy  PostgresProxy
	cancel context.CancelFunc
	done   chan error
}

// NewSession listens on every address of cfg and creates the snapshot; on
// error it leaves nothing open and no file behind. Errors of one part are
// *PartError.
func NewSession(cfg SessionConfig) (s *Session, err error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s = &Session{inflight: NewInflight(), logger: cfg.Logger}
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	if err := s.listen(cfg); err != nil {
		s.closeListeners()
		return nil, err
	}
	if s.writer, err = snapshots.Create(cfg.Snapshot, snapshots.Options{Rules: cfg.Rules, Logger: cfg.Logger, Redactor: cfg.Redact.Redactor()}); err != nil {
		s.closeListeners()
		return nil, err
	}
	s.tally = NewTally(s.writer, cfg.Rules)
	if err := s.newProxies(cfg); err != nil {
		s.closeListeners()
		s.writer.Close()
		os.Remove(cfg.Snapshot)
		return nil, err
	}
	s.errc = make(chan error, len(s.inbound)+1)
	return s, nil
}

func (cfg *SessionConfig) validate() error {
	switch {
	case cfg.Snapshot == "":
		return errors.New("new recording session: no snapshot path")
	case len(cfg.Inbound) == 0 && cfg.Outbound == nil && cfg.Postgres == nil && cfg.MySQL == nil:
		return errors.New("new recording session: nothing to record")
	case cfg.Outbound != nil && cfg.Outbound.CA == nil:
		return &PartError{PartOutbound, errors.New("no CA to intercept HTTPS with")}
	case cfg.Postgres != nil && cfg.Postgres.New == nil:
		return &PartError{PartPostgres, errors.New("no proxy constructor")}
	case cfg.MySQL != nil && cfg.MySQL.New == nil:
		return &PartError{PartMySQL, errors.New("no proxy constructor")}
	}
	return nil
}

// listen listens on every address, stopping at the first that fails.
func (s *Session) listen(cfg SessionConfig) error {
	open := func(p Part, addr, what, reach string) (net.Listener, error) {
		l, err := cfg.Limits.Listen(addr, what, reach, s.logger, cfg.Warn)
		if err != nil {
			return nil, &PartError{p, err}
		}
		return l, nil
	}
	for _, in := range cfg.Inbound {
		l, err := open(PartInbound, in.Listen, "inbound proxy", "it forwards requests to "+in.Target.String())
		if err != nil {
			return err
		}
		s.inbound = append(s.inbound, &httpPart{part: PartInbound, l: l})
	}
	if cfg.Outbound != nil {
		l, err := open(PartOutbound, cfg.Outbound.Listen, "outbound proxy", "it forwards requests to any host")
		if err != nil {
			return err
		}
		s.outbound = &httpPart{part: PartOutbound, l: l}
	}
	for _, sp := range []struct {
		part Part
		cfg  *SessionPostgres
		what string
	}{{PartPostgres, cfg.Postgres, "PostgreSQL proxy"}, {PartMySQL, cfg.MySQL, "MySQL proxy"}} {
		if sp.cfg == nil {
			continue
		}
		l, err := open(sp.part, sp.cfg.Listen, sp.what, "it forwards connections to the database")
		if err != nil {
			return err
		}
		s.sql = append(s.sql, &pgPart{part: sp.part, cfg: sp.cfg, l: l})
	}
	return nil
}

func (s *Session) closeListeners() {
	for _, in := range s.inbound {
		in.l.Close()
	}
	if s.outbound != nil {
		s.outbound.l.Close()
	}
	for _, p := range s.sql {
		p.l.Close()
	}
}

// newProxies makes the proxies behind the listeners, all writing to the
// tally. The SQL proxy comes first: the inbound ones tell it their requests.
func (s *Session) newProxies(cfg SessionConfig) error {
	var trackers multiTracker
	for _, p := range s.sql {
		proxy, err := p.cfg.New(p.l.Addr(), s.tally.AddStatement)
		if err != nil {
			return &PartError{p.part, err}
		}
		p.proxy = proxy
		trackers = append(trackers, proxy)
	}
	var tracker RequestTracker
	switch len(trackers) {
	case 0:
	case 1:
		tracker = trackers[0]
	default:
		tracker = trackers
	}
	for i, in := range s.inbound {
		h, err := NewInbound(InboundConfig{
			Target:    cfg.Inbound[i].Target,
			Sink:      s.tally,
			Tracker:   tracker,
			Inflight:  s.inflight,
			BodyLimit: cfg.BodyLimit,
			Transport: NewInboundTransport(cfg.UpstreamTLS),
			Logger:    cfg.Logger,

			HTTP2Transport: NewHTTP2Transport(nil, cfg.UpstreamTLS),
		})
		if err != nil {
			return &PartError{PartInbound, err}
		}
		in.srv = cfg.Limits.Server(h, s.logger)
		in.srv.Protocols = InboundProtocols()
		in.srv.ConnContext = ConnContext
		if t := cfg.Inbound[i].TLS; t != nil {
			in.srv.TLSConfig, in.tls = t.Clone(), true
		}
	}
	if s.outbound != nil {
		var err error
		lim := cfg.Limits.Resolved()
		s.proxy, err = NewOutbound(OutboundConfig{
			Sink:        s.tally,
			CA:          cfg.Outbound.CA,
			Inflight:    s.inflight,
			Resolve:     cfg.Outbound.Resolve,
			UpstreamTLS: cfg.UpstreamTLS,
			BodyLimit:   cfg.BodyLimit,
			HTTP2:       cfg.Outbound.HTTP2,
			Logger:      cfg.Logger,
			Timeouts:    conntrack.Timeouts{ReadHeader: lim.ReadHeaderTimeout, Idle: lim.IdleTimeout},
		})
		if err != nil {
			return &PartError{PartOutbound, err}
		}
		s.outbound.srv = cfg.Limits.Server(s.proxy, s.logger)
	}
	return nil
}

// Start serves every listener. Call it once.
func (s *Session) Start() {
	s.started = true
	for _, p := range s.httpParts() {
		s.wg.Go(func() {
			serve := p.srv.Serve
			if p.tls {
				serve = func(l net.Listener) error { return p.srv.ServeTLS(l, "", "") }
			}
			if err := serve(p.l); err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.errc <- fmt.Errorf("%s %s: %w", p.part, p.l.Addr(), err)
			}
		})
	}
	for _, p := range s.sql {
		ctx, cancel := context.WithCancel(context.Background())
		p.cancel = cancel
		p.done = make(chan error, 1)
		go func() { p.done <- p.proxy.Serve(ctx, p.l) }()
	}
}

func (s *Session) httpParts() []*httpPart {
	parts := append([]*httpPart(nil), s.inbound...)
	if s.outbound != nil {
		parts = append(parts, s.outbound)
	}
	return parts
}

// Err delivers an unexpected end of an inbound or outbound server (its
// listener failed); the session should then be stopped.
func (s *Session) Err() <-chan error { return s.errc }

// Stop stops accepting, lets the exchanges in flight finish (for at most
// timeout), and closes the snapshot. Inbound servers stop first: the
// requests they finish may still call upstreams and the database. The
// errors it returns are the snapshot's.
func (s *Session) Stop(timeout time.Duration) error {
	if !s.started {
		s.closeListeners()
		return s.writer.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var wg sync.WaitGroup
	for _, in := range s.inbound {
		wg.Go(func() { shutdown(ctx, in.srv) })
	}
	wg.Wait()
	// Upgraded connections are not waited for by Shutdown; their exchanges
	// end when the connections do.
	for s.inflight.Len() > 0 && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	if s.outbound != nil {
		shutdown(ctx, s.outbound.srv)
		if err := s.proxy.Shutdown(ctx); err != nil {
			s.logger.Warn("outbound calls still in progress were cut", "err", err)
		}
	}
	for _, p := range s.sql {
		p.cancel()
		if err := <-p.done; err != nil && !errors.Is(err, context.Canceled) {
			s.logger.Warn(string(p.part)+" proxy", "err", err)
		}
	}
	s.wg.Wait()
	return s.writer.Close()
}

// shutdown stops srv gracefully until ctx ends, then at once.
func shutdown(ctx context.Context, srv *http.Server) {
	if err := srv.Shutdown(ctx); err != nil {
		srv.Close()
	}
}

// InboundAddrs returns the addresses the inbound proxies listen on, in the
// order of SessionConfig.Inbound.
func (s *Session) InboundAddrs() []net.Addr {
	addrs := make([]net.Addr, len(s.inbound))
	for i, in := range s.inbound {
		addrs[i] = in.l.Addr()
	}
	return addrs
}

// OutboundAddr returns the address the outbound proxy listens on; nil
// without one.
func (s *Session) OutboundAddr() net.Addr {
	if s.outbound == nil {
		return nil
	}
	return s.outbound.l.Addr()
}

// PostgresAddr returns the address the SQL proxy listens on; nil without
// one.
func (s *Session) PostgresAddr() net.Addr { return s.sqlAddr(PartPostgres) }

// MySQLAddr returns the address the MySQL proxy listens on; nil without
// one.
func (s *Session) MySQLAddr() net.Addr { return s.sqlAddr(PartMySQL) }

func (s *Session) sqlAddr(part Part) net.Addr {
	for _, p := range s.sql {
		if p.part == part {
			return p.l.Addr()
		}
	}
	return nil
}

// multiTracker tells several SQL proxies of the requests: an app on two
// databases.
type multiTracker []PostgresProxy

func (m multiTracker) Begin(id int64, traceID string) {
	for _, t := range m {
		t.Begin(id, traceID)
	}
}

func (m multiTracker) End(id int64) []snapshots.SQLCount {
	var out []snapshots.SQLCount
	for _, t := range m {
	next:
		for _, c := range t.End(id) {
			for i := range out {
				if out[i].Fingerprint == c.Fingerprint {
					out[i].Count += c.Count
					out[i].Errors += c.Errors
					out[i].Duration += c.Duration
					continue next
				}
			}
			out = append(out, c)
		}
	}
	return out
}

// InFlight returns the number of inbound requests in flight.
func (s *Session) InFlight() int { return s.inflight.Len() }

// Summary returns what has been recorded so far, per endpoint.
func (s *Session) Summary() TallySummary { return s.tally.Summary() }
