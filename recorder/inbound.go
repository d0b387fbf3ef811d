package recorder

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"time"

	"github.com/replaykit/replay/snapshots"
)

// InboundConfig configures an Inbound recording proxy. Only Target and Sink
// are required.
type InboundConfig struct {
	// Target is the app the proxy forwards to, e.g. http://127.0.0.1:8080.
	// Its path, if any, is prefixed to every request path.
	Target *url.URL
	// Sink receives every exchange; normally a *snapshots.Writer.
	Sink Sink
	// Tracker, when set, is told when each request starts and ends so that
	// the SQL statements it causes are attributed to it (*sqlcount.Proxy).
	Tracker RequestTracker
	// Inflight, when set, registers each request while it is in flight, so
	// that an Outbound sharing it links outbound calls to their parent.
	Inflight *Inflight
	// BodyLimit is the number of body bytes recorded per request and per
	// response; longer bodies are forwarded whole and recorded truncated.
	// Zero means DefaultBodyLimit; negative records no body bytes.
	BodyLimit int64
	// Transport sends HTTP/1.1 requests to the app; nil means
	// NewInboundTransport(nil).
	Transport http.RoundTripper
	// HTTP2Transport sends the requests that go on over HTTP/2 (gRPC calls,
	// and h2c requests; see wantsHTTP2); nil means NewHTTP2Transport(nil, nil).
	HTTP2Transport http.RoundTripper
	// Logger receives proxy errors at debug level; nil discards.
	Logger *slog.Logger
}

// Inbound is a reverse proxy that forwards every request to the app and
// records each exchange: headers, bodies up to a limit, status, trailers,
// timing and transport errors. Bodies stream through unchanged; nothing is
// buffered before it is forwarded. A gRPC call (HTTP/2, every RPC kind) is
// recorded as its messages, each as it passes, and its trailers. It is an
// http.Handler, safe for concurrent use; served by an http.Server whose
// Protocols include HTTP/2 (ServeInbound), it takes h2c and h2 requests.
type Inbound struct {
	target   *url.URL
	sink     Sink
	tracker  RequestTracker
	inflight *Inflight
	limit    int64
	proxy    *httputil.ReverseProxy
	logger   *slog.Logger
}

var _ http.Handler = (*Inbound)(nil)

// errAborted marks an exchange whose response could not be delivered whole.
var errAborted = errors.New("response aborted: the client went away or the body copy failed")

// NewInbound returns a recording reverse proxy to cfg.Target.
func NewInbound(cfg InboundConfig) (*Inbound, error) {
	if cfg.Target == nil {
		return nil, errors.New("new inbound recorder: no target URL")
	}
	if cfg.Target.Scheme != "http" && cfg.Target.Scheme != "https" || cfg.Target.Host == "" {
		return nil, fmt.Errorf("new inbound recorder: target %q is not an http:// or https:// URL with a host", cfg.Target)
	}
	if cfg.Sink == nil {
		return nil, errors.New("new inbound recorder: no sink")
	}
	in := &Inbound{
		target:   cfg.Target,
		sink:     cfg.Sink,
		tracker:  cfg.Tracker,
		inflight: cfg.Inflight,
		limit:    cfg.BodyLimit,
		logger:   cfg.Logger,
	}
	if in.limit == 0 {
		in.limit = DefaultBodyLimit
	} else if in.limit < 0 {
		in.limit = 0
	}
	if in.logger == nil {
		in.logger = slog.New(slog.DiscardHandler)
	}
	transport := byProto{h1: cfg.Transport, h2: cfg.HTTP2Transport}
	if transport.h1 == nil {
		transport.h1 = NewInboundTransport(nil)
	}
	if transport.h2 == nil {
		transport.h2 = NewHTTP2Transport(nil, nil)
	}
	in.proxy = &httputil.ReverseProxy{
		Rewrite:        in.rewrite,
		Transport:      transport,
		ModifyResponse: in.modifyResponse,
		ErrorHandler:   in.errorHandler,
		BufferPool:     newBufferPool(),
		ErrorLog:       slog.NewLogLogger(in.logger.Handler(), slog.LevelDebug),
	}
	if cfg.Logger == nil {
		in.proxy.ErrorLog = log.New(io.Discard, "", 0)
	}
	return in, nil
}

// inboundKey is the context key of the *inboundExchange of a request.
type inboundKey struct{}

