package mock

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/replaykit/replay/snapshots"
)

// answersFixture records the same responses for a plain HTTP and an HTTPS
// service.
func answersFixture(t *testing.T) (exs []*snapshots.Exchange, large []byte) {
	large = bytes.Repeat([]byte("0123456789abcdef"), 3<<16) // 3 MiB
	id := int64(0)
	for _, origin := range []string{"http://plain.test:8080", "https://api.test"} {
		add := func(method, path string, status int, h http.Header, body []byte) {
			id++
			e := rec(id, method, origin+path, "", "")
			e.Status, e.ResponseHeader, e.ResponseBody, e.ResponseBodySize = status, h, body, int64(len(body))
			exs = append(exs, e)
		}
		add("GET", "/json", 201, http.Header{
			"Content-Type": {"application/json"}, "X-Upstream": {"one"}, "Set-Cookie": {"a=1", "b=2"},
			"Connection": {"keep-alive, X-Hop"}, "X-Hop": {"dropped"}, "Keep-Alive": {"timeout=5"},
			"Date": {"Sat, 01 Mar 2025 12:00:00 GMT"},
		}, []byte(`{"ok":true}`))
		gz := gzipped(t, strings.Repeat("compressible ", 1000))
		add("GET", "/gzip", 200, http.Header{
			"Content-Type": {"text/plain"}, "Content-Encoding": {"gzip"}, "Content-Length": {fmt.Sprint(len(gz))}, "Vary": {"Accept-Encoding"},
		}, gz)
		add("GET", "/chunked", 200, http.Header{"Content-Type": {"application/octet-stream"}, "Transfer-Encoding": {"chunked"}}, large[:100000])
		add("GET", "/large", 200, http.Header{"Content-Type": {"application/octet-stream"}}, large)
		add("HEAD", "/head", 200, http.Header{"Content-Type": {"text/plain"}, "Content-Length": {"1234"}}, nil)
		add("DELETE", "/empty", 204, http.Header{"X-Deleted": {"yes"}}, nil)
		add("GET", "/nocontenttype", 200, http.Header{}, []byte("<html>sniff me</html>"))
	}
	return exs, large
}

