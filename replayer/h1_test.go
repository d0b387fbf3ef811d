package replayer

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/replaykit/replay/snapshots"
)

// rawServer answers each request read on a connection with the next of its
// scripted responses (raw bytes); a script entry "CLOSE" closes the
// connection instead of answering, one ending in "|CLOSE" closes it after.
type rawServer struct {
	l     net.Listener
	mu    sync.Mutex
	next  int
	resps []string
	conns int
	reqs  []string // request lines received
}

func newRawServer(t *testing.T, resps ...string) *rawServer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &rawServer{l: l, resps: resps}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns++
			s.mu.Unlock()
			go s.serve(c)
		}
	}()
	return s
}

func (s *rawServer) serve(c net.Conn) {
	defer c.Close()
	tp := textproto.NewReader(bufio.NewReader(c))
	for {
		line, err := tp.ReadLine()
		if err != nil {
			return
		}
		h, err := tp.ReadMIMEHeader()
		if err != nil {
			return
		}
		if n := h.Get("Content-Length"); n != "" && n != "0" {
			io.CopyN(io.Discard, tp.R, int64(len(n))) // bodies are not used here
		}
		s.mu.Lock()
		s.reqs = append(s.reqs, line)
		resp := "CLOSE"
		if s.next < len(s.resps) {
			resp = s.resps[s.next]
			s.next++
		}
		s.mu.Unlock()
		if resp == "CLOSE" {
			return
		}
		resp, closeAfter := strings.CutSuffix(resp, "|CLOSE")
		if _, err := io.WriteString(c, resp); err != nil || closeAfter {
			return
		}
	}
}

func (s *rawServer) url() string { return "http://" + s.l.Addr().String() }

