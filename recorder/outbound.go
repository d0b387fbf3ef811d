package recorder

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/elazarl/goproxy"

	"github.com/replaykit/replay/internal/ca"
	"github.com/replaykit/replay/internal/conntrack"
)

// OutboundConfig configures an Outbound forward proxy. Only Sink and CA are
// required.
type OutboundConfig struct {
	// Sink receives every outbound exchange; normally a *snapshots.Writer.
	Sink Sink
	// CA signs the certificates with which HTTPS (CONNECT) is intercepted.
	CA *ca.CA
	// Inflight, when set, links each outbound call to the inbound request
	// it belongs to (share it with the Inbound recorder).
	Inflight *Inflight
	// Resolve maps "host:port" as the app addresses it to the address to
	// dial instead, e.g. "catalog.test:443" → "127.0.0.1:8443". Recorded
	// exchanges keep the original name. Nil dials every host as named.
	Resolve map[string]string
	// UpstreamTLS is the client TLS configuration for upstream HTTPS; nil
	// verifies upstreams against the system roots.
	UpstreamTLS *tls.Config
	// BodyLimit is the number of body bytes recorded per request and per
	// response; longer bodies pass through whole and are recorded
	// truncated. Zero means DefaultBodyLimit; negative records no body bytes.
	BodyLimit int64
	// HTTP2 lets apps speak HTTP/2 inside intercepted TLS (ALPN "h2").
	// False offers HTTP/1.1 only, which every client falls back to.
	HTTP2 bool
	// Logger receives proxy diagnostics at debug level; nil discards.
	Logger *slog.Logger
	// Timeouts bound the app's intercepted CONNECT tunnels, whose requests
	// no http.Server reads; zero bounds nothing.
	Timeouts conntrack.Timeouts
}

// Outbound is a forward proxy (HTTP_PROXY / HTTPS_PROXY) that records the
// calls an app makes to upstream services. HTTPS is intercepted with
// certificates signed by the CA; plain HTTP is recorded as is. Bodies stream
// through unchanged (gzip stays gzip, chunked responses flow chunk by
// chunk); an exchange is recorded when its response body ends. Upstreams
// that cannot be reached get the app a 502 and are recorded with Error.
// It is an http.Handler, safe for concurrent use.
type Outbound struct {
	sink      Sink
	inflight  *Inflight
	resolve   map[string]string
	limit     int64
	logger    *slog.Logger
	proxy     *goproxy.ProxyHttpServer
	transport *http.Transport
	h2        *HTTP2Transport // gRPC calls: h2c or h2, HTTP/2 only
	mitm      *goproxy.ConnectAction
	rt        goproxy.RoundTripper
	timeouts  conntrack.Timeouts

	bufs  sync.Pool     // *[]byte body copy buffers
	calls atomic.Int64  // outbound calls not yet recorded
	conns conntrack.Set // hijacked client connections
}

var _ http.Handler = (*Outbound)(nil)

// NewOutbound returns a recording forward proxy.
func NewOutbound(cfg OutboundConfig) (*Outbound, error) {
	if cfg.Sink == nil {
		return nil, errors.New("new outbound recorder: no sink")
	}
	if cfg.CA == nil {
		return nil, errors.New("new outbound recorder: no CA to intercept HTTPS with")
	}
	o := &Outbound{
		sink:     cfg.Sink,
		inflight: cfg.Inflight,
		resolve:  map[string]string{},
		limit:    cfg.BodyLimit,
		logger:   cfg.Logger,
		mitm:     alpnMITM(cfg.CA.MITM(), cfg.HTTP2),
		timeouts: cfg.Timeouts,
	}
	for from, to := range cfg.Resolve {
		if _, _, err := net.SplitHostPort(from); err != nil {
			return nil, fmt.Errorf("new outbound recorder: resolve %q: want host:port", from)
		}
		if _, _, err := net.SplitHostPort(to); err != nil {
			return nil, fmt.Errorf("new outbound recorder: resolve %q to %q: want host:port", from, to)
		}
		o.resolve[strings.ToLower(from)] = to
	}
	if o.limit == 0 {
		o.limit = DefaultBodyLimit
	} else if o.limit < 0 {
		o.limit = 0
	}
	if o.logger == nil {
		o.logger = slog.New(slog.DiscardHandler)
	}
	o.transport = newOutboundTransport(o.dial, cfg.UpstreamTLS)
	o.h2 = NewHTTP2Transport(o.dial, cfg.UpstreamTLS)
	o.rt = goproxy.RoundTripperFunc(o.roundTrip)

	p := goproxy.NewProxyHttpServer()
	p.Logger = goproxyLogger{o.logger}
	p.Tr = o.transport
	p.ConnectDial = nil // never tunnel through a proxy from our own environment
	p.KeepAcceptEncoding = true
	// HTTP/2 is served whenever a client gets it: h2c inside a tunnel (gRPC
	// clients in the clear), h2 where ALPN chose it (alpnMITM).
	p.AllowHTTP2 = true
	p.NonproxyHandler = http.HandlerFunc(nonProxy)
	o.conns.Watch(p)
	p.OnRequest().HandleConnectFunc(o.handleConnect)
	p.OnRequest().DoFunc(func(r *http.Request, ctx *goproxy.ProxyCtx) (*http.Request, *http.Response) {
		ctx.RoundTripper = o.rt
		return r, nil
	})
	o.proxy = p
	return o, nil
}