func TestProxyAnswers(t *testing.T) {
	c := testCA(t)
	exs, large := answersFixture(t)
	s := newServer(t, Config{Exchanges: exs, CA: c})
	client := proxyClient(t, startMock(t, s), c.Pool())
	gz := exs[1].ResponseBody

	for _, origin := range []string{"http://plain.test:8080", "https://api.test"} {
		t.Run(origin, func(t *testing.T) {
			resp, body := do(t, client, "GET", origin+"/json", nil)
			if resp.StatusCode != 201 || string(body) != `{"ok":true}` {
				t.Errorf("/json: %d %q", resp.StatusCode, body)
			}
			want := http.Header{
				"Content-Type": {"application/json"}, "X-Upstream": {"one"}, "Set-Cookie": {"a=1", "b=2"},
				"Date": {"Sat, 01 Mar 2025 12:00:00 GMT"}, "Content-Length": {"11"},
			}
			if d := cmp.Diff(want, resp.Header); d != "" {
				t.Errorf("/json headers (-want +got):\n%s", d)
			}

			resp, body = do(t, client, "GET", origin+"/gzip", nil, "Accept-Encoding", "gzip")
			if !bytes.Equal(body, gz) || resp.Header.Get("Content-Encoding") != "gzip" || resp.ContentLength != int64(len(gz)) {
				t.Errorf("/gzip: %d bytes (want %d, identical), Content-Encoding %q", len(body), len(gz), resp.Header.Get("Content-Encoding"))
			}

			// A client that accepts no coding gets the body decoded.
			plain := strings.Repeat("compressible ", 1000)
			for _, accept := range []string{"", "identity", "gzip;q=0, br"} {
				header := []string{"Accept-Encoding", accept}
				if accept == "" {
					header = nil // none sent: the client has DisableCompression
				}
				resp, body = do(t, client, "GET", origin+"/gzip", nil, header...)
				if string(body) != plain || resp.Header.Get("Content-Encoding") != "" || resp.ContentLength != int64(len(plain)) {
					t.Errorf("/gzip, Accept-Encoding %q: %d bytes (want %d decoded), Content-Encoding %q, Content-Length %d",
						accept, len(body), len(plain), resp.Header.Get("Content-Encoding"), resp.ContentLength)
				}
			}
			resp, body = do(t, client, "GET", origin+"/gzip", nil, "Accept-Encoding", "deflate, x-gzip;q=0.5")
			if !bytes.Equal(body, gz) || resp.Header.Get("Content-Encoding") != "gzip" {
				t.Errorf("/gzip, Accept-Encoding x-gzip: %d bytes (want %d as recorded), Content-Encoding %q", len(body), len(gz), resp.Header.Get("Content-Encoding"))
			}

			resp, body = do(t, client, "GET", origin+"/chunked", nil)
			if !bytes.Equal(body, large[:100000]) {
				t.Errorf("/chunked: %d bytes, not the recorded 100000", len(body))
			}
			if resp.Header.Get("Transfer-Encoding") != "" {
				t.Errorf("/chunked: Transfer-Encoding header %q passed on", resp.Header.Get("Transfer-Encoding"))
			}

			_, body = do(t, client, "GET", origin+"/large", nil)
			if !bytes.Equal(body, large) {
				t.Errorf("/large: %d bytes, not the recorded %d", len(body), len(large))
			}

			resp, body = do(t, client, "HEAD", origin+"/head", nil)
			if resp.StatusCode != 200 || resp.ContentLength != 1234 || len(body) != 0 {
				t.Errorf("HEAD: %d, Content-Length %d, %d body bytes", resp.StatusCode, resp.ContentLength, len(body))
			}

			resp, body = do(t, client, "DELETE", origin+"/empty", nil)
			if resp.StatusCode != 204 || resp.Header.Get("X-Deleted") != "yes" || len(body) != 0 {
				t.Errorf("DELETE: %d %v %q", resp.StatusCode, resp.Header, body)
			}

			resp, _ = do(t, client, "GET", origin+"/nocontenttype", nil)
			if ct, ok := resp.Header["Content-Type"]; ok {
				t.Errorf("Content-Type %q added to a response recorded without one", ct)
			}
		})
	}
	if st := s.Stats(); st.Exact != 22 || st.Misses != 0 {
		t.Errorf("stats %+v, want 22 exact hits", st)
	}
}

type missBody struct {
	Error       string   `json:"error"`
	Request     string   `json:"request"`
	Closest     string   `json:"closest"`
	Differences []string `json:"differences"`
}

func TestProxyMiss(t *testing.T) {
	c := testCA(t)
	s := newServer(t, Config{CA: c, Exchanges: []*snapshots.Exchange{
		rec(1, "GET", "https://api.test/a?x=1", "", "a"),
		rec(2, "GET", "http://plain.test/b?x=1", "", "b"),
	}})
	client := proxyClient(t, startMock(t, s), c.Pool())
	for i, tt := range []struct{ url, request, closest string }{
		{"https://api.test/a?x=2", "GET https://api.test/a?x=2", "GET https://api.test/a?x=1"},
		{"http://plain.test/b?x=2", "GET http://plain.test/b?x=2", "GET http://plain.test/b?x=1"},
		{"https://api.test/a?x=2", "GET https://api.test/a?x=2", "GET https://api.test/a?x=1"},
	} {
		resp, body := do(t, client, "GET", tt.url, nil)
		if resp.StatusCode != http.StatusBadGateway || resp.Header.Get(MarkerHeader) != "miss" {
			t.Fatalf("%s: %d, %s=%q; want 502 and the miss marker", tt.url, resp.StatusCode, MarkerHeader, resp.Header.Get(MarkerHeader))
		}
		var got missBody
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatalf("%s: body %q: %v", tt.url, body, err)
		}
		want := missBody{"mock miss", tt.request, tt.closest, []string{"query x: got 2, recorded 1"}}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("%s: miss body (-want +got):\n%s", tt.url, d)
		}
		if s.Misses() != int64(i+1) {
			t.Errorf("Misses() = %d, want %d", s.Misses(), i+1)
		}
	}
	log := s.MissLog()
	if len(log) != 2 || log[0].Request != "GET https://api.test/a?x=2" || log[0].Count != 2 || log[1].Count != 1 {
		t.Errorf("MissLog = %+v", log)
	}
	// A hit still works after misses.
	if resp, body := do(t, client, "GET", "https://api.test/a?x=1", nil); resp.StatusCode != 200 || string(body) != "a" {
		t.Errorf("hit after misses: %d %q", resp.StatusCode, body)
	}
}

