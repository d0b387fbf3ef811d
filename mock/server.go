package mock

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/elazarl/goproxy"

	"github.com/replaykit/replay/internal/conntrack"
	"github.com/replaykit/replay/internal/listen"
	"github.com/replaykit/replay/pbdecode"
	"github.com/replaykit/replay/snapshots"
)

// What to do with a request to a mocked service that matches nothing
// recorded (Config.OnMiss).
const (
	// OnMissError answers 502 with MarkerHeader "miss" and a JSON body that
	// names the closest recorded request and what differed.
	OnMissError = "error"
	// OnMissPassthrough lets the real upstream answer.
	OnMissPassthrough = "passthrough"
)

// How long a mocked answer takes (Config.Timing).
const (
	// TimingNone answers at once.
	TimingNone = "none"
	// TimingRecorded waits the recorded duration of the exchange first.
	TimingRecorded = "recorded"
)

// ErrUnknownService is wrapped by New and ServiceHandler when a service is
// not in the recording; the message lists the recorded services.
var ErrUnknownService = errors.New("service not in the recording")

// maxRequestBody bounds the request body read for matching.
const maxRequestBody = 64 << 20

// CA intercepts HTTPS for the mocked services; *ca.CA (internal/ca) is one.
type CA interface {
	// MITM returns the goproxy action that terminates TLS with leaf
	// certificates signed by the CA.
	MITM() *goproxy.ConnectAction
}

// Config configures a Server. The zero value mocks nothing; give it
// Exchanges.
type Config struct {
	// Exchanges are the recorded outbound exchanges to answer from (see
	// Load); inbound ones are ignored.
	Exchanges []*snapshots.Exchange
	// Snapshot, when set, is read instead of Exchanges: New indexes its
	// outbound exchanges (each distinct request once, and an ID per
	// recorded call), and an answer's response is read from it when given
	// (the last ResponseCache kept), so that memory stays bounded whatever
	// the number of recorded calls.
	Snapshot Recording
	// Index, when set, is the index of Exchanges or Snapshot made once
	// (NewIndex) for several Servers; New then takes it as it is.
	Index *Index
	// Services lists the host:port services to mock; empty means every
	// recorded service. Each must be recorded.
	Services []string
	// OnMiss is OnMissError (the default when empty) or OnMissPassthrough.
	OnMiss string
	// Timing is TimingNone (the default when empty) or TimingRecorded.
	Timing string
	// Match is the loosest level a request may match at: Exact, Loose, or
	// Template (the default when zero). Exact or Loose make a request for
	// an id that was not recorded a miss instead of answering it with
	// another id's response.
	Match Level
	// CA intercepts HTTPS CONNECT tunnels to mocked services; required when
	// a mocked service was recorded over HTTPS.
	CA CA
	// HTTP2 offers HTTP/2 (ALPN "h2") inside intercepted HTTPS tunnels, as
	// recorder.OutboundConfig.HTTP2 does when recording. New turns it on by
	// itself when a mocked service was recorded over HTTP/2, so that an app
	// that speaks only HTTP/2 to it (gRPC-style clients) is answered; apps
	// that offer both may then pick either.
	HTTP2 bool
	// UpstreamTLS configures TLS to real upstreams (passthrough); nil uses
	// the system roots.
	UpstreamTLS *tls.Config
	// Resolve maps "host:port" as the app addresses it to the address to
	// dial instead when passing a request through, e.g. "api.test:443" →
	// "127.0.0.1:8443" (as recorder.OutboundConfig.Resolve). Nil dials every
	// host as named.
	Resolve map[string]string
	// Decoder decodes gRPC messages for matching (see grpc.go); nil decodes
	// them without a schema, by field number.
	Decoder *pbdecode.Decoder
	// Rules are user-given endpoint templates (as recorded with); nil uses
	// the computed ones.
	Rules []snapshots.Rule
	// AllowTruncated serves recorded responses whose body was cut at
	// recording (the recorder's body limit) cut, marked "truncated"
	// (MarkerHeader); when false they are refused with a 502 marked
	// "truncated" that says why. Either way Stats.Truncated counts them.
	AllowTruncated bool
	// VolatileKeys adds query parameter and JSON member names whose values
	// are ignored at the loose level, to the built-in ones (doc.go).
	VolatileKeys []string
	// Logger receives a line per miss (Info) and per answer (Debug); nil
	// discards.
	Logger *slog.Logger
	// Limits bound the connections of the listeners of Listen and of the
	// intercepted CONNECT tunnels (the zero Limits: the defaults).
	Limits listen.Limits
	// Warn, when set, is told of each listener of Listen reachable from the
	// network (an address with a non-loopback host).
	Warn func(error)
}