// newOutboundTransport sends the app's calls upstream: a large idle pool
// (Go's default keeps 2 per host), no proxy from the environment, and no
// transparent decompression, so that gzip reaches the app and the snapshot
// as the upstream sent it.
func newOutboundTransport(dial func(ctx context.Context, network, addr string) (net.Conn, error), tlsConfig *tls.Config) *http.Transport {
	if tlsConfig != nil {
		tlsConfig = tlsConfig.Clone()
	}
	return &http.Transport{
		DialContext:           dial,
		TLSClientConfig:       tlsConfig,
		MaxIdleConnsPerHost:   1024,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: 1 * time.Second,
		DisableCompression:    true,
	}
}

// dial connects to addr, or to where Resolve maps it.
func (o *Outbound) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	if to, ok := o.resolve[strings.ToLower(addr)]; ok {
		addr = to
	}
	d := net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	return d.DialContext(ctx, network, addr)
}

// connectTarget is the ProxyCtx.UserData of an intercepted CONNECT tunnel:
// the host:port the app asked to reach.
type connectTarget string

func (o *Outbound) handleConnect(host string, ctx *goproxy.ProxyCtx) (*goproxy.ConnectAction, string) {
	if _, _, err := net.SplitHostPort(host); err != nil {
		host = net.JoinHostPort(host, "443")
	}
	ctx.UserData = connectTarget(host)
	ctx.RoundTripper = o.rt
	return o.mitm, host
}

// ServeHTTP serves proxy requests: CONNECT tunnels, which are intercepted,
// and absolute-form plain HTTP requests.
func (o *Outbound) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect {
		h := o.hijacker(w)
		h.Timeouts = o.timeouts
		o.proxy.ServeHTTP(h, r)
		return
	}
	o.proxy.ServeHTTP(&streamWriter{ResponseWriter: w, o: o}, r)
}

func nonProxy(w http.ResponseWriter, r *http.Request) {
	http.Error(w, fmt.Sprintf("replay outbound proxy: %s %s is not a proxy request; point the app's HTTP_PROXY and HTTPS_PROXY at this address", r.Method, r.URL), http.StatusBadRequest)
}

// Shutdown waits until every outbound call in progress has been recorded,
// or ctx is done, then closes like Close. Call it after the listener has
// stopped accepting and before the sink is closed.
func (o *Outbound) Shutdown(ctx context.Context) error {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for o.calls.Load() > 0 {
		select {
		case <-ctx.Done():
			o.Close()
			return fmt.Errorf("outbound recorder shutdown: %s cut short: %w", count(o.calls.Load(), "call"), ctx.Err())
		case <-t.C:
		}
	}
	return o.Close()
}

// Close closes the app's connections to the proxy and the idle connections
// to upstreams. Calls still in progress are cut and recorded with Error.
func (o *Outbound) Close() error {
	o.conns.Close()
	o.transport.CloseIdleConnections()
	o.h2.CloseIdleConnections()
	return nil
}

// InProgress returns the number of outbound calls not yet recorded.
func (o *Outbound) InProgress() int { return int(o.calls.Load()) }

// hijacker wraps w so that the connection goproxy hijacks from it is kept
// in the proxy's set, which Close ends.
func (o *Outbound) hijacker(w http.ResponseWriter) *conntrack.Writer {
	return &conntrack.Writer{ResponseWriter: w, Set: &o.conns, ErrClosed: errOutboundClosed}
}

// errOutboundClosed is what a hijack gets once Close has run.
var errOutboundClosed = errors.New("outbound recorder closed")

// streamWriter flushes every write of a response of unknown length, so that
// a chunked upstream response reaches the app chunk by chunk (goproxy only
// flushes when the upstream's Transfer-Encoding header survives, which Go's
// transport removes).
type streamWriter struct {
	http.ResponseWriter
	o *Outbound
}

func (s *streamWriter) Write(p []byte) (int, error) {
	n, err := s.ResponseWriter.Write(p)
	if err == nil && s.ResponseWriter.Header().Get("Content-Length") == "" {
		err = http.NewResponseController(s.ResponseWriter).Flush()
	}
	return n, err
}

func (s *streamWriter) Flush() { http.NewResponseController(s.ResponseWriter).Flush() }

// Hijack serves plain-HTTP upgrades (WebSocket), which goproxy relays itself.
func (s *streamWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return s.o.hijacker(s.ResponseWriter).Hijack()
}

func (s *streamWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// goproxyLogger sends goproxy's log lines to slog at debug level.
type goproxyLogger struct{ l *slog.Logger }

func (g goproxyLogger) Printf(format string, v ...any) {
	if g.l.Enabled(context.Background(), slog.LevelDebug) {
		g.l.Debug("outbound proxy: " + strings.TrimSpace(fmt.Sprintf(format, v...)))
	}
}

// alpnMITM makes the interception offer h2 by ALPN to a client that asks
// for nothing else (gRPC clients offer only h2, and fail without it), and
// to every client when http2 is set; others get HTTP/1.1.
func alpnMITM(a *goproxy.ConnectAction, http2 bool) *goproxy.ConnectAction {
	base := a.TLSConfig
	out := *a
	out.TLSConfig = func(host string, ctx *goproxy.ProxyCtx) (*tls.Config, error) {
		cfg, err := base(host, ctx)
		if err != nil {
			return nil, err
		}
		plain := cfg.Clone()
		cfg.GetConfigForClient = func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
			c := plain.Clone()
			c.NextProtos = []string{"http/1.1"}
			if http2 || len(hello.SupportedProtos) > 0 && !slices.Contains(hello.SupportedProtos, "http/1.1") {
				c.NextProtos = []string{"h2", "http/1.1"}
			}
			return c, nil
		}
		return cfg, nil
	}
	return &out
}