// upstream is a real HTTPS server standing in for api.test.
func upstream(t *testing.T) *httptest.Server {
	up := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Real", "yes")
		fmt.Fprintf(w, "real %s %s host=%s", r.Method, r.URL.RequestURI(), r.Host)
	}))
	t.Cleanup(up.Close)
	return up
}

func TestPassthrough(t *testing.T) {
	c := testCA(t)
	up := upstream(t)
	upTLS := up.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
	upTLS.ServerName = "example.com" // httptest's certificate names example.com and 127.0.0.1
	upAddr := strings.TrimPrefix(up.URL, "https://")
	svc := "api.test:" + port(t, up.URL)
	s := newServer(t, Config{
		CA:          c,
		OnMiss:      OnMissPassthrough,
		UpstreamTLS: upTLS,
		Resolve:     resolveTo(upAddr, svc, "other.test:"+port(t, up.URL)),
		Exchanges:   []*snapshots.Exchange{rec(1, "GET", "https://"+svc+"/a?x=1", "", "mocked")},
	})
	proxy := startMock(t, s)
	client := proxyClient(t, proxy, c.Pool())

	if _, body := do(t, client, "GET", "https://"+svc+"/a?x=1", nil); string(body) != "mocked" {
		t.Errorf("hit: %q", body)
	}
	resp, body := do(t, client, "GET", "https://"+svc+"/a?x=2", nil)
	if want := "real GET /a?x=2 host=" + svc; string(body) != want || resp.Header.Get("X-Real") != "yes" {
		t.Errorf("miss passed through: %d %q, want %q", resp.StatusCode, body, want)
	}
	if s.Misses() != 1 || s.Stats().Passthrough != 1 {
		t.Errorf("stats %+v, want 1 miss passed through", s.Stats())
	}

	// A service that is not mocked: CONNECT is tunnelled to the real
	// upstream without interception (the client must trust the real cert).
	tunnelTLS := upTLS.Clone()
	tunnel := proxyClient(t, proxy, tunnelTLS.RootCAs)
	tunnel.Transport.(*http.Transport).TLSClientConfig = tunnelTLS
	if _, body := do(t, tunnel, "GET", "https://other.test:"+port(t, up.URL)+"/z", nil); !strings.HasPrefix(string(body), "real GET /z") {
		t.Errorf("tunnel: %q", body)
	}
	if s.Stats().Tunnels != 1 {
		t.Errorf("stats %+v, want 1 tunnel", s.Stats())
	}

	// Plain HTTP to a service that is not mocked is forwarded.
	plainUp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "plain %s", r.URL.Path)
	}))
	defer plainUp.Close()
	s2 := newServer(t, Config{Resolve: resolveTo(strings.TrimPrefix(plainUp.URL, "http://"), "elsewhere.test:80"),
		Exchanges: []*snapshots.Exchange{rec(1, "GET", "http://mocked.test/a", "", "m")}})
	c2 := proxyClient(t, startMock(t, s2), nil)
	if _, body := do(t, c2, "GET", "http://elsewhere.test/p", nil); string(body) != "plain /p" {
		t.Errorf("plain passthrough: %q", body)
	}
	if resp, _ := do(t, c2, "GET", "http://mocked.test/b", nil); resp.StatusCode != 502 {
		t.Errorf("miss on a mocked plain service: %d, want 502", resp.StatusCode)
	}
}

