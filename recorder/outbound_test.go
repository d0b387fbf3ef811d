package recorder

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/replaykit/replay/internal/ca"
	"github.com/replaykit/replay/snapshots"
)

// obSink keeps outbound exchanges in memory.
type obSink struct {
	mu        sync.Mutex
	exchanges []*snapshots.Exchange
	seen      atomic.Int64
	ids       atomic.Int64
	added     chan struct{}
}

func newOBSink() *obSink { return &obSink{added: make(chan struct{}, 1<<16)} }

func (s *obSink) NewID() int64 { return s.ids.Add(1) }

func (s *obSink) AddExchange(e *snapshots.Exchange) {
	s.mu.Lock()
	s.exchanges = append(s.exchanges, e)
	s.mu.Unlock()
	s.added <- struct{}{}
}

func (s *obSink) CountSeen(d snapshots.Direction) {
	if d == snapshots.Outbound {
		s.seen.Add(1)
	}
}

func (s *obSink) wait(t *testing.T, n int) []*snapshots.Exchange {
	t.Helper()
	for range n {
		select {
		case <-s.added:
		case <-time.After(30 * time.Second):
			t.Fatalf("waited 30s for %d exchanges; have %d", n, len(s.all()))
		}
	}
	return s.all()
}

func (s *obSink) all() []*snapshots.Exchange {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*snapshots.Exchange(nil), s.exchanges...)
}

// obEnv is an outbound recorder on loopback with its CA, and upstream
// servers reached through made-up host names.
type obEnv struct {
	t          testing.TB
	sink       *obSink
	proxyCA    *ca.CA // the recorder's CA, which the app trusts
	upstreamCA *ca.CA // signs the upstream servers' certificates
	resolve    map[string]string
	cfg        OutboundConfig
	out        *Outbound
	proxyURL   *url.URL
}

func newOBEnv(t testing.TB) *obEnv {
	t.Helper()
	dir := t.TempDir()
	proxyCA, err := ca.LoadOrCreate(dir + "/proxy")
	if err != nil {
		t.Fatal(err)
	}
	upstreamCA, err := ca.LoadOrCreate(dir + "/upstream")
	if err != nil {
		t.Fatal(err)
	}
	return &obEnv{t: t, sink: newOBSink(), proxyCA: proxyCA, upstreamCA: upstreamCA, resolve: map[string]string{}}
}

// https starts an upstream HTTPS server (httptest) answering as host:port;
// the recorder trusts it through UpstreamTLS and reaches it through Resolve.
func (e *obEnv) https(hostport string, h http.Handler) *httptest.Server {
	e.t.Helper()
	host, _, _ := net.SplitHostPort(hostport)
	leaf, err := e.upstreamCA.Leaf(host)
	if err != nil {
		e.t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{*leaf}}
	srv.StartTLS()
	e.t.Cleanup(srv.Close)
	e.resolve[hostport] = srv.Listener.Addr().String()
	return srv
}

// http starts a plain upstream server answering as host:port.
func (e *obEnv) http(hostport string, h http.Handler) *httptest.Server {
	e.t.Helper()
	srv := httptest.NewServer(h)
	e.t.Cleanup(srv.Close)
	e.resolve[hostport] = srv.Listener.Addr().String()
	return srv
}