// Stats counts what a Server did.
type Stats struct {
	// Exact, Loose and Template count requests answered at each level.
	Exact, Loose, Template int64
	// Misses counts requests to mocked services that matched nothing
	// recorded, passed through or not.
	Misses int64
	// Passthrough counts requests forwarded to a real upstream: misses with
	// OnMissPassthrough and plain HTTP requests to services not mocked.
	Passthrough int64
	// Tunnels counts CONNECT tunnels to services not mocked, opened without
	// interception.
	Tunnels int64
	// PassthroughErrors counts the requests passed through (tunnels apart)
	// that the real upstream did not answer: it could not be reached or
	// cut the connection. Each got a 502 naming the error.
	PassthroughErrors int64
	// Truncated counts the requests matched to a recorded response whose
	// body was cut at recording: served cut with Config.AllowTruncated,
	// else refused (502).
	Truncated int64
}

// Server answers outbound calls from recorded exchanges. It is a forward
// proxy (ServeHTTP) and, per service, a plain server (ServiceHandler). Safe
// for concurrent use.
type Server struct {
	cfg       Config
	log       *slog.Logger
	m         *matcher
	store     *store
	mocked    map[string]bool
	resolve   map[string]string
	proxy     *goproxy.ProxyHttpServer
	transport *http.Transport

	exact, loose, template, misses, passthrough, tunnels, passErrors, truncated atomic.Int64

	missMu   sync.Mutex
	missLog  []*MissError
	missByRq map[string]*MissError // by request exact key

	conns conntrack.Set // hijacked CONNECT connections

	calls *callTracker // attributes calls to the replayed requests in flight (Begin, End)
}

var _ http.Handler = (*Server)(nil)

// errClosed is what goproxy's hijack of a CONNECT gets once Close has run.
var errClosed = errors.New("mock server closed")

