package main

import (
	"context"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/replaykit/replay/internal/ca"
	"github.com/replaykit/replay/mock"
	"github.com/replaykit/replay/replayer"
	"github.com/replaykit/replay/snapshots"
	"github.com/replaykit/replay/sqlcount"
)

// harness is what replay runs around a build, for `replay run` and for
// each side of `replay compare`: the mock of its upstreams, the SQL counter
// in front of its database, and how the build is wired to them.
type harness struct {
	mock     *mock.Server
	mockSrv  *http.Server
	mockAddr string
	sql      *sqlcount.Proxy
	sqlAddr  string
	sqlStop  context.CancelFunc
	sqlDone  chan struct{}
	wiring   replayer.Wiring
}

// startMock serves a mock of the services (nil: every recorded one) from
// outbound on listen, and wires the build to it and to authority's
// certificate (the bundle is the caller's). Errors come unprefixed.
func (h *harness) startMock(outbound []*snapshots.Exchange, services []string, onMiss, timing string, authority *ca.CA, listen string) error {
	m, err := mock.New(mock.Config{Exchanges: outbound, Services: services, OnMiss: onMiss, Timing: timing, CA: authority})
	if err != nil {
		return err
	}
	h.mock = m
	l, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	h.mockAddr = l.Addr().String()
	h.mockSrv = &http.Server{Handler: m, ReadHeaderTimeout: 30 * time.Second}
	go h.mockSrv.Serve(l)
	h.wiring.Proxy, h.wiring.CACert = h.mockAddr, authority.CertPath()
	return nil
}

// startSQLCounter serves a SQL counter in front of the PostgreSQL server
// upstream on listen, with the TLS of tlsOpts, and wires the build to it.
// It serves until close, whatever becomes of ctx. Errors come unprefixed.
func (h *harness) startSQLCounter(ctx context.Context, upstream, listen string, tlsOpts *pgTLSOptions, caDir string) error {
	l, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	cfg := sqlcount.Config{Upstream: upstream}
	if err := tlsOpts.set(&cfg, caDir, l.Addr().String()); err != nil {
		l.Close()
		return err
	}
	p, err := sqlcount.New(cfg)
	if err != nil {
		l.Close()
		return err
	}
	h.sql, h.sqlAddr = p, l.Addr().String()
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	h.sqlStop, h.sqlDone = cancel, make(chan struct{})
	go func() {
		defer close(h.sqlDone)
		p.Serve(sctx, l)
	}()
	h.wiring.Postgres, h.wiring.SQLCount = upstream, h.sqlAddr
	return nil
}

// close stops the mock and the SQL counter, whichever were started.
func (h *harness) close() {
	if h.mockSrv != nil {
		h.mockSrv.Close()
	}
	if h.mock != nil {
		h.mock.Close()
	}
	if h.sqlStop != nil {
		h.sqlStop()
		<-h.sqlDone
	}
}

// checkReplayFlags checks the flags that `replay run` and `replay compare`
// share: --endpoint, --mock, --mock-timing and --on-miss; its errors are
// usage errors prefixed with cmd.
func checkReplayFlags(cmd string, endpoints, mocks []string, mockTiming, onMiss string) error {
	for _, e := range endpoints {
		if !strings.ContainsAny(e, "/*") {
			return usagef("%s: --endpoint %q: want 'METHOD /path' or '/path' (globs * and ? allowed)", cmd, e)
		}
	}
	for _, m := range mocks {
		if m == "all" {
			continue
		}
		if h, port, err := net.SplitHostPort(m); err != nil || h == "" || port == "" {
			return usagef("%s: --mock %q: want HOST:PORT of a recorded upstream, e.g. catalog.example.com:443", cmd, m)
		}
	}
	switch mockTiming {
	case mock.TimingNone, mock.TimingRecorded:
	default:
		return usagef("%s: --mock-timing %q: want recorded or none", cmd, mockTiming)
	}
	switch onMiss {
	case mock.OnMissError, mock.OnMissPassthrough:
	default:
		return usagef("%s: --on-miss %q: want error or passthrough", cmd, onMiss)
	}
	return nil
}