// start starts the recorder with e.cfg (CA, Resolve, and unless set Sink
// and UpstreamTLS filled in).
func (e *obEnv) start() {
	e.t.Helper()
	cfg := e.cfg
	cfg.CA, cfg.Resolve = e.proxyCA, e.resolve
	if cfg.Sink == nil {
		cfg.Sink = e.sink
	}
	if cfg.UpstreamTLS == nil {
		cfg.UpstreamTLS = &tls.Config{RootCAs: e.upstreamCA.Pool()}
	}
	out, err := NewOutbound(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	srv := httptest.NewServer(out)
	e.t.Cleanup(func() {
		srv.Close()
		out.Close()
	})
	e.out = out
	e.proxyURL, _ = url.Parse(srv.URL)
}

// client is an app's HTTP client going through the recorder and trusting
// its CA; it does not decompress, so bodies arrive as sent.
func (e *obEnv) client() *http.Client {
	return &http.Client{Transport: &http.Transport{
		Proxy:              http.ProxyURL(e.proxyURL),
		TLSClientConfig:    &tls.Config{RootCAs: e.proxyCA.Pool()},
		DisableCompression: true,
	}}
}

func (e *obEnv) get(c *http.Client, url string, hdr ...string) (*http.Response, []byte) {
	e.t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := c.Do(req)
	if err != nil {
		e.t.Fatalf("GET %s: %v", url, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		e.t.Fatalf("GET %s: read body: %v", url, err)
	}
	return res, body
}

// TestOutboundRecordsExchange checks every field a mock needs to answer the
// call later, for HTTPS and plain HTTP, default and explicit ports.
func TestOutboundRecordsExchange(t *testing.T) {
	e := newOBEnv(t)
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Upstream-Host", r.Host)
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"method":%q,"path":%q,"query":%q,"got":%q}`, r.Method, r.URL.Path, r.URL.RawQuery, body)
	})
	e.https("api.test:443", handler)
	e.https("api.test:8443", handler)
	e.http("plain.test:80", handler)
	e.http("plain.test:8080", handler)
	e.start()
	c := e.client()

	tests := []struct {
		url, protocol, service, host string
	}{
		{"https://api.test/products?x=1&y=2", "https", "api.test:443", "api.test"},
		{"https://api.test:8443/products?x=1", "https", "api.test:8443", "api.test:8443"},
		{"http://plain.test/products?x=1", "http", "plain.test:80", "plain.test"},
		{"http://plain.test:8080/products?x=1", "http", "plain.test:8080", "plain.test:8080"},
	}
	for i, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			reqBody := `{"sku":"A-1","qty":2}`
			req, _ := http.NewRequest(http.MethodPost, tt.url, strings.NewReader(reqBody))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-Request", "r1")
			start := time.Now()
			res, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != http.StatusCreated {
				t.Fatalf("status %d, body %s", res.StatusCode, body)
			}
			if got := res.Header.Get("X-Upstream-Host"); got != tt.host {
				t.Errorf("upstream saw Host %q, want %q", got, tt.host)
			}
			ex := e.sink.wait(t, 1)[i]
			want := snapshots.Exchange{
				ID:               int64(i + 1),
				Direction:        snapshots.Outbound,
				Protocol:         tt.protocol,
				Service:          tt.service,
				Method:           http.MethodPost,
				URL:              tt.url,
				Proto:            "HTTP/1.1",
				RequestBody:      []byte(reqBody),
				RequestBodySize:  int64(len(reqBody)),
				Status:           http.StatusCreated,
				ResponseBody:     body,
				ResponseBodySize: int64(len(body)),
			}
			got := *ex
			if got.Start.Before(start) || got.Start.After(time.Now()) || got.Duration <= 0 {
				t.Errorf("Start %v Duration %v out of range", got.Start, got.Duration)
			}
			if got.RequestHeader.Get("X-Request") != "r1" || got.RequestHeader.Get("Content-Type") != "application/json" {
				t.Errorf("request headers %v", got.RequestHeader)
			}
			if got.ResponseHeader.Get("Content-Type") != "application/json" || got.ResponseHeader.Get("Content-Length") != fmt.Sprint(len(body)) {
				t.Errorf("response headers %v", got.ResponseHeader)
			}
			got.Start, got.Duration, got.RequestHeader, got.ResponseHeader = time.Time{}, 0, nil, nil
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("exchange (-want +got):\n%s", d)
			}
		})
	}
	if n := e.sink.seen.Load(); n != int64(len(tests)) {
		t.Errorf("CountSeen(Outbound) called %d times, want %d", n, len(tests))
	}
}

func gzipBytes(t testing.TB, s string) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write([]byte(s))
	zw.Close()
	return buf.Bytes()
}

// TestOutboundGzip: the app receives the upstream's gzip bytes and the
// snapshot holds the same bytes, with and without a Content-Length.
func TestOutboundGzip(t *testing.T) {
	e := newOBEnv(t)
	gz := gzipBytes(t, strings.Repeat(`{"sku":"A-1","name":"widget"},`, 500))
	var sawEncoding sync.Map
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sawEncoding.Store(r.URL.Path, r.Header.Get("Accept-Encoding"))
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Encoding", "gzip")
		if r.URL.Path == "/chunked" {
			w.Write(gz[:len(gz)/2])
			w.(http.Flusher).Flush()
			w.Write(gz[len(gz)/2:])
			return
		}
		w.Header().Set("Content-Length", fmt.Sprint(len(gz)))
		w.Write(gz)
	})
	e.https("api.test:443", handler)
	e.http("plain.test:80", handler)
	e.start()
	c := e.client()
	urls := []string{"https://api.test/sized", "https://api.test/chunked", "http://plain.test/sized", "http://plain.test/chunked"}
	for i, u := range urls {
		res, body := e.get(c, u, "Accept-Encoding", "gzip")
		if !bytes.Equal(body, gz) {
			t.Errorf("%s: app received %d bytes that differ from the upstream's %d gzip bytes", u, len(body), len(gz))
		}
		if res.Header.Get("Content-Encoding") != "gzip" {
			t.Errorf("%s: Content-Encoding %q", u, res.Header.Get("Content-Encoding"))
		}
		ex := e.sink.wait(t, 1)[i]
		if !bytes.Equal(ex.ResponseBody, gz) || ex.ResponseBodySize != int64(len(gz)) {
			t.Errorf("%s: snapshot holds %d bytes (size %d), not the upstream's gzip bytes", u, len(ex.ResponseBody), ex.ResponseBodySize)
		}
		if ex.ResponseHeader.Get("Content-Encoding") != "gzip" {
			t.Errorf("%s: recorded Content-Encoding %q", u, ex.ResponseHeader.Get("Content-Encoding"))
		}
		path := strings.TrimPrefix(strings.TrimPrefix(u, "https://api.test"), "http://plain.test")
		if got, _ := sawEncoding.Load(path); got != "gzip" {
			t.Errorf("%s: upstream saw Accept-Encoding %q, want the app's gzip", u, got)
		}
	}
	// An app that does not ask for gzip must not get it asked on its behalf.
	e.get(c, "https://api.test/plain")
	if got, _ := sawEncoding.Load("/plain"); got != "" {
		t.Errorf("upstream saw Accept-Encoding %q though the app sent none", got)
	}
}

// TestOutboundStreamsChunks: the app reads the first chunk while the
// upstream is still blocked before the second.
func TestOutboundStreamsChunks(t *testing.T) {
	for _, tt := range []struct {
		name  string
		url   string
		http2 bool
	}{
		{"https", "https://api.test/stream", false},
		{"http", "http://plain.test/stream", false},
		{"https-h2", "https://api.test/stream", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newOBEnv(t)
			release := make(chan struct{})
			var releaseOnce sync.Once
			unblock := func() { releaseOnce.Do(func() { close(release) }) }
			defer unblock()
			handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/plain")
				io.WriteString(w, "first chunk\n")
				w.(http.Flusher).Flush()
				select {
				case <-release:
				case <-time.After(time.Minute):
				}
				io.WriteString(w, "second chunk\n")
			})
			e.https("api.test:443", handler)
			e.http("plain.test:80", handler)
			e.cfg.HTTP2 = tt.http2
			e.start()
			c := e.client()
			if tt.http2 {
				c.Transport.(*http.Transport).ForceAttemptHTTP2 = true
			}
			res, err := c.Get(tt.url)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			if res.ContentLength != -1 {
				t.Errorf("ContentLength %d, want -1 (streamed)", res.ContentLength)
			}
			first := make(chan error, 1)
			buf := make([]byte, len("first chunk\n"))
			go func() {
				_, err := io.ReadFull(res.Body, buf)
				first <- err
			}()
			select {
			case err := <-first:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("the first chunk did not reach the app while the upstream held back the second")
			}
			if string(buf) != "first chunk\n" {
				t.Fatalf("first chunk %q", buf)
			}
			if n := len(e.sink.all()); n != 0 {
				t.Errorf("%d exchanges recorded before the response ended", n)
			}
			unblock()
			rest, err := io.ReadAll(res.Body)
			if err != nil || string(rest) != "second chunk\n" {
				t.Fatalf("rest %q, %v", rest, err)
			}
			ex := e.sink.wait(t, 1)[0]
			if string(ex.ResponseBody) != "first chunk\nsecond chunk\n" || ex.Error != "" {
				t.Errorf("recorded body %q, error %q", ex.ResponseBody, ex.Error)
			}
			wantProto := "HTTP/1.1"
			if tt.http2 {
				wantProto = "HTTP/2.0"
			}
			if res.Proto != wantProto || ex.Proto != wantProto {
				t.Errorf("app spoke %s, recorded %s, want %s", res.Proto, ex.Proto, wantProto)
			}
		})
	}
}

// patternBlock is the repeating unit of patternReader; its odd length
// keeps block boundaries off power-of-two buffer sizes.
var patternBlock = func() []byte {
	b := make([]byte, 1<<20+7)
	for i := range b {
		b[i] = byte(i ^ i>>8 ^ i>>16)
	}
	return b
}()

// patternReader yields n deterministic bytes.
type patternReader struct{ off, n int64 }

func (p *patternReader) Read(b []byte) (int, error) {
	if p.off >= p.n {
		return 0, io.EOF
	}
	b = b[:min(int64(len(b)), p.n-p.off)]
	k := int64(len(patternBlock))
	n := copy(b, patternBlock[p.off%k:])
	p.off += int64(n)
	return n, nil
}

func patternPrefix(n int64) []byte {
	b, _ := io.ReadAll(&patternReader{n: n})
	return b
}

// TestOutboundLargeBodies: 50 MB down and 16 MB up pass through intact; the
// recorded copies are capped.
func TestOutboundLargeBodies(t *testing.T) {
	const down, up, limit = 50 << 20, 16 << 20, 64 << 10
	e := newOBEnv(t)
	var upstreamGot atomic.Value
	e.https("api.test:443", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := sha256.New()
		n, _ := io.Copy(h, r.Body)
		upstreamGot.Store(fmt.Sprintf("%d:%x", n, h.Sum(nil)))
		w.Header().Set("Content-Length", fmt.Sprint(down))
		io.Copy(w, &patternReader{n: down})
	}))
	e.cfg.BodyLimit = limit
	e.start()

	wantDown := sha256.New()
	io.Copy(wantDown, &patternReader{n: down})
	wantUp := sha256.New()
	io.Copy(wantUp, &patternReader{n: up})

	res, err := e.client().Post("https://api.test/upload", "application/octet-stream", &patternReader{n: up})
	if err != nil {
		t.Fatal(err)
	}
	got := sha256.New()
	n, err := io.Copy(got, res.Body)
	res.Body.Close()
	if err != nil || n != down || !bytes.Equal(got.Sum(nil), wantDown.Sum(nil)) {
		t.Fatalf("app received %d bytes (err %v), hash match %v; want %d intact", n, err, bytes.Equal(got.Sum(nil), wantDown.Sum(nil)), down)
	}
	if g, w := upstreamGot.Load(), fmt.Sprintf("%d:%x", up, wantUp.Sum(nil)); g != w {
		t.Errorf("upstream received %v, want %v", g, w)
	}
	ex := e.sink.wait(t, 1)[0]
	if ex.ResponseBodySize != down || !bytes.Equal(ex.ResponseBody, patternPrefix(limit)) || !ex.ResponseTruncated() {
		t.Errorf("recorded response: %d of %d bytes, prefix match %v", len(ex.ResponseBody), ex.ResponseBodySize, bytes.Equal(ex.ResponseBody, patternPrefix(limit)))
	}
	if ex.RequestBodySize != up || !bytes.Equal(ex.RequestBody, patternPrefix(limit)) || !ex.RequestTruncated() {
		t.Errorf("recorded request: %d of %d bytes", len(ex.RequestBody), ex.RequestBodySize)
	}
	if ex.Error != "" {
		t.Errorf("Error %q", ex.Error)
	}
}

// TestOutboundLinksParent: by traceparent, else the one inbound request in
// flight, else none.
func TestOutboundLinksParent(t *testing.T) {
	const (
		traceA = "4bf92f3577b34da6a3ce929d0e0e4736"
		traceB = "0af7651916cd43dd8448eb211c80319c"
	)
	tp := func(trace string) string { return "00-" + trace + "-00f067aa0ba902b7-01" }
	e := newOBEnv(t)
	e.https("api.test:443", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	inflight := NewInflight()
	e.cfg.Inflight = inflight
	e.start()
	c := e.client()

	tests := []struct {
		name        string
		inflight    map[int64]string
		traceparent string
		wantParent  int64
		wantTrace   string
	}{
		{"traceparent among several", map[int64]string{7: traceA, 8: traceB, 9: ""}, tp(traceB), 8, traceB},
		{"no traceparent, several in flight", map[int64]string{7: traceA, 8: traceB}, "", 0, ""},
		{"no traceparent, one in flight", map[int64]string{11: ""}, "", 11, ""},
		{"unknown traceparent, one in flight", map[int64]string{12: traceA}, tp(traceB), 12, traceB},
		{"unknown traceparent, several in flight", map[int64]string{13: traceA, 14: ""}, tp(traceB), 0, traceB},
		{"nothing in flight", nil, tp(traceA), 0, traceA},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for id, trace := range tt.inflight {
				inflight.Begin(id, trace)
			}
			defer func() {
				for id := range tt.inflight {
					inflight.End(id)
				}
			}()
			hdr := []string{}
			if tt.traceparent != "" {
				hdr = append(hdr, "Traceparent", tt.traceparent)
			}
			e.get(c, "https://api.test/x", hdr...)
			ex := e.sink.wait(t, 1)[i]
			if ex.ParentID != tt.wantParent || ex.TraceID != tt.wantTrace {
				t.Errorf("ParentID %d TraceID %q, want %d %q", ex.ParentID, ex.TraceID, tt.wantParent, tt.wantTrace)
			}
		})
	}
}

// TestOutboundRedacts: secrets reach the upstream and the app, not the
// snapshot.
func TestOutboundRedacts(t *testing.T) {
	e := newOBEnv(t)
	var upstreamAuth atomic.Value
	e.https("api.test:443", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		upstreamAuth.Store(r.Header.Get("Authorization") + "|" + r.Header.Get("X-Api-Key"))
		http.SetCookie(w, &http.Cookie{Name: "session", Value: "s3cret"})
		w.Header().Set("X-Token", "tok")
	}))
	e.cfg.Sink = redacting(e.sink, "x-api-key", "X-Token")
	e.start()
	res, _ := e.get(e.client(), "https://api.test/me", "Authorization", "Bearer abc", "X-Api-Key", "k1", "Cookie", "c=1", "X-Other", "visible")
	if got := upstreamAuth.Load(); got != "Bearer abc|k1" {
		t.Errorf("upstream received %v", got)
	}
	if res.Header.Get("Set-Cookie") == "" || res.Header.Get("X-Token") != "tok" {
		t.Errorf("app did not receive the upstream's headers: %v", res.Header)
	}
	ex := e.sink.wait(t, 1)[0]
	for h, want := range map[string]string{"Authorization": "Bearer " + Redacted, "X-Api-Key": Redacted, "Cookie": Redacted} {
		if got := ex.RequestHeader.Get(h); got != want {
			t.Errorf("recorded request %s = %q, want %q", h, got, want)
		}
	}
	for _, h := range []string{"Set-Cookie", "X-Token"} {
		if got := ex.ResponseHeader.Get(h); got != Redacted {
			t.Errorf("recorded response %s = %q, want redacted", h, got)
		}
	}
	if ex.RequestHeader.Get("X-Other") != "visible" {
		t.Errorf("X-Other was not recorded: %v", ex.RequestHeader)
	}
}

// deadAddr returns a loopback address nobody listens on.
func deadAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// TestOutboundUpstreamDown: the app gets a 502 and the exchange is recorded
// with the error.
func TestOutboundUpstreamDown(t *testing.T) {
	e := newOBEnv(t)
	e.resolve["down.test:443"] = deadAddr(t)
	e.resolve["down.test:80"] = deadAddr(t)
	e.start()
	c := e.client()
	for i, u := range []string{"https://down.test/x?y=1", "http://down.test/x?y=1"} {
		res, body := e.get(c, u)
		if res.StatusCode != http.StatusBadGateway {
			t.Errorf("%s: status %d, want 502", u, res.StatusCode)
		}
		if !strings.Contains(string(body), "cannot reach down.test:") || res.Header.Get("X-Replay-Error") == "" {
			t.Errorf("%s: 502 does not explain itself: %q %v", u, body, res.Header)
		}
		ex := e.sink.wait(t, 1)[i]
		if ex.Error == "" || ex.Status != 0 || ex.URL != u || !strings.HasPrefix(ex.Service, "down.test:") {
			t.Errorf("%s: recorded Status %d Error %q URL %q Service %q", u, ex.Status, ex.Error, ex.URL, ex.Service)
		}
	}
}

// TestOutboundLeafPerHost: the app sees the same leaf for a host on every
// connection, another for another host, each valid for its name.
func TestOutboundLeafPerHost(t *testing.T) {
	e := newOBEnv(t)
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	e.https("api.test:443", ok)
	e.https("other.test:443", ok)
	e.start()
	leafOf := func(host string) []byte {
		c := e.client()
		c.Transport.(*http.Transport).DisableKeepAlives = true
		res, _ := e.get(c, "https://"+host+"/")
		if res.TLS == nil || len(res.TLS.PeerCertificates) == 0 {
			t.Fatalf("%s: no TLS state", host)
		}
		if err := res.TLS.PeerCertificates[0].VerifyHostname(host); err != nil {
			t.Errorf("%s: %v", host, err)
		}
		return res.TLS.PeerCertificates[0].Raw
	}
	a1, a2, b := leafOf("api.test"), leafOf("api.test"), leafOf("other.test")
	if !bytes.Equal(a1, a2) {
		t.Error("two connections to api.test got different leaves: not cached")
	}
	if bytes.Equal(a1, b) {
		t.Error("api.test and other.test got the same leaf")
	}
}

func TestOutboundNonProxyRequest(t *testing.T) {
	e := newOBEnv(t)
	e.start()
	res, body := e.get(http.DefaultClient, e.proxyURL.String()+"/orders")
	if res.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "HTTP_PROXY") {
		t.Errorf("status %d body %q", res.StatusCode, body)
	}
	if n := len(e.sink.all()); n != 0 {
		t.Errorf("%d exchanges recorded for a non-proxy request", n)
	}
}

// TestOutboundShutdown waits for a call in progress to be recorded.
func TestOutboundShutdown(t *testing.T) {
	e := newOBEnv(t)
	release := make(chan struct{})
	e.https("api.test:443", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "part 1;")
		w.(http.Flusher).Flush()
		<-release
		io.WriteString(w, "part 2")
	}))
	e.start()
	res, err := e.client().Get("https://api.test/slow")
	if err != nil {
		close(release)
		t.Fatal(err)
	}
	if e.out.InProgress() != 1 {
		t.Errorf("InProgress %d, want 1", e.out.InProgress())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	err = e.out.Shutdown(ctx)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Shutdown with a call blocked upstream: %v, want deadline exceeded", err)
	}
	close(release)
	io.ReadAll(res.Body)
	res.Body.Close()
	// Shutdown closed the app's connection; the cut call is recorded anyway.
	ex := e.sink.wait(t, 1)[0]
	if ex.URL != "https://api.test/slow" {
		t.Errorf("recorded %q", ex.URL)
	}
	if err := e.out.Shutdown(context.Background()); err != nil {
		t.Errorf("second Shutdown: %v", err)
	}
}

// TestOutboundShutdownWaits: a Shutdown started while a call is in progress
// returns once that call is recorded.
func TestOutboundShutdownWaits(t *testing.T) {
	e := newOBEnv(t)
	release := make(chan struct{})
	e.https("api.test:443", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "part 1;")
		w.(http.Flusher).Flush()
		<-release
		io.WriteString(w, "part 2")
	}))
	e.start()
	res, err := e.client().Get("https://api.test/slow")
	if err != nil {
		close(release)
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- e.out.Shutdown(context.Background()) }()
	close(release)
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if err := <-done; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if n := len(e.sink.all()); n != 1 {
		t.Fatalf("Shutdown returned with %d exchanges recorded, want 1", n)
	}
	if ex := e.sink.all()[0]; string(ex.ResponseBody) != "part 1;part 2" || string(body) != "part 1;part 2" || ex.Error != "" {
		t.Errorf("app got %q; recorded %q, error %q", body, ex.ResponseBody, ex.Error)
	}
}

// TestOutboundConcurrent: 50 clients, each request recorded with its own
// response.
func TestOutboundConcurrent(t *testing.T) {
	const clients, each = 50, 6
	e := newOBEnv(t)
	e.https("api.test:443", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s|%s", r.URL.Query().Get("n"), body)
	}))
	e.start()
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			cl := e.client()
			for i := range each {
				n := fmt.Sprintf("%d-%d", c, i)
				res, err := cl.Post("https://api.test/echo?n="+n, "text/plain", strings.NewReader("body-"+n))
				if err != nil {
					t.Error(err)
					return
				}
				b, _ := io.ReadAll(res.Body)
				res.Body.Close()
				if want := n + "|body-" + n; string(b) != want {
					t.Errorf("got %q, want %q", b, want)
				}
			}
		})
	}
	wg.Wait()
	exs := e.sink.wait(t, clients*each)
	ids := map[int64]bool{}
	for _, ex := range exs {
		u, _ := url.Parse(ex.URL)
		n := u.Query().Get("n")
		if want := n + "|body-" + n; string(ex.ResponseBody) != want || string(ex.RequestBody) != "body-"+n {
			t.Errorf("exchange %s recorded request %q response %q", ex.URL, ex.RequestBody, ex.ResponseBody)
		}
		ids[ex.ID] = true
	}
	if len(ids) != clients*each {
		t.Errorf("%d distinct ids for %d exchanges", len(ids), clients*each)
	}
}

func TestNewOutboundErrors(t *testing.T) {
	c, err := ca.LoadOrCreate(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	sink := newOBSink()
	tests := []struct {
		name string
		cfg  OutboundConfig
		want string
	}{
		{"no sink", OutboundConfig{CA: c}, "no sink"},
		{"no CA", OutboundConfig{Sink: sink}, "no CA"},
		{"resolve without port", OutboundConfig{Sink: sink, CA: c, Resolve: map[string]string{"api.test": "127.0.0.1:1"}}, `resolve "api.test"`},
		{"resolve to bad address", OutboundConfig{Sink: sink, CA: c, Resolve: map[string]string{"api.test:443": "127.0.0.1"}}, `to "127.0.0.1"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewOutbound(tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one mentioning %q", err, tt.want)
			}
		})
	}
}