// New validates cfg and builds a Server.
func New(cfg Config) (*Server, error) {
	switch cfg.OnMiss {
	case "":
		cfg.OnMiss = OnMissError
	case OnMissError, OnMissPassthrough:
	default:
		return nil, fmt.Errorf("mock: on-miss %q: want %s or %s", cfg.OnMiss, OnMissError, OnMissPassthrough)
	}
	switch cfg.Timing {
	case "":
		cfg.Timing = TimingNone
	case TimingNone, TimingRecorded:
	default:
		return nil, fmt.Errorf("mock: timing %q: want %s or %s", cfg.Timing, TimingNone, TimingRecorded)
	}
	switch cfg.Match {
	case 0:
		cfg.Match = Template
	case Exact, Loose, Template:
	default:
		return nil, fmt.Errorf("mock: match level %d: want Exact, Loose or Template", cfg.Match)
	}
	idx := cfg.Index
	if idx == nil {
		var err error
		if idx, err = NewIndex(context.Background(), cfg); err != nil {
			return nil, err
		}
	}
	m, st := idx.m.forServer(), idx.store
	m.loosest = cfg.Match
	if isNil(cfg.CA) {
		cfg.CA = nil // a nil *ca.CA in the interface
	}
	s := &Server{
		cfg: cfg, log: cfg.Logger, m: m, store: st,
		mocked: map[string]bool{}, resolve: map[string]string{},
		missByRq: map[string]*MissError{},
		calls:    newCallTracker(),
	}
	for from, to := range cfg.Resolve {
		s.resolve[strings.ToLower(from)] = to
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	services := cfg.Services
	if len(services) == 0 {
		services = m.services()
	}
	for _, svc := range services {
		n, err := s.recorded(svc)
		if err != nil {
			return nil, fmt.Errorf("mock: %w", err)
		}
		if m.scheme(n) == "https" && cfg.CA == nil {
			return nil, fmt.Errorf("mock: service %s was recorded over HTTPS: a CA is needed to intercept it", n)
		}
		s.mocked[n] = true
		if m.http2(n) {
			s.cfg.HTTP2 = true
		}
	}
	s.transport = s.newTransport()
	s.proxy = s.newProxy()
	return s, nil
}

func isNil(c CA) bool {
	if c == nil {
		return true
	}
	v := reflect.ValueOf(c)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// recorded normalises service ("host:port") and checks it was recorded.
func (s *Server) recorded(service string) (string, error) {
	if _, _, err := net.SplitHostPort(service); err != nil {
		return "", fmt.Errorf("service %q: want host:port", service)
	}
	n, err := normService(service, "http")
	if err != nil {
		return "", err
	}
	if len(s.m.byService[n]) == 0 {
		rec := "none"
		if svcs := s.m.services(); len(svcs) > 0 {
			rec = strings.Join(svcs, ", ")
		}
		return "", fmt.Errorf("%w: %s (recorded services: %s)", ErrUnknownService, service, rec)
	}
	return n, nil
}

// Services returns the mocked services (host:port), sorted.
func (s *Server) Services() []string {
	out := make([]string, 0, len(s.mocked))
	for svc := range s.mocked {
		out = append(out, svc)
	}
	slices.Sort(out)
	return out
}

// RecordedServices returns every service with recorded exchanges, sorted.
func (s *Server) RecordedServices() []string { return s.m.services() }

// Stats returns the counters so far.
func (s *Server) Stats() Stats {
	return Stats{
		Exact: s.exact.Load(), Loose: s.loose.Load(), Template: s.template.Load(),
		Misses: s.misses.Load(), Passthrough: s.passthrough.Load(), Tunnels: s.tunnels.Load(),
		PassthroughErrors: s.passErrors.Load(), Truncated: s.truncated.Load(),
	}
}

// Close ends the CONNECT tunnels in progress (intercepted or not) and the
// idle connections to real upstreams; CONNECT requests that come later are
// refused. Call it once the listeners have stopped: http.Server.Shutdown does
// not wait for tunnels, which live until the app closes them.
func (s *Server) Close() error {
	s.conns.Close()
	s.transport.CloseIdleConnections()
	return nil
}

// lookup matches a request to service; it returns the recorded entry that
// answers it, or the miss, and the request's endpoint template.
func (s *Server) lookup(r *http.Request, scheme, service string, body []byte) (*snapshots.Exchange, *MissError, string) {
	q := newRequest(r.Method, scheme, service, r.URL, r.Header.Get("Content-Type"), body)
	return s.lookupRequest(&q)
}

// lookupRequest is lookup of a request already reduced.
func (s *Server) lookupRequest(q *request) (*snapshots.Exchange, *MissError, string) {
	en, pos, level := s.m.match(q)
	if en == nil {
		me := s.miss(q)
		s.m.key(q, 2) // the endpoint template
		return nil, me, q.endpoint
	}
	switch level {
	case Exact:
		s.exact.Add(1)
	case Loose:
		s.loose.Add(1)
	case Template:
		s.template.Add(1)
	}
	e := s.store.get(pos)
	s.log.Debug("mock answer", "request", q.String(), "level", level.String(), "exchange", e.ID)
	return e, nil, en.req.endpoint
}

// wait sleeps the recorded duration of e when Timing is recorded; it
// returns early with the context's error.
func (s *Server) wait(ctx context.Context, e *snapshots.Exchange) error {
	if s.cfg.Timing != TimingRecorded || e.Duration <= 0 {
		return nil
	}
	t := time.NewTimer(e.Duration)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// readBody reads r's body for matching and puts it back for passthrough.
func readBody(r *http.Request) ([]byte, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBody+1))
	_ = r.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("read request body: %w", err)
	}
	if len(b) > maxRequestBody {
		return nil, fmt.Errorf("request body larger than %d bytes", maxRequestBody)
	}
	r.Body = io.NopCloser(bytes.NewReader(b))
	return b, nil
}

