package replayer

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
)

// The direct HTTP/2 client: what golang.org/x/net/http2's transport costs
// per call (a goroutine, a request and a header map per stream, headers
// encoded field by field, a write system call for the HEADERS frame and
// another for the DATA frame) kept replay run below 1.5× ghz's RPCs per
// CPU-second (docs/benchmarks.md). This client writes each template's
// HEADERS block encoded once (HPACK literals, no dynamic table) and its
// recorded DATA, the frames of every stream queued meanwhile going out in
// one write by the connection's writer goroutine; a reader goroutine reads
// frames with http2.Framer and hands each stream its answer. Flow control
// as the server sets it (SETTINGS, WINDOW_UPDATE); received data is
// acknowledged. h2c with prior knowledge, or h2 by ALPN over TLS.
// Config.NetHTTP keeps x/net/http2's transport (h2.go).

// h2Direct sends requests over a fixed number of HTTP/2 connections taken
// in turn; a connection that failed or was told to go away is replaced on
// its next use.
type h2Direct struct {
	addr   string // host:port
	secure bool
	tls    *tls.Config
	dialer net.Dialer
	next   atomic.Uint32
	slots  []h2Slot
}

type h2Slot struct {
	mu sync.Mutex
	c  *h2Conn
}

func newH2Direct(n int, u *url.URL, tlsCfg *tls.Config) *h2Direct {
	secure := u.Scheme == "https"
	addr := u.Host
	if u.Port() == "" {
		port := "80"
		if secure {
			port = "443"
		}
		addr = net.JoinHostPort(u.Hostname(), port)
	}
	cfg := tlsCfg.Clone()
	if cfg == nil {
		cfg = &tls.Config{}
	}
	if cfg.ServerName == "" {
		cfg.ServerName = u.Hostname()
	}
	cfg.NextProtos = []string{http2.NextProtoTLS}
	return &h2Direct{addr: addr, secure: secure, tls: cfg, slots: make([]h2Slot, n),
		dialer: net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}}
}

// conn returns the connection of the next slot, dialing it when it has
// none that takes new streams.
func (d *h2Direct) conn(ctx context.Context) (*h2Conn, error) {
	s := &d.slots[int(d.next.Add(1))%len(d.slots)]
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.c != nil && s.c.usable() {
		return s.c, nil
	}
	nc, err := dialH2(ctx, &d.dialer, "tcp", d.addr, d.secure, d.tls)
	if err != nil {
		return nil, err
	}
	if s.c != nil {
		s.c.retire()
	}
	s.c = newH2Conn(nc)
	return s.c, nil
}

func (d *h2Direct) closeIdle() {
	for i := range d.slots {
		s := &d.slots[i]
		s.mu.Lock()
		if s.c != nil {
			s.c.retire()
			s.c = nil
		}
		s.mu.Unlock()
	}
}

// errUnprocessed ends a stream the server did not process (GOAWAY past
// it, REFUSED_STREAM): it is sent again on another connection.
var errUnprocessed = errors.New("http2: the server refused the stream unprocessed")

// roundTrip sends t with traceparent tp and reads its answer, its body
// through tap when set (as readAnswer does); the answer's Body is nil.
func (d *h2Direct) roundTrip(ctx context.Context, t *template, tp string, tap *bodyTap) (*http.Response, int64, error) {
	for attempt := 0; ; attempt++ {
		c, err := d.conn(ctx)
		if err != nil {
			return nil, 0, err
		}
		s, err := c.open(ctx, t, tp, tap)
		if err == nil {
			err = c.wait(ctx, s)
		}
		if errors.Is(err, errUnprocessed) && attempt < 3 && ctx.Err() == nil {
			tap.restart()
			continue
		}
		if err != nil {
			return nil, 0, err
		}
		return &http.Response{StatusCode: s.status, Header: s.header, Trailer: s.trailer,
			Proto: "HTTP/2.0", ProtoMajor: 2}, s.n, nil
	}
}

// headerBlock returns t's request headers HPACK-encoded, but for its
// traceparent: literals without indexing, as no dynamic table is used.
func (h *h2Template) headerBlock(t *template) []byte {
	h.once.Do(func() { h.block, h.send = encodeH2Header(t) })
	return h.block
}

// encodeH2Header encodes t's header block (what x/net/http2's transport
// sends for it: pseudo-headers, the recorded headers lowercased but for
// connection-specific ones, content-length, te for gRPC), and reports
// whether the request has a body to send.
func encodeH2Header(t *template) ([]byte, bool) {
	g := t.h2.grpc
	open := g != nil && g.open
	b := appendHPACK(nil, ":method", t.method)
	b = appendHPACK(b, ":scheme", t.url.Scheme)
	b = appendHPACK(b, ":authority", t.host)
	b = appendHPACK(b, ":path", t.uri)
	ua := false
	for k, vs := range t.header {
		switch lk := strings.ToLower(k); lk {
		case "host", "connection", "proxy-connection", "transfer-encoding", "upgrade", "keep-alive", "te", "content-length", "traceparent":
		default:
			ua = ua || lk == "user-agent"
			for _, v := range vs {
				b = appendHPACK(b, lk, v)
			}
		}
	}
	if !ua {
		b = appendHPACK(b, "user-agent", "Go-http-client/2.0")
	}
	if g != nil {
		b = appendHPACK(b, "te", "trailers")
	}
	n := len(t.body)
	if !open && (n > 0 || t.method == http.MethodPost || t.method == http.MethodPut || t.method == http.MethodPatch) {
		b = appendHPACK(b, "content-length", fmt.Sprint(n))
	}
	return b, n > 0 || open
}

// appendHPACK appends name: value as an HPACK literal header field
// without indexing, a new name, strings not Huffman-coded (RFC 7541 6.2.2).
func appendHPACK(b []byte, name, value string) []byte {
	b = append(b, 0)
	b = appendHPACKInt(b, uint64(len(name)))
	b = append(b, name...)
	b = appendHPACKInt(b, uint64(len(value)))
	return append(b, value...)
}

// appendHPACKInt appends v with a 7-bit prefix, the H bit clear
// (RFC 7541 5.1).
func appendHPACKInt(b []byte, v uint64) []byte {
	if v < 127 {
		return append(b, byte(v))
	}
	b = append(b, 127)
	v -= 127
	for v >= 128 {
		b = append(b, byte(v&0x7f|0x80))
		v >>= 7
	}
	return append(b, byte(v))
}