// TestOutboundBodiless: HEAD, 204 and 304 responses are recorded without
// waiting for a body that never comes.
func TestOutboundBodiless(t *testing.T) {
	e := newOBEnv(t)
	e.https("api.test:443", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/empty":
			w.WriteHeader(http.StatusNoContent)
		case "/cached":
			w.Header().Set("ETag", `"v1"`)
			w.WriteHeader(http.StatusNotModified)
		default:
			w.Header().Set("Content-Length", "1234")
		}
	}))
	e.start()
	c := e.client()
	tests := []struct {
		method, path string
		status       int
	}{
		{http.MethodHead, "/thing", http.StatusOK},
		{http.MethodGet, "/empty", http.StatusNoContent},
		{http.MethodGet, "/cached", http.StatusNotModified},
	}
	for i, tt := range tests {
		req, _ := http.NewRequest(tt.method, "https://api.test"+tt.path, nil)
		res, err := c.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", tt.method, tt.path, err)
		}
		io.ReadAll(res.Body)
		res.Body.Close()
		ex := e.sink.wait(t, 1)[i]
		if res.StatusCode != tt.status || ex.Status != tt.status || ex.Method != tt.method || ex.Error != "" || len(ex.ResponseBody) != 0 {
			t.Errorf("%s %s: app got %d; recorded %s %d body %q error %q", tt.method, tt.path, res.StatusCode, ex.Method, ex.Status, ex.ResponseBody, ex.Error)
		}
	}
}

