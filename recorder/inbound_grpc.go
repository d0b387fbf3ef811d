package recorder

import (
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/replaykit/replay/grpcwire"
	"github.com/replaykit/replay/snapshots"
)

// NewHTTP2Transport returns the transport that forwards HTTP/2 requests:
// HTTP/2 only, h2c with prior knowledge to http:// (as gRPC clients speak
// it) and h2 by ALPN to https://, no proxy from the environment, no
// transparent decompression. tlsConfig may be nil.
func NewHTTP2Transport(tlsConfig *tls.Config) *http.Transport {
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	p := new(http.Protocols)
	p.SetHTTP2(true)
	p.SetUnencryptedHTTP2(true)
	return &http.Transport{
		DialContext:         d.DialContext,
		TLSClientConfig:     tlsConfig,
		Protocols:           p,
		MaxIdleConnsPerHost: 1024,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: 10 * time.Second,
		DisableCompression:  true,
	}
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
// hence the lock (never held while reading).
type grpcTap struct {
	rc io.ReadCloser
	mu sync.Mutex
	s  grpcwire.Stream
	// err is the body's read error other than EOF.
	err error
}

func newGRPCTap(rc io.ReadCloser, from snapshots.Sender, start time.Time, encoding string, limit int64) *grpcTap {
	t := &grpcTap{rc: rc}
	t.s = grpcwire.Stream{From: from, Start: start, Encoding: encoding, Keep: int(limit), Budget: limit}
	if limit <= 0 {
		t.s.Keep, t.s.Budget = 1, 1 // keep sizes only
	}
	return t
}

func (t *grpcTap) Read(p []byte) (int, error) {
	n, err := t.rc.Read(p)
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
	return n, err
}

func (t *grpcTap) Close() error { return t.rc.Close() }

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
