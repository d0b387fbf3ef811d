package recorder

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"golang.org/x/net/http2"

	"github.com/replaykit/replay/grpcwire"
	"github.com/replaykit/replay/snapshots"
)

// HTTP2Transport forwards HTTP/2 requests with golang.org/x/net/http2:
// HTTP/2 only, h2c with prior knowledge to http:// (as gRPC clients speak
// it) and h2 by ALPN to https://. It never uses a proxy from the
// environment and never decompresses. A stream the peer resets comes back
// as an http2.StreamError.
type HTTP2Transport struct {
	h2c, h2 *http2.Transport
}

// NewHTTP2Transport returns an HTTP2Transport that dials with dial (nil: a
// plain net.Dialer) and verifies TLS with tlsConfig (nil: the system
// roots).
func NewHTTP2Transport(dial func(ctx context.Context, network, addr string) (net.Conn, error), tlsConfig *tls.Config) *HTTP2Transport {
	if dial == nil {
		d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
		dial = d.DialContext
	}
	plain := &http2.Transport{
		AllowHTTP:          true,
		DisableCompression: true,
		DialTLSContext: func(ctx context.Context, network, addr string, _ *tls.Config) (net.Conn, error) {
			return dial(ctx, network, addr)
		},
	}
	secure := &http2.Transport{
		TLSClientConfig:    tlsConfig.Clone(),
		DisableCompression: true,
		DialTLSContext: func(ctx context.Context, network, addr string, cfg *tls.Config) (net.Conn, error) {
			c, err := dial(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			tc := tls.Client(c, cfg)
			if err := tc.HandshakeContext(ctx); err != nil {
				c.Close()
				return nil, err
			}
			return tc, nil
		},
	}
	return &HTTP2Transport{h2c: plain, h2: secure}
}

// RoundTrip sends r over h2c or h2, by its URL's scheme.
func (t *HTTP2Transport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Scheme == "https" {
		return t.h2.RoundTrip(r)
	}
	return t.h2c.RoundTrip(r)
}

// CloseIdleConnections closes the connections no stream uses.
func (t *HTTP2Transport) CloseIdleConnections() {
	t.h2c.CloseIdleConnections()
	t.h2.CloseIdleConnections()
}

// InboundProtocols are the protocols an inbound proxy serves: HTTP/1.1,
// h2c with prior knowledge on the same listener (net/http tells them apart
// by the HTTP/2 preface), and h2 where it serves TLS.
func InboundProtocols() *http.Protocols {
	p := new(http.Protocols)
	p.SetHTTP1(true)
	p.SetHTTP2(true)
	p.SetUnencryptedHTTP2(true)
	return p
}

// byProto sends a request over HTTP/2 or HTTP/1.1 as its inbound exchange
// chose (inboundExchange.h2).
type byProto struct {
	h1, h2 http.RoundTripper
}

func (t byProto) RoundTrip(r *http.Request) (*http.Response, error) {
	if x, _ := r.Context().Value(inboundKey{}).(*inboundExchange); x != nil && x.h2 {
		return t.h2.RoundTrip(r)
	}
	return t.h1.RoundTrip(r)
}

// wantsHTTP2 reports whether an inbound request goes to the app over
// HTTP/2: a gRPC call always (gRPC needs HTTP/2 end to end, trailers
// included); other HTTP/2 requests when they came in the clear (h2c: a
// client speaking h2c with prior knowledge to where the app was shows that
// the app speaks it). REST that came over TLS goes on as HTTP/1.1, which
// every app behind a TLS front speaks.
func wantsHTTP2(r *http.Request, grpc bool) bool {
	return r.ProtoMajor == 2 && (grpc || r.TLS == nil)
}

// grpcTap records one side of a gRPC call as its bytes pass: the client's
// is read by the transport's goroutine, which can outlive the handler,
// hence the lock (never held while reading; reads have their own).
type grpcTap struct {
	rc io.ReadCloser
	// rmu serializes reads: drain may read while the transport still does.
	rmu sync.Mutex
	mu  sync.Mutex
	s   grpcwire.Stream
	// err is the body's read error other than EOF; eof that the body ended.
	err error
	eof bool
	// request taps keep the client's body open when the transport closes
	// it (it does when the upstream has answered), so that drain can still
	// read what the client sent; drain closes it.
	request bool
}

func newGRPCTap(rc io.ReadCloser, from snapshots.Sender, start time.Time, encoding string, limit int64) *grpcTap {
	t := &grpcTap{rc: rc, request: from == snapshots.FromClient}
	t.s = grpcwire.Stream{From: from, Start: start, Encoding: encoding, Keep: int(limit), Budget: limit}
	if limit <= 0 {
		t.s.Keep, t.s.Budget = 1, 1 // keep sizes only
	}
	return t
}

func (t *grpcTap) Read(p []byte) (int, error) {
	t.rmu.Lock()
	n, err := t.rc.Read(p)
	t.rmu.Unlock()
	if n > 0 || err != nil && err != io.EOF {
		t.mu.Lock()
		if n > 0 {
			t.s.Write(p[:n])
		}
		if err != nil && err != io.EOF {
			t.err = err
		}
		t.mu.Unlock()
	}
	if err == io.EOF {
		t.mu.Lock()
		t.eof = true
		t.mu.Unlock()
	}
	return n, err
}

// drain reads what the client sent that the upstream did not read (it
// answered before the request ended: an error, "Trailers-Only"), so that
// the recording holds the messages the client sent; for at most d, then
// the body is closed.
func (t *grpcTap) drain(d time.Duration) {
	defer t.rc.Close()
	t.mu.Lock()
	done := t.eof || t.err != nil
	t.mu.Unlock()
	if done {
		return
	}
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		io.Copy(io.Discard, t)
	}()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ended:
	case <-timer.C:
		t.rc.Close() // unblocks the reads
		<-ended
	}
}