// TestOutboundAppStopsReading: an app that hangs up mid-body leaves an
// exchange that says so.
func TestOutboundAppStopsReading(t *testing.T) {
	for _, u := range []string{"https://api.test/big", "http://plain.test/big"} {
		t.Run(u, func(t *testing.T) {
			e := newOBEnv(t)
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Length", fmt.Sprint(64<<20))
				io.Copy(w, &patternReader{n: 64 << 20})
			})
			e.https("api.test:443", h)
			e.http("plain.test:80", h)
			e.start()
			res, err := e.client().Get(u)
			if err != nil {
				t.Fatal(err)
			}
			io.ReadFull(res.Body, make([]byte, 1024))
			res.Body.Close()
			ex := e.sink.wait(t, 1)[0]
			if !strings.Contains(ex.Error, "stopped reading") || ex.ResponseBodySize >= 64<<20 || ex.Status != 200 {
				t.Errorf("recorded status %d, %d bytes, error %q", ex.Status, ex.ResponseBodySize, ex.Error)
			}
		})
	}
}

// TestOutboundHTTP2: with HTTP2 set, an app that offers h2 speaks it inside
// the intercepted tunnel, and the recording is the same as over HTTP/1.1;
// without it, the same app falls back to HTTP/1.1.
func TestOutboundHTTP2(t *testing.T) {
	gz := gzipBytes(t, strings.Repeat("catalog ", 1000))
	for _, h2 := range []bool{true, false} {
		t.Run(fmt.Sprintf("HTTP2=%v", h2), func(t *testing.T) {
			e := newOBEnv(t)
			e.https("api.test:443", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				if string(body) != `{"q":1}` {
					http.Error(w, "bad body "+string(body), http.StatusBadRequest)
					return
				}
				w.Header().Set("Content-Encoding", "gzip")
				w.Header().Set("Content-Length", fmt.Sprint(len(gz)))
				w.Write(gz)
			}))
			e.cfg.HTTP2 = h2
			e.start()
			c := e.client()
			c.Transport.(*http.Transport).ForceAttemptHTTP2 = true
			req, _ := http.NewRequest(http.MethodPost, "https://api.test/search?q=1", strings.NewReader(`{"q":1}`))
			req.Header.Set("Accept-Encoding", "gzip")
			res, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			want := "HTTP/1.1"
			if h2 {
				want = "HTTP/2.0"
			}
			if res.Proto != want || res.StatusCode != 200 || !bytes.Equal(body, gz) {
				t.Errorf("app got %s %d, %d bytes (gzip intact %v); want %s", res.Proto, res.StatusCode, len(body), bytes.Equal(body, gz), want)
			}
			ex := e.sink.wait(t, 1)[0]
			if ex.Proto != want || ex.URL != "https://api.test/search?q=1" || ex.Service != "api.test:443" ||
				string(ex.RequestBody) != `{"q":1}` || !bytes.Equal(ex.ResponseBody, gz) || ex.Error != "" {
				t.Errorf("recorded %s %s %s %q → %d bytes, error %q", ex.Proto, ex.URL, ex.Service, ex.RequestBody, len(ex.ResponseBody), ex.Error)
			}
		})
	}
}
