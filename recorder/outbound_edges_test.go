package recorder

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/replaykit/replay/internal/ca"
)

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