// TestHTTP2MissAndPassthrough: over HTTP/2 (a recording made in h2) a miss
// is the same 502 with the marker and the closest request, and with
// passthrough the real upstream answers.
func TestHTTP2MissAndPassthrough(t *testing.T) {
	c := testCA(t)
	up := upstream(t)
	upTLS := up.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
	upTLS.ServerName = "example.com"
	svc := "api.test:" + port(t, up.URL)
	hit := rec(1, "GET", "https://"+svc+"/a?x=1", "", "mocked")
	hit.Proto = "HTTP/2.0"
	for _, onMiss := range []string{OnMissError, OnMissPassthrough} {
		t.Run(onMiss, func(t *testing.T) {
			s := newServer(t, Config{CA: c, OnMiss: onMiss, UpstreamTLS: upTLS,
				Resolve: resolveTo(strings.TrimPrefix(up.URL, "https://"), svc), Exchanges: []*snapshots.Exchange{hit}})
			client := proxyClient(t, startMock(t, s), c.Pool())
			client.Transport.(*http.Transport).ForceAttemptHTTP2 = true
			resp, body := do(t, client, "GET", "https://"+svc+"/a?x=1", nil)
			if resp.ProtoMajor != 2 || string(body) != "mocked" {
				t.Errorf("hit: %s %q, want HTTP/2 and the recorded body", resp.Proto, body)
			}
			resp, body = do(t, client, "GET", "https://"+svc+"/a?x=2", nil)
			if resp.ProtoMajor != 2 {
				t.Errorf("miss answered in %s", resp.Proto)
			}
			switch onMiss {
			case OnMissError:
				var got missBody
				if resp.StatusCode != http.StatusBadGateway || resp.Header.Get(MarkerHeader) != "miss" ||
					json.Unmarshal(body, &got) != nil || got.Closest != "GET https://"+svc+"/a?x=1" {
					t.Errorf("miss: %d, %s=%q, body %q", resp.StatusCode, MarkerHeader, resp.Header.Get(MarkerHeader), body)
				}
			case OnMissPassthrough:
				if want := "real GET /a?x=2 host=" + svc; string(body) != want || resp.Header.Get("X-Real") != "yes" {
					t.Errorf("passed through: %d %q, want %q", resp.StatusCode, body, want)
				}
			}
			if s.Misses() != 1 {
				t.Errorf("%d misses, want 1", s.Misses())
			}
		})
	}
}

func TestOnlyChosenServicesMocked(t *testing.T) {
	plainUp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "real %s", r.Host)
	}))
	defer plainUp.Close()
	s := newServer(t, Config{
		Services: []string{"one.test:80"},
		Resolve:  resolveTo(strings.TrimPrefix(plainUp.URL, "http://"), "two.test:80"),
		Exchanges: []*snapshots.Exchange{
			rec(1, "GET", "http://one.test/a", "", "mock one"),
			rec(2, "GET", "http://two.test/a", "", "mock two"),
		},
	})
	client := proxyClient(t, startMock(t, s), nil)
	if _, body := do(t, client, "GET", "http://one.test/a", nil); string(body) != "mock one" {
		t.Errorf("one.test: %q", body)
	}
	if _, body := do(t, client, "GET", "http://two.test/a", nil); string(body) != "real two.test" {
		t.Errorf("two.test (not mocked): %q", body)
	}
	if d := cmp.Diff([]string{"one.test:80"}, s.Services()); d != "" {
		t.Error(d)
	}
}

