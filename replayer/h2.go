package replayer

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"

	"github.com/replaykit/replay/snapshots"
)

// The HTTP/2 client: requests recorded over HTTP/2 (gRPC calls, REST over
// h2c or h2) are replayed over HTTP/2, multiplexed as streams over
// Config.Conns connections, whatever the load model: h2c with prior
// knowledge to an http:// target (as gRPC clients speak it), h2 by ALPN to
// an https:// one. The direct client (h2direct.go) sends them, or with
// Config.NetHTTP golang.org/x/net/http2's transport; requests recorded over
// HTTP/1.1 keep their own clients (h1.go, net/http).

// DefaultConns is the number of HTTP/2 connections to the target when
// Config.Conns is zero: one, as gRPC clients open.
const DefaultConns = 1

// h2Client sends requests over a fixed set of HTTP/2 connections, each
// the one connection of its own transport, taken in turn.
type h2Client struct {
	// direct, unless Config.NetHTTP, sends every request (h2direct.go);
	// ts are then unused.
	direct *h2Direct
	ts     []*http2.Transport
	next   atomic.Uint32
	// bufs are the buffers answers are read with: io.Copy would allocate
	// 32 KiB per answer read through a tap (most of the client's garbage).
	bufs sync.Pool
}

// newH2Client returns a client of n connections, over TLS configured by
// tlsCfg (nil: the system roots) when secure.
func newH2Client(n int, u *url.URL, tlsCfg *tls.Config, netHTTP bool) *h2Client {
	if !netHTTP {
		return &h2Client{direct: newH2Direct(n, u, tlsCfg)}
	}
	secure := u.Scheme == "https"
	c := &h2Client{ts: make([]*http2.Transport, n)}
	c.bufs.New = func() any { b := make([]byte, 16<<10); return &b }
	d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	for i := range c.ts {
		c.ts[i] = &http2.Transport{
			AllowHTTP:          true,
			DisableCompression: true, // send what was recorded, count bytes as received
			TLSClientConfig:    tlsCfg.Clone(),
			// One connection per transport: streams wait for a free slot
			// on it rather than open more connections than asked for.
			StrictMaxConcurrentStreams: true,
			// No HPACK dynamic table: each request's traceparent is new,
			// and indexing it evicted an entry per request (15% of the
			// client's CPU); headers go as literals, a few bytes more.
			MaxEncoderHeaderTableSize: 1,
			DialTLSContext: func(ctx context.Context, network, addr string, cfg *tls.Config) (net.Conn, error) {
				return dialH2(ctx, d, network, addr, secure, cfg)
			},
		}
	}
	return c
}

// dialH2 dials addr in the clear for h2c (prior knowledge), or over TLS
// asking for h2 by ALPN when secure.
func dialH2(ctx context.Context, d *net.Dialer, network, addr string, secure bool, cfg *tls.Config) (net.Conn, error) {
	nc, err := d.DialContext(ctx, network, addr)
	if err != nil || !secure {
		return nc, err
	}
	tc := tls.Client(nc, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		nc.Close()
		return nil, fmt.Errorf("TLS handshake with %s asking for HTTP/2 (ALPN h2): %w", addr, err)
	}
	if p := tc.ConnectionState().NegotiatedProtocol; p != http2.NextProtoTLS {
		nc.Close()
		return nil, fmt.Errorf("%s does not offer HTTP/2 over TLS (ALPN h2; it chose %q)", addr, p)
	}
	return tc, nil
}

// roundTrip sends req on the next connection.
func (c *h2Client) roundTrip(req *http.Request) (*http.Response, error) {
	t := c.ts[int(c.next.Add(1))%len(c.ts)]
	return t.RoundTrip(req)
}

func (c *h2Client) closeIdle() {
	if c.direct != nil {
		c.direct.closeIdle()
	}
	for _, t := range c.ts {
		t.CloseIdleConnections()
	}
}

// sendH2 sends t over HTTP/2, the answer read through tap when set; it sets
// res.Sent and res.Done, and for a gRPC call res's gRPC statuses.
func (r *Replayer) sendH2(ctx context.Context, t *template, tp string, res *snapshots.Result, tap *bodyTap) (status int, n int64, err error) {
	g := t.h2.grpc
	res.Sent = time.Now()
	deadline, cause := res.Sent.Add(r.timeout), errTimeout
	if g != nil {
		deadline, cause = g.deadline(res.Sent, deadline)
		res.GRPC, res.RecordedGRPCStatus, res.GRPCStatus = true, g.recorded, snapshots.NoGRPCStatus
	}
	rctx, cancel := context.WithDeadlineCause(ctx, deadline, cause)
	defer cancel()
	var resp *http.Response
	if r.h2.direct != nil {
		resp, n, err = r.h2.direct.roundTrip(rctx, t, tp, tap)
		if err == nil {
			status = resp.StatusCode
		}
	} else if resp, err = r.h2.roundTrip(newH2Request(rctx, t, tp)); err == nil {
		status = resp.StatusCode
		n, err = r.h2.readAnswer(resp, g, tap)
	}
	if err == nil && g != nil {
		res.GRPCStatus = grpcStatusOf(resp)
	}
	res.Done = time.Now()
	if err != nil && strings.Contains(err.Error(), "looked like an HTTP/1.1 header") {
		err = fmt.Errorf("the target answered in HTTP/1.1 where the request, recorded over HTTP/2, went as h2c (HTTP/2 with prior knowledge): %w", err)
	}
	if err != nil && g != nil && ctx.Err() == nil {
		// The call's own deadline or the recorded cancel ended it: a
		// status, as a gRPC client reports it, not a transport error.
		why := context.Cause(rctx)
		if why == nil && resetAtDeadline(err, deadline) {
			why = cause
		}
		switch why {
		case errGRPCDeadline:
			res.GRPCStatus, err = 4, nil // DEADLINE_EXCEEDED
		case errClientCancel:
			res.GRPCStatus, err = 1, nil // CANCELLED
		}
	}
	if err == nil && g != nil {
		tap.noteGRPC(resp, res.GRPCStatus)
	}
	return status, n, err
}