// drainTime bounds grpcTap.drain: the messages of a request the upstream
// answered early are already on their way.
const drainTime = 50 * time.Millisecond

func (t *grpcTap) Close() error {
	if t.request {
		return nil // drain closes it; the server does when the handler ends
	}
	return t.rc.Close()
}

// result returns the messages whole so far and the bytes that passed.
func (t *grpcTap) result(limit int64) ([]snapshots.Message, int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	ms := slices.Clone(t.s.Messages())
	if limit <= 0 {
		for i := range ms {
			ms[i].Data = nil
		}
	}
	return ms, t.s.WireBytes()
}

// mergeMessages puts both sides' messages in the order they were whole.
func mergeMessages(client, server []snapshots.Message) []snapshots.Message {
	if len(client)+len(server) == 0 {
		return nil
	}
	all := append(slices.Clip(client), server...)
	slices.SortStableFunc(all, func(a, b snapshots.Message) int {
		switch {
		case a.Offset < b.Offset:
			return -1
		case a.Offset > b.Offset:
			return 1
		}
		return 0
	})
	return all
}

// grpcFailure is how a proxy answers a gRPC call it could not forward: as
// gRPC does (HTTP 200, "Trailers-Only", a grpc-status), so that the client
// reports a gRPC error rather than a bad HTTP status. A call whose deadline
// (grpc-timeout) has passed waits a moment for the client's own cancel,
// which then reports DEADLINE_EXCEEDED as it would without the proxy.
func grpcFailure(r *http.Request, start time.Time, err error) http.Header {
	if d, perr := grpcwire.ParseTimeout(r.Header.Get("Grpc-Timeout")); perr == nil && time.Since(start) >= d {
		select {
		case <-r.Context().Done():
		case <-time.After(time.Second):
		}
	}
	code := 14 // UNAVAILABLE: the app or upstream could not be reached
	var se http2.StreamError
	switch {
	case errors.As(err, &se):
		code = rstCode(se.Code)
	case errors.Is(err, context.DeadlineExceeded):
		code = 4
	case errors.Is(err, context.Canceled):
		code = 1
	}
	st := grpcwire.Status{Code: code, Message: "replay: " + err.Error()}
	h := st.Trailer()
	h.Set("Content-Type", "application/grpc")
	return h
}

// rstCode maps an HTTP/2 RST_STREAM code to a gRPC status code as gRPC's
// specification does.
func rstCode(c http2.ErrCode) int {
	switch c {
	case http2.ErrCodeRefusedStream:
		return 14
	case http2.ErrCodeCancel:
		return 1
	case http2.ErrCodeEnhanceYourCalm:
		return 8
	case http2.ErrCodeInadequateSecurity:
		return 7
	}
	return 13 // INTERNAL
}