func TestNotAProxyRequest(t *testing.T) {
	s := newServer(t, Config{Exchanges: []*snapshots.Exchange{rec(1, "GET", "http://a.test/", "", "")}})
	resp, body := do(t, http.DefaultClient, "GET", startMock(t, s)+"/x", nil)
	if resp.StatusCode != 400 || !strings.Contains(string(body), "forward proxy") {
		t.Errorf("%d %q", resp.StatusCode, body)
	}
}

func TestTiming(t *testing.T) {
	c := testCA(t)
	slow := rec(1, "GET", "https://api.test/slow", "", "slow")
	slow.Duration = 300 * time.Millisecond
	hang := rec(2, "GET", "http://plain.test/hang", "", "hang")
	hang.Duration = time.Hour
	exs := []*snapshots.Exchange{slow, hang}

	s := newServer(t, Config{CA: c, Exchanges: exs, Timing: TimingRecorded})
	client := proxyClient(t, startMock(t, s), c.Pool())
	start := time.Now()
	if _, body := do(t, client, "GET", "https://api.test/slow", nil); string(body) != "slow" {
		t.Errorf("body %q", body)
	}
	if el := time.Since(start); el < slow.Duration {
		t.Errorf("answered in %v, before the recorded %v", el, slow.Duration)
	}

	// The request's context cuts a recorded wait short.
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://plain.test/hang", nil)
	if resp, err := client.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("an hour-long recorded call answered: %s", resp.Status)
	}

	// Timing none answers without waiting for the recorded hour.
	s = newServer(t, Config{CA: c, Exchanges: exs})
	client = proxyClient(t, startMock(t, s), c.Pool())
	client.Timeout = 30 * time.Second
	if _, body := do(t, client, "GET", "http://plain.test/hang", nil); string(body) != "hang" {
		t.Errorf("body %q", body)
	}
}