// newH2Request is t's request with traceparent tp, bound to ctx.
func newH2Request(ctx context.Context, t *template, tp string) *http.Request {
	g := t.h2.grpc
	h := make(http.Header, len(t.header)+2)
	for k, vs := range t.header {
		h[k] = vs
	}
	h["Traceparent"] = []string{tp}
	if g != nil {
		h["Te"] = []string{"trailers"}
	}
	req := &http.Request{
		Method:        t.method,
		URL:           t.url,
		Proto:         "HTTP/2.0",
		ProtoMajor:    2,
		Header:        h,
		Host:          t.host,
		ContentLength: int64(len(t.body)),
		Body:          t.h2.body(ctx, t.body),
	}
	if g != nil && g.open {
		req.ContentLength = -1 // the stream stays open until the call ends
	} else if req.Body != nil {
		// The transport sends it again on a new connection when the
		// server refused the stream unprocessed (GOAWAY, REFUSED_STREAM).
		req.GetBody = func() (io.ReadCloser, error) { return t.h2.body(ctx, t.body), nil }
	}
	return req.WithContext(ctx)
}

// readAnswer reads an answer's body to its end (and so its trailers),
// through tap when set, and returns its size.
func (c *h2Client) readAnswer(resp *http.Response, g *grpcTemplate, tap *bodyTap) (int64, error) {
	defer resp.Body.Close()
	var w io.Writer = io.Discard
	if tap != nil {
		tap.headerOf(resp.Header)
		if g != nil {
			tap.keepMessages()
		}
		if g == nil || !g.open {
			// A call the recording client ended itself is compared by its
			// status alone (grpcSample): what came before is timing.
			w = tap
		}
	}
	bp := c.bufs.Get().(*[]byte)
	defer c.bufs.Put(bp)
	return io.CopyBuffer(w, resp.Body, *bp)
}

// The causes of an HTTP/2 request's end before its answer.
var (
	errTimeout      = errors.New("replay timeout")
	errGRPCDeadline = errors.New("grpc deadline as recorded")
	errClientCancel = errors.New("canceled as recorded")
)

// h2Template is what a request recorded over HTTP/2 needs beyond its
// template; nil for one recorded over HTTP/1.1.
type h2Template struct {
	// grpc is set for a gRPC call.
	grpc *grpcTemplate
	// The direct client's HEADERS block but for the traceparent, and
	// whether a body follows (headerBlock).
	once  sync.Once
	block []byte
	send  bool
}

// body returns the request body: b (nil when empty), and for a gRPC call
// whose stream the recording client left open (grpcTemplate.open), b then
// nothing until ctx ends, as recorded.
func (h *h2Template) body(ctx context.Context, b []byte) io.ReadCloser {
	if h.grpc != nil && h.grpc.open {
		return io.NopCloser(io.MultiReader(bytes.NewReader(b), ctxReader{ctx}))
	}
	if len(b) == 0 {
		return nil
	}
	return io.NopCloser(bytes.NewReader(b))
}

// ctxReader blocks until its context ends.
type ctxReader struct{ ctx context.Context }

func (c ctxReader) Read([]byte) (int, error) {
	<-c.ctx.Done()
	return 0, context.Cause(c.ctx)
}

// newH2Template returns e's HTTP/2 part, and its body as sent: a gRPC
// call's client messages framed; nil for an exchange recorded over
// HTTP/1.1.
func newH2Template(e *snapshots.Exchange) (*h2Template, []byte, error) {
	if e.Proto != "HTTP/2.0" && !e.IsGRPC() {
		return nil, e.RequestBody, nil
	}
	h := &h2Template{}
	if !e.IsGRPC() {
		return h, e.RequestBody, nil
	}
	g, body, err := newGRPCTemplate(e)
	if err != nil {
		return nil, nil, fmt.Errorf("replayer: exchange %d: %w", e.ID, err)
	}
	h.grpc = g
	return h, body, nil
}