func TestFastClientResponses(t *testing.T) {
	tests := []struct {
		name   string
		method string
		resp   string
		status int
		bytes  int64
		err    string
	}{
		{"content-length", "GET", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", 200, 5, ""},
		{"chunked", "GET", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n", 200, 11, ""},
		{"1xx first", "POST", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok", 201, 2, ""},
		{"no content", "DELETE", "HTTP/1.1 204 No Content\r\n\r\n", 204, 0, ""},
		{"head", "HEAD", "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n", 200, 0, ""},
		{"not modified", "GET", "HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n", 304, 0, ""},
		{"close delimited", "GET", "HTTP/1.0 200 OK\r\n\r\nuntil the end|CLOSE", 200, 13, ""},
		{"lower-case headers", "GET", "HTTP/1.1 404 Not Found\r\ncontent-length: 3\r\nconnection: close\r\n\r\nnop", 404, 3, ""},
		{"no reason phrase", "GET", "HTTP/1.1 500\r\nContent-Length: 0\r\n\r\n", 500, 0, ""},
		{"long header", "GET", "HTTP/1.1 200 OK\r\nX-Big: " + strings.Repeat("b", 40000) + "\r\nContent-Length: 1\r\n\r\nx", 200, 1, ""},
		{"garbage", "GET", "SSH-2.0-OpenSSH\r\n\r\n", 0, 0, "malformed HTTP response"},
		{"bad length", "GET", "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", 0, 0, "Content-Length"},
		{"cut short", "GET", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc|CLOSE", 0, 0, "closed by the target before a complete response"},
		{"closed at once", "GET", "CLOSE", 0, 0, "closed by the target before a complete response (no response)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newRawServer(t, tt.resp)
			ex := exchanges(1)
			ex[0].Method = tt.method
			r := newReplayer(t, Config{Target: srv.url(), Exchanges: ex, Timeout: 5 * time.Second})
			var s sink
			if _, err := r.Run(context.Background(), LoadPlan{}, &s); err != nil {
				t.Fatal(err)
			}
			res := s.all()[0]
			if res.Status != tt.status || res.Bytes != tt.bytes || !strings.Contains(res.Error, tt.err) || (tt.err == "") != (res.Error == "") {
				t.Errorf("status %d bytes %d error %q; want %d %d %q", res.Status, res.Bytes, res.Error, tt.status, tt.bytes, tt.err)
			}
		})
	}
}

func TestFastClientKeepsAliveAndReconnects(t *testing.T) {
	ok := "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
	closing := "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"
	// Two on one connection, then one that closes it, then a connection the
	// server drops without answering (an idle close): the GET is sent again
	// on a fresh connection.
	srv := newRawServer(t, ok, ok, closing, ok, "CLOSE", ok)
	r := newReplayer(t, Config{Target: srv.url(), Exchanges: exchanges(1)})
	var s sink
	if _, err := r.Run(context.Background(), LoadPlan{Iterations: 5}, &s); err != nil {
		t.Fatal(err)
	}
	for i, x := range s.all() {
		if x.Status != 200 || x.Error != "" {
			t.Errorf("result %d: %d %q", i, x.Status, x.Error)
		}
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.conns != 3 || len(srv.reqs) != 6 {
		t.Errorf("%d connections, %d requests; want 3 connections (keep-alive, reopen after close, retry) and 6 requests", srv.conns, len(srv.reqs))
	}
}

func TestFastClientDoesNotResendAPost(t *testing.T) {
	ok := "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
	srv := newRawServer(t, ok, "CLOSE", ok)
	ex := exchanges(1)
	ex[0].Method = "POST"
	ex[0].RequestBody = []byte("{}")
	r := newReplayer(t, Config{Target: srv.url(), Exchanges: ex})
	var s sink
	if _, err := r.Run(context.Background(), LoadPlan{Iterations: 2}, &s); err != nil {
		t.Fatal(err)
	}
	res := s.all()
	if res[0].Error != "" || !strings.Contains(res[1].Error, "closed by the target") {
		t.Errorf("results %q, %q; want the second POST failed, not resent", res[0].Error, res[1].Error)
	}
}

// TestNetHTTPPathSendsTheSame runs the as-recorded checks through net/http
// (the https path) against the same target.
func TestNetHTTPPathSendsTheSame(t *testing.T) {
	tg := newTarget(t, nil)
	rec := &snapshots.Exchange{ID: 1, Direction: snapshots.Inbound, Method: "PUT", URL: "http://app/x/1?a=b",
		RequestHeader: http.Header{"X-A": {"1"}, "Cookie": {Redacted}}, RequestBody: []byte("body"), Status: 200}
	for _, netHTTP := range []bool{false, true} {
		r := newReplayer(t, Config{Target: tg.URL, Exchanges: []*snapshots.Exchange{rec}, NetHTTP: netHTTP, Header: http.Header{"X-B": {"2"}}})
		var s sink
		if _, err := r.Run(context.Background(), LoadPlan{}, &s); err != nil {
			t.Fatal(err)
		}
		if x := s.all()[0]; x.Status != 200 || x.Bytes != int64(len("ok /x/1")) {
			t.Errorf("netHTTP=%v: result %+v", netHTTP, x)
		}
	}
	reqs := tg.seen()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	for i, q := range reqs {
		if q.Method != "PUT" || q.URI != "/x/1?a=b" || q.Body != "body" || q.Header.Get("X-A") != "1" || q.Header.Get("X-B") != "2" ||
			q.Header.Get("Cookie") != "" || q.Header.Get("Content-Length") != "4" || !traceparentRE.MatchString(q.Header.Get("Traceparent")) {
			t.Errorf("request %d (netHTTP=%v): %+v", i, i == 1, q)
		}
	}
}

func TestWaitReady(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	err = WaitReady(context.Background(), "http://"+addr, 200*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "is not listening after 200ms") {
		t.Errorf("err = %v", err)
	}
	go func() {
		time.Sleep(100 * time.Millisecond)
		l, err := net.Listen("tcp", addr)
		if err == nil {
			t.Cleanup(func() { l.Close() })
		}
	}()
	if err := WaitReady(context.Background(), "http://"+addr, 10*time.Second); err != nil {
		t.Errorf("a target that starts listening: %v", err)
	}
}

// FuzzReadResponse feeds arbitrary bytes to the response parser: it must
// return an error or a response, never panic or loop.
func FuzzReadResponse(f *testing.F) {
	for _, s := range []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n",
		"HTTP/1.0 200 OK\r\n\r\nbody",
		"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
	} {
		f.Add([]byte(s), false)
	}
	f.Fuzz(func(t *testing.T, data []byte, head bool) {
		h := &h1Conn{br: bufio.NewReaderSize(strings.NewReader(string(data)), 16)}
		status, n, _, got, err := h.readResponse(head, nil)
		if err == nil && (status < 200 || status > 999 || n < 0) {
			t.Errorf("status %d bytes %d accepted", status, n)
		}
		if got > len(data) {
			t.Errorf("read %d of %d bytes", got, len(data))
		}
	})
}

func TestConnectionsCarryOverBetweenSlices(t *testing.T) {
	ok := "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
	srv := newRawServer(t, ok, ok, ok, ok, ok, ok)
	r := newReplayer(t, Config{Target: srv.url(), Exchanges: exchanges(2)})
	for slice := 1; slice <= 3; slice++ {
		var s sink
		if _, err := r.Run(context.Background(), LoadPlan{Slice: slice}, &s); err != nil {
			t.Fatal(err)
		}
		if res := s.all(); len(res) != 2 || res[1].Error != "" {
			t.Fatalf("slice %d: %+v", slice, res)
		}
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.conns != 1 {
		t.Errorf("%d connections for 3 slices of one virtual user; want 1, kept between slices", srv.conns)
	}
}

// TestIdleConnectionClosedByServerIsNotUsed: a server that closes idle
// keep-alive connections (as Node does after 5s) does not make a POST fail.
func TestIdleConnectionClosedByServerIsNotUsed(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		io.WriteString(w, "ok")
	}))
	srv.Config.IdleTimeout = 200 * time.Millisecond
	srv.Start()
	defer srv.Close()
	ex := exchanges(1)
	ex[0].Method = "POST"
	ex[0].RequestBody = []byte(`{"a":1}`)
	r := newReplayer(t, Config{Target: srv.URL, Exchanges: ex})
	for i := range 2 {
		var s sink
		if _, err := r.Run(context.Background(), LoadPlan{}, &s); err != nil {
			t.Fatal(err)
		}
		if x := s.all()[0]; x.Error != "" || x.Status != 200 {
			t.Fatalf("POST %d after the server closed the idle connection: %q", i, x.Error)
		}
		time.Sleep(1200 * time.Millisecond) // idle past the server's timeout and the staleness check's threshold
	}
	if hits.Load() != 2 {
		t.Errorf("server saw %d POSTs, want 2", hits.Load())
	}
}

func TestHTTPSTargetGoesThroughNetHTTP(t *testing.T) {
	var proto atomic.Value
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proto.Store(r.Proto + " " + r.Header.Get("Traceparent"))
		io.WriteString(w, "secure")
	}))
	defer srv.Close()
	tr := srv.Client().Transport.(*http.Transport)
	r := newReplayer(t, Config{Target: srv.URL, Exchanges: exchanges(1), TLS: tr.TLSClientConfig})
	var s sink
	if _, err := r.Run(context.Background(), LoadPlan{Iterations: 2}, &s); err != nil {
		t.Fatal(err)
	}
	for _, x := range s.all() {
		if x.Status != 200 || x.Bytes != 6 || x.Error != "" {
			t.Errorf("result %+v", x)
		}
	}
	if p, _ := proto.Load().(string); !strings.HasPrefix(p, "HTTP/1.1 00-") {
		t.Errorf("target saw %q", p)
	}
}