// 50 clients at once, each asking for its own resources over its own
// connections: each gets the response recorded for its request.
func TestConcurrentClients(t *testing.T) {
	const clients, rounds = 50, 4
	c := testCA(t)
	var exs []*snapshots.Exchange
	for i := range clients {
		for r := range rounds {
			id := int64(i*rounds + r + 1)
			exs = append(exs,
				rec(id*2, "GET", fmt.Sprintf("https://api.test/items/%d?round=%d", i, r), "", fmt.Sprintf("item %d round %d", i, r)),
				rec(id*2+1, "POST", "http://plain.test/echo", fmt.Sprintf(`{"client":%d,"round":%d}`, i, r), fmt.Sprintf("echo %d %d", i, r)))
		}
	}
	s := newServer(t, Config{CA: c, Exchanges: exs})
	proxy := startMock(t, s)
	var wg sync.WaitGroup
	errs := make(chan error, clients*rounds*2)
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			client := proxyClient(t, proxy, c.Pool())
			for r := range rounds {
				checks := []struct{ method, url, body, want string }{
					{"GET", fmt.Sprintf("https://api.test/items/%d?round=%d", i, r), "", fmt.Sprintf("item %d round %d", i, r)},
					{"POST", "http://plain.test/echo", fmt.Sprintf(`{"round":%d, "client":%d}`, r, i), fmt.Sprintf("echo %d %d", i, r)},
				}
				for _, ck := range checks {
					req, _ := http.NewRequest(ck.method, ck.url, strings.NewReader(ck.body))
					req.Header.Set("Content-Type", "application/json")
					resp, err := client.Do(req)
					if err != nil {
						errs <- err
						continue
					}
					b, err := io.ReadAll(resp.Body)
					resp.Body.Close()
					if err != nil || string(b) != ck.want {
						errs <- fmt.Errorf("client %d: %s %s got %d %q (%v), want %q", i, ck.method, ck.url, resp.StatusCode, b, err, ck.want)
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if st := s.Stats(); st.Exact != clients*rounds*2 || st.Misses != 0 {
		t.Errorf("stats %+v, want %d exact hits", st, clients*rounds*2)
	}
}

func TestServiceHandler(t *testing.T) {
	s := newServer(t, Config{
		Services: []string{"one.test:80"}, // a served service needn't be in Services
		Exchanges: []*snapshots.Exchange{
			rec(1, "GET", "http://one.test/a", "", "one"),
			rec(2, "GET", "https://api.test/v1/users/1?fields=name", "", `{"name":"ann"}`),
			rec(3, "GET", "https://api.test/v1/users/1?fields=name", "", `{"name":"ann v2"}`),
		},
	})
	h, err := s.ServiceHandler("api.test:443")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	// A base-URL client: no proxy.
	client := &http.Client{Timeout: 30 * time.Second}
	for _, want := range []string{`{"name":"ann"}`, `{"name":"ann v2"}`, `{"name":"ann v2"}`} {
		if _, body := do(t, client, "GET", srv.URL+"/v1/users/1?fields=name", nil); string(body) != want {
			t.Errorf("got %q, want %q", body, want)
		}
	}
	resp, body := do(t, client, "GET", srv.URL+"/v1/users/1?fields=email", nil)
	var miss missBody
	if resp.StatusCode != 502 || json.Unmarshal(body, &miss) != nil || miss.Request != "GET https://api.test/v1/users/1?fields=email" {
		t.Errorf("miss: %d %q", resp.StatusCode, body)
	}
	if _, err := s.ServiceHandler("nope.test:443"); !errors.Is(err, ErrUnknownService) || !strings.Contains(err.Error(), "nope.test:443 (recorded services: api.test:443, one.test:80)") {
		t.Errorf("unrecorded service: %v", err)
	}
}

func TestServiceHandlerPassthrough(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "real %s host=%s", r.URL.RequestURI(), r.Host)
	}))
	defer up.Close()
	s := newServer(t, Config{
		OnMiss:    OnMissPassthrough,
		Resolve:   resolveTo(strings.TrimPrefix(up.URL, "http://"), "svc.test:8080"),
		Exchanges: []*snapshots.Exchange{rec(1, "GET", "http://svc.test:8080/a", "", "mocked")},
	})
	h, err := s.ServiceHandler("svc.test:8080")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	client := &http.Client{Timeout: 30 * time.Second}
	if _, body := do(t, client, "GET", srv.URL+"/a", nil); string(body) != "mocked" {
		t.Errorf("hit: %q", body)
	}
	if _, body := do(t, client, "GET", srv.URL+"/b?q=1", nil); string(body) != "real /b?q=1 host=svc.test:8080" {
		t.Errorf("passthrough: %q", body)
	}
}

func TestRecordedError(t *testing.T) {
	e := rec(1, "GET", "http://plain.test/down", "", "")
	e.Status, e.Error = 0, "dial tcp: connection refused"
	s := newServer(t, Config{Exchanges: []*snapshots.Exchange{e}})
	resp, body := do(t, proxyClient(t, startMock(t, s), nil), "GET", "http://plain.test/down", nil)
	if resp.StatusCode != 502 || resp.Header.Get(MarkerHeader) != "recorded-error" || !strings.Contains(string(body), "connection refused") {
		t.Errorf("%d %v %q", resp.StatusCode, resp.Header, body)
	}
}

func TestCloseEndsTunnels(t *testing.T) {
	c := testCA(t)
	s := newServer(t, Config{CA: c, Exchanges: []*snapshots.Exchange{rec(1, "GET", "https://api.test/a", "", "a")}})
	client := proxyClient(t, startMock(t, s), c.Pool())
	if _, body := do(t, client, "GET", "https://api.test/a", nil); string(body) != "a" {
		t.Fatalf("body %q", body)
	}
	open := func() int { return s.conns.Len() }
	if n := open(); n != 1 {
		t.Fatalf("%d tunnels open, want 1", n)
	}
	s.Close()
	if n := open(); n != 0 {
		t.Errorf("%d tunnels open after Close", n)
	}
	if resp, err := client.Get("https://api.test/a"); err == nil {
		resp.Body.Close()
		t.Errorf("a request through the closed mock got %s", resp.Status)
	}
}