// ServeHTTP is the forward proxy: the target of an app's HTTP_PROXY and
// HTTPS_PROXY. Requests to mocked services are answered from the recording
// (HTTPS ones through a CONNECT tunnel intercepted with the CA); others pass
// through to the real upstream.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect {
		if s.conns.Closed() {
			http.Error(w, "replay mock: closed", http.StatusServiceUnavailable)
			return
		}
		lim := s.cfg.Limits.Resolved()
		cw := &conntrack.Writer{ResponseWriter: w, Set: &s.conns, ErrClosed: errClosed,
			Timeouts: conntrack.Timeouts{ReadHeader: lim.ReadHeaderTimeout, Idle: lim.IdleTimeout}}
		s.proxy.ServeHTTP(cw, cw.Request(r))
		return
	}
	if !r.URL.IsAbs() {
		http.Error(w, "replay mock is a forward proxy: send requests through HTTP_PROXY/HTTPS_PROXY, or use a service listener (--serve) as a base URL", http.StatusBadRequest)
		return
	}
	scheme := strings.ToLower(r.URL.Scheme)
	service, err := normService(r.URL.Host, scheme)
	if err != nil || !s.mocked[service] {
		s.passthrough.Add(1)
		s.proxy.ServeHTTP(w, r)
		return
	}
	s.serve(w, r, scheme, service, func(w http.ResponseWriter, r *http.Request) {
		s.proxy.ServeHTTP(w, r)
	})
}

// serve answers one request to a mocked service through w.
func (s *Server) serve(w http.ResponseWriter, r *http.Request, scheme, service string, pass http.HandlerFunc) {
	if isGRPC(r) {
		resp, passthrough := s.grpcCall(r, scheme, service)
		if passthrough {
			pass(w, r)
			return
		}
		writeGRPC(w, resp)
		return
	}
	c := s.startCall(r)
	body, err := readBody(r)
	if err != nil {
		textReply(http.StatusBadRequest, "error", "replay mock: "+err.Error()+"\n").write(w)
		return
	}
	en, me, endpoint := s.lookup(r, scheme, service, body)
	switch {
	case me != nil && s.cfg.OnMiss == OnMissPassthrough:
		s.passthrough.Add(1)
		s.endCall(c, scheme, service, endpoint, true)
		pass(w, r)
	case me != nil:
		s.endCall(c, scheme, service, endpoint, true)
		missReply(me).write(w)
	default:
		if s.wait(r.Context(), en) != nil {
			return // the client gave up
		}
		s.endCall(c, scheme, service, endpoint, false)
		s.answer(r, en).write(w)
	}
}

// ServiceHandler returns a handler that answers requests for one recorded
// service as a plain server (origin-form requests), for an app that takes an
// upstream base URL instead of a proxy. Misses behave as Config.OnMiss says;
// passthrough goes to the real service over the scheme it was recorded with.
// Any recorded service can be served, whether listed in Config.Services or
// not.
func (s *Server) ServiceHandler(service string) (http.Handler, error) {
	n, err := s.recorded(service)
	if err != nil {
		return nil, fmt.Errorf("mock: %w", err)
	}
	scheme := s.m.scheme(n)
	pass := s.reverseProxy(scheme, n)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.serve(w, r, scheme, n, pass.ServeHTTP)
	}), nil
}

// dial dials addr, or where Config.Resolve maps it.
func (s *Server) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	if to, ok := s.resolve[strings.ToLower(addr)]; ok {
		addr = to
	}
	d := net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	return d.DialContext(ctx, network, addr)
}
