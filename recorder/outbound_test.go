package recorder

import (
	"bytes"
	"compress/gzip"
	"crypto/tls"
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
