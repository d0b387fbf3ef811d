package mock

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/replaykit/replay/internal/ca"
	"github.com/replaykit/replay/recorder"
	"github.com/replaykit/replay/snapshots"
)

// liveAnswer is what the app got.
type liveAnswer struct {
	status int
	header http.Header
	body   []byte
}

type call struct {
	method, url, body string
	header            []string
}

// TestRecordThenMock records an app's calls to real upstreams (HTTPS and
// plain HTTP) through the outbound recorder into a snapshot file, shuts the
// upstreams down, then makes the same calls through the mock: the answers
// are identical (status, headers, body bytes). With HTTP/2 the app speaks h2
// to the recorder and, since the recording says so, to the mock as well.
func TestRecordThenMock(t *testing.T) {
	for _, h2 := range []bool{false, true} {
		t.Run(fmt.Sprintf("HTTP2=%v", h2), func(t *testing.T) { recordThenMock(t, h2) })
	}
}

func recordThenMock(t *testing.T, h2 bool) {
	wantProto := 1
	if h2 {
		wantProto = 2
	}
	dir := t.TempDir()
	proxyCA := testCA(t)
	upstreamCA, err := ca.LoadOrCreate(filepath.Join(dir, "upstream-ca"))
	if err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte("0123456789"), 200_000) // 2 MB
	var seq atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("GET /json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Request-Cost", "3")
		w.Header().Add("Link", "</next>; rel=next")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprint(w, `{"hello":"world"}`)
	})
	mux.HandleFunc("GET /gzip", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("Content-Type", "text/plain")
		w.Write(gzipped(t, strings.Repeat("zip zap ", 4096)))
	})
	mux.HandleFunc("GET /chunked", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range 5 {
			fmt.Fprintf(w, "data: chunk %d %s\n\n", i, strings.Repeat("x", i*1000))
			w.(http.Flusher).Flush()
		}
	})
	mux.HandleFunc("GET /seq", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "call %d", seq.Add(1))
	})
	mux.HandleFunc("POST /echo", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "echo %s", b)
	})
	mux.HandleFunc("GET /big", func(w http.ResponseWriter, r *http.Request) { w.Write(big) })
	mux.HandleFunc("GET /missing", func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) })

	leaf, err := upstreamCA.Leaf("api.test")
	if err != nil {
		t.Fatal(err)
	}
	tlsUp := httptest.NewUnstartedServer(mux)
	tlsUp.TLS = &tls.Config{Certificates: []tls.Certificate{*leaf}}
	tlsUp.EnableHTTP2 = h2
	tlsUp.StartTLS()
	plainUp := httptest.NewServer(mux)
	resolve := map[string]string{"api.test:443": tlsUp.Listener.Addr().String(), "plain.test:80": plainUp.Listener.Addr().String()}

	calls := []call{
		{method: "GET", url: "https://api.test/json"},
		{method: "GET", url: "https://api.test/gzip", header: []string{"Accept-Encoding", "gzip"}},
		{method: "GET", url: "https://api.test/chunked"},
		{method: "GET", url: "https://api.test/seq"},
		{method: "GET", url: "https://api.test/seq"},
		{method: "GET", url: "https://api.test/seq"},
		{method: "POST", url: "https://api.test/echo", body: `{"b":1,"a":[true,null]}`, header: []string{"Content-Type", "application/json"}},
		{method: "GET", url: "https://api.test/big"},
		{method: "GET", url: "https://api.test/missing"},
		{method: "GET", url: "http://plain.test/json"},
		{method: "GET", url: "http://plain.test/seq"},
	}

	// Record.
	snapPath := filepath.Join(dir, "rec.snap")
	w, err := snapshots.Create(snapPath, snapshots.Options{})
	if err != nil {
		t.Fatal(err)
	}
	out, err := recorder.NewOutbound(recorder.OutboundConfig{
		Sink: w, CA: proxyCA, Resolve: resolve, BodyLimit: 8 << 20,
		UpstreamTLS: &tls.Config{RootCAs: upstreamCA.Pool()}, HTTP2: h2,
	})
	if err != nil {
		t.Fatal(err)
	}
	recSrv := httptest.NewServer(out)
	recClient := proxyClient(t, recSrv.URL, proxyCA.Pool())
	recClient.Transport.(*http.Transport).ForceAttemptHTTP2 = h2
	live := make([]liveAnswer, len(calls))
	for i, c := range calls {
		resp, body := do(t, recClient, c.method, c.url, bodyOf(c), c.header...)
		live[i] = liveAnswer{resp.StatusCode, resp.Header, body}
		if strings.HasPrefix(c.url, "https:") && resp.ProtoMajor != wantProto {
			t.Errorf("recording %s %s: the app spoke %s", c.method, c.url, resp.Proto)
		}
	}
	recClient.Transport.(*http.Transport).CloseIdleConnections()
	recSrv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := out.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	// The upstreams go away; nothing may reach them from now on.
	tlsUp.Close()
	plainUp.Close()
	for _, a := range resolve {
		if c, err := net.DialTimeout("tcp", a, time.Second); err == nil {
			c.Close()
			t.Fatalf("upstream %s still listening", a)
		}
	}

	// Mock. The calls come again, the JSON body with its keys in another
	// order and other whitespace.
	snap, err := snapshots.Open(snapPath)
	if err != nil {
		t.Fatal(err)
	}
	exs, err := Load(context.Background(), snap)
	snap.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(exs) != len(calls) {
		t.Fatalf("%d exchanges recorded, want %d", len(exs), len(calls))
	}
	s := newServer(t, Config{Exchanges: exs, CA: proxyCA, Resolve: resolve})
	mockClient := proxyClient(t, startMock(t, s), proxyCA.Pool())
	mockClient.Transport.(*http.Transport).ForceAttemptHTTP2 = true // offers h2 either way
	calls[6].body = "{ \"a\": [ true, null ],\n  \"b\": 1 }"
	for i, c := range calls {
		resp, body := do(t, mockClient, c.method, c.url, bodyOf(c), c.header...)
		if strings.HasPrefix(c.url, "https:") && resp.ProtoMajor != wantProto {
			t.Errorf("mock %s %s: answered in %s, want HTTP/%d as recorded", c.method, c.url, resp.Proto, wantProto)
		}
		want := live[i]
		if resp.StatusCode != want.status || !bytes.Equal(body, want.body) {
			t.Errorf("%s %s: mock %d, %d bytes; live %d, %d bytes (identical bytes wanted)", c.method, c.url, resp.StatusCode, len(body), want.status, len(want.body))
		}
		if d := cmp.Diff(framing(want.header), framing(resp.Header)); d != "" {
			t.Errorf("%s %s: headers (-live +mock):\n%s", c.method, c.url, d)
		}
	}
	if got := string(live[5].body); got != "call 3" {
		t.Errorf("third /seq call recorded %q", got)
	}
	if st := s.Stats(); st.Exact != int64(len(calls)) || st.Misses != 0 || st.Passthrough != 0 {
		t.Errorf("stats %+v, want every call answered exactly", st)
	}
}

func bodyOf(c call) []byte {
	if c.body == "" {
		return nil
	}
	return []byte(c.body)
}

// framing drops what depends on how a body is framed: a chunked live
// response has no Content-Length, the mock's has one.
func framing(h http.Header) http.Header {
	h = h.Clone()
	h.Del("Content-Length")
	h.Del("Transfer-Encoding")
	return h
}