// inboundExchange is the state of one request in flight. The exchange it
// records is part of it, so that one allocation covers both.
type inboundExchange struct {
	e       snapshots.Exchange
	reqBody lockedCapture
	resBody capture
	res     *http.Response
	// h2 sends the request to the app over HTTP/2; grpc records it as a
	// gRPC call, through the taps.
	h2, grpc       bool
	reqTap, resTap *grpcTap
	// errHeader holds the headers of a response the proxy made up itself.
	errHeader http.Header
	errStatus int
	errBody   []byte
	err       error
}

// ServeHTTP forwards r to the target and records the exchange once the
// response body has been delivered (or failed).
func (in *Inbound) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	x := &inboundExchange{}
	x.e.Start = time.Now()
	in.sink.CountSeen(snapshots.Inbound)
	x.e.ID = in.sink.NewID()
	if tp := r.Header.Get("Traceparent"); tp != "" {
		x.e.TraceID = TraceID(tp)
	}
	if in.inflight != nil {
		in.inflight.Begin(x.e.ID, x.e.TraceID)
	}
	if in.tracker != nil {
		in.tracker.Begin(x.e.ID, x.e.TraceID)
	}
	x.grpc = snapshots.IsGRPCContentType(r.Header.Get("Content-Type"))
	x.h2 = wantsHTTP2(r, x.grpc)
	switch {
	case r.Body == nil || r.Body == http.NoBody:
	case x.grpc:
		x.reqTap = newGRPCTap(r.Body, snapshots.FromClient, x.e.Start, r.Header.Get("Grpc-Encoding"), in.limit)
		r.Body = x.reqTap
	default:
		x.reqBody.rc, x.reqBody.limit = r.Body, in.limit
		r.Body = &x.reqBody
	}
	defer in.finish(x, w, r)
	in.proxy.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), inboundKey{}, x)))
}

// forwardingHeaders are the headers ReverseProxy strips from a request
// before Rewrite.
var forwardingHeaders = []string{"Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto"}

// rewrite points the request at the target. The proxy is transparent: the
// app gets the forwarding headers the client sent, and none of our own, so
// that it sees the same request when the replayer later sends it directly.
func (in *Inbound) rewrite(pr *httputil.ProxyRequest) {
	pr.SetURL(in.target)
	for _, k := range forwardingHeaders {
		if vs, ok := pr.In.Header[k]; ok {
			pr.Out.Header[k] = vs
		}
	}
}

func (in *Inbound) modifyResponse(res *http.Response) error {
	x, _ := res.Request.Context().Value(inboundKey{}).(*inboundExchange)
	if x == nil {
		return nil
	}
	x.res = res
	if res.StatusCode == http.StatusSwitchingProtocols {
		return nil // the body is the upgraded connection: not ours to wrap
	}
	if x.grpc {
		x.resTap = newGRPCTap(res.Body, snapshots.FromServer, x.e.Start, res.Header.Get("Grpc-Encoding"), in.limit)
		res.Body = x.resTap
		return nil
	}
	x.resBody = capture{rc: res.Body, limit: in.limit}
	if n := res.ContentLength; n > 0 {
		x.resBody.buf = make([]byte, 0, min(n, in.limit))
	}
	res.Body = &x.resBody
	return nil
}

func (in *Inbound) errorHandler(w http.ResponseWriter, r *http.Request, err error) {
	in.logger.Debug("inbound: proxy error", "url", r.URL.String(), "err", err)
	status := http.StatusBadGateway
	if errors.Is(err, context.DeadlineExceeded) {
		status = http.StatusGatewayTimeout
	}
	body := []byte(fmt.Sprintf("replay: cannot reach the app at %s: %v\n", in.target, err))
	x, _ := r.Context().Value(inboundKey{}).(*inboundExchange)
	if x != nil && x.grpc {
		// Answered as gRPC does: the client reports the status.
		x.err, x.errHeader = err, w.Header()
		for k, vs := range grpcFailure(r, x.e.Start, err) {
			w.Header()[k] = vs
		}
		w.WriteHeader(http.StatusOK)
		return
	}
	if x != nil {
		x.err = err
		x.errHeader = w.Header()
		x.errStatus = status
		x.errBody = body
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	w.Write(body)
}

// finish records the exchange. It runs deferred, so that an exchange whose
// body copy failed (ReverseProxy panics with http.ErrAbortHandler) is
// recorded too; the panic then goes on.
func (in *Inbound) finish(x *inboundExchange, w http.ResponseWriter, r *http.Request) {
	p := recover()
	e := &x.e
	// The body has ended (or failed) by now: ReverseProxy returns right
	// after copying it.
	e.Duration = time.Since(e.Start)
	// Not for gRPC: an answer without a body ("Trailers-Only") must end
	// with its headers (HEADERS with END_STREAM), which a flush prevents.
	if p == nil && x.res != nil && x.res.ContentLength >= 0 && x.res.StatusCode != http.StatusSwitchingProtocols && !x.grpc {
		// A response of known length is complete: send what is still
		// buffered now rather than after the recording work below, which
		// is then off the client's latency. (Responses of unknown length
		// are flushed as they stream, and end with the handler.)
		http.NewResponseController(w).Flush()
	}
	e.Direction = snapshots.Inbound
	e.Protocol = "http"
	if r.TLS != nil {
		e.Protocol = "https"
	}
	e.Service = service(r, e.Protocol)
	e.Method = r.Method
	e.URL = absoluteURL(r, e.Protocol)
	e.Proto = r.Proto
	e.ClientConn = clientConn(r)
	// The header maps are shared, not copied: nothing changes them once the
	// exchange is finished (the proxy sends a clone of the request's, and the
	// response's are only read after the body ends), and the snapshot
	// writer's redaction copies what it changes.
	e.RequestHeader = r.Header
	if x.reqBody.rc != nil {
		e.RequestBody, e.RequestBodySize = x.reqBody.result()
	}
	in.recordResponse(x)
	if x.err == nil && p != nil {
		x.err = errAborted
	}
	if x.err != nil {
		e.Error = x.err.Error()
	}
	// The tracker's window closes first, so that no statement can be
	// attributed to an exchange already handed to the sink; the request
	// leaves the in-flight registry last, so that an empty registry means
	// every exchange has been handed over.
	if in.tracker != nil {
		in.tracker.End(e.ID)
	}
	in.sink.AddExchange(e)
	if in.inflight != nil {
		in.inflight.End(e.ID)
	}
	if p != nil {
		panic(p)
	}
}

// recordResponse puts the response (or the proxy's own answer) and a gRPC
// call's messages into x's exchange.
func (in *Inbound) recordResponse(x *inboundExchange) {
	e := &x.e
	var client, server []snapshots.Message
	if x.reqTap != nil {
		x.reqTap.drain(drainTime)
		client, e.RequestBodySize = x.reqTap.result(in.limit)
	}
	switch {
	case x.res != nil:
		e.Status = x.res.StatusCode
		e.ResponseHeader = x.res.Header
		if len(x.res.Trailer) > 0 {
			e.ResponseTrailer = x.res.Trailer
		}
		e.ResponseBody, e.ResponseBodySize = x.resBody.buf, x.resBody.size
		if x.err == nil {
			x.err = x.resBody.err
		}
		if x.resTap != nil {
			server, e.ResponseBodySize = x.resTap.result(in.limit)
			if x.err == nil {
				x.err = x.resTap.err
			}
		}
	case x.errHeader != nil:
		e.Status = x.errStatus
		e.ResponseBody, e.ResponseBodySize = x.errBody[:min(int64(len(x.errBody)), in.limit)], int64(len(x.errBody))
		e.ResponseHeader = x.errHeader
	}
	e.Messages = mergeMessages(client, server)
}

// service returns the host:port the client addressed.
func service(r *http.Request, scheme string) string {
	host := r.Host
	if host == "" {
		if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
			return a.String()
		}
		return ""
	}
	if hasPort(host) {
		return host
	}
	if scheme == "https" {
		return net.JoinHostPort(strings.Trim(host, "[]"), "443")
	}
	return net.JoinHostPort(strings.Trim(host, "[]"), "80")
}

// hasPort reports whether host (a Host header value) ends in a port.
func hasPort(host string) bool {
	i := strings.LastIndexByte(host, ':')
	return i >= 0 && i > strings.LastIndexByte(host, ']')
}

// absoluteURL returns the URL the client addressed, with scheme and host.
func absoluteURL(r *http.Request, scheme string) string {
	uri := r.RequestURI
	if uri == "" || uri[0] != '/' {
		if r.URL.IsAbs() {
			return r.URL.String()
		}
		uri = r.URL.RequestURI()
	}
	host := r.Host
	if host == "" {
		host = service(r, scheme)
	}
	return scheme + "://" + host + uri
}
