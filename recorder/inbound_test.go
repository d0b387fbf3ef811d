package recorder

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/replaykit/replay/snapshots"
)

// memSink keeps exchanges in memory.
type memSink struct {
	mu        sync.Mutex
	exchanges []*snapshots.Exchange
	seen      map[snapshots.Direction]int
	ids       atomic.Int64
	added     chan struct{}
}

func newMemSink() *memSink {
	return &memSink{seen: map[snapshots.Direction]int{}, added: make(chan struct{}, 1<<16)}
}

func (s *memSink) NewID() int64 { return s.ids.Add(1) }

func (s *memSink) AddExchange(e *snapshots.Exchange) {
	s.mu.Lock()
	s.exchanges = append(s.exchanges, e)
	s.mu.Unlock()
	s.added <- struct{}{}
}

func (s *memSink) CountSeen(d snapshots.Direction) {
	s.mu.Lock()
	s.seen[d]++
	s.mu.Unlock()
}

// wait returns the first n exchanges, waiting for them to be recorded: an
// exchange is recorded when the handler finishes, which may be just after
// the client has read the whole response.
func (s *memSink) wait(t *testing.T, n int) []*snapshots.Exchange {
	t.Helper()
	for range n {
		select {
		case <-s.added:
		case <-time.After(30 * time.Second):
			t.Fatalf("waited 30s for %d exchanges; have %d", n, len(s.all()))
		}
	}
	return s.all()[:n]
}

func (s *memSink) all() []*snapshots.Exchange {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*snapshots.Exchange(nil), s.exchanges...)
}

// startInbound starts backend and a recording proxy in front of it; it
// returns the proxy's URL.
func startInbound(t *testing.T, backend http.Handler, cfg InboundConfig) string {
	t.Helper()
	if cfg.Target == nil {
		b := httptest.NewServer(backend)
		t.Cleanup(b.Close)
		cfg.Target = mustURL(t, b.URL)
	}
	in, err := NewInbound(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := httptest.NewServer(in)
	t.Cleanup(p.Close)
	return p.URL
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// rawClient does not decompress, so bodies arrive as sent.
var rawClient = &http.Client{Transport: &http.Transport{DisableCompression: true, Proxy: nil}}

func TestInboundRecordsExchange(t *testing.T) {
	var backendSaw http.Header
	backend := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		backendSaw = r.Header.Clone()
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Set-Cookie", "session=secret")
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Served-By", "backend")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"got":%q,"path":%q}`, body, r.URL.RequestURI())
	})
	sink := newMemSink()
	proxy := startInbound(t, backend, InboundConfig{Sink: redacting(sink, "x-api-key")})

	req, _ := http.NewRequest("POST", proxy+"/orders/42?expand=items", strings.NewReader(`{"qty":3}`))
	req.Header.Set("Authorization", "Bearer hunter2")
	req.Header.Set("Cookie", "a=b")
	req.Header.Set("X-Api-Key", "k")
	req.Header.Set("X-Request-Id", "r-1")
	req.Header.Set("X-Forwarded-For", "203.0.113.7")
	req.Header.Set("Traceparent", "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01")
	res, err := rawClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(res.Body)
	res.Body.Close()
	want := `{"got":"{\"qty\":3}","path":"/orders/42?expand=items"}`
	if string(got) != want || res.StatusCode != 201 {
		t.Fatalf("client got %d %s; want 201 %s", res.StatusCode, got, want)
	}
	if backendSaw.Get("Authorization") != "Bearer hunter2" || backendSaw.Get("X-Api-Key") != "k" {
		t.Errorf("backend saw %v: redaction must only apply to the recording", backendSaw)
	}
	if got := backendSaw.Values("X-Forwarded-For"); !slices.Equal(got, []string{"203.0.113.7"}) {
		t.Errorf("backend saw X-Forwarded-For %q; want the client's, unchanged", got)
	}
	if got := backendSaw.Get("X-Forwarded-Host"); got != "" {
		t.Errorf("backend saw X-Forwarded-Host %q; want none: the proxy is transparent", got)
	}

	e := sink.wait(t, 1)[0]
	host := strings.TrimPrefix(proxy, "http://")
	checks := []struct {
		name      string
		got, want any
	}{
		{"ID", e.ID, int64(1)},
		{"Direction", e.Direction, snapshots.Inbound},
		{"Protocol", e.Protocol, "http"},
		{"Service", e.Service, host},
		{"Method", e.Method, "POST"},
		{"URL", e.URL, proxy + "/orders/42?expand=items"},
		{"Proto", e.Proto, "HTTP/1.1"},
		{"Authorization", e.RequestHeader.Get("Authorization"), "Bearer " + Redacted},
		{"Cookie", e.RequestHeader.Get("Cookie"), Redacted},
		{"X-Api-Key", e.RequestHeader.Get("X-Api-Key"), Redacted},
		{"X-Request-Id", e.RequestHeader.Get("X-Request-Id"), "r-1"},
		{"RequestBody", string(e.RequestBody), `{"qty":3}`},
		{"RequestBodySize", e.RequestBodySize, int64(9)},
		{"Status", e.Status, 201},
		{"Set-Cookie", e.ResponseHeader.Get("Set-Cookie"), Redacted},
		{"X-Served-By", e.ResponseHeader.Get("X-Served-By"), "backend"},
		{"ResponseBody", string(e.ResponseBody), want},
		{"ResponseBodySize", e.ResponseBodySize, int64(len(want))},
		{"TraceID", e.TraceID, "4bf92f3577b34da6a3ce929d0e0e4736"},
		{"Error", e.Error, ""},
		{"seen", sink.seen[snapshots.Inbound], 1},
	}
	for _, c := range checks {
		if diff := cmp.Diff(c.want, c.got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, diff)
		}
	}
	if e.Duration <= 0 || e.Start.IsZero() || time.Since(e.Start) > time.Minute {
		t.Errorf("Start %v Duration %v: want a recent start and a positive duration", e.Start, e.Duration)
	}
}

func TestInboundBodyLimit(t *testing.T) {
	reqBody := strings.Repeat("q", 100)
	resBody := strings.Repeat("r", 1000)
	backend := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.URL.Query().Has("chunked") {
			w.(http.Flusher).Flush() // no Content-Length: chunked
		}
		io.WriteString(w, resBody)
	})
	tests := []struct {
		name             string
		limit            int64
		query            string
		wantReq, wantRes int
	}{
		{"capped", 10, "", 10, 10},
		{"capped chunked", 10, "?chunked", 10, 10},
		{"default limit keeps all", 0, "", 100, 1000},
		{"negative records no body", -1, "", 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sink := newMemSink()
			proxy := startInbound(t, backend, InboundConfig{Sink: sink, BodyLimit: tt.limit})
			res, err := rawClient.Post(proxy+"/x"+tt.query, "text/plain", strings.NewReader(reqBody))
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if string(got) != resBody {
				t.Fatalf("client got %d bytes; want the whole %d", len(got), len(resBody))
			}
			e := sink.wait(t, 1)[0]
			if string(e.RequestBody) != reqBody[:tt.wantReq] || e.RequestBodySize != 100 {
				t.Errorf("request body %q size %d; want %d bytes, size 100", e.RequestBody, e.RequestBodySize, tt.wantReq)
			}
			if string(e.ResponseBody) != resBody[:tt.wantRes] || e.ResponseBodySize != 1000 {
				t.Errorf("response body %d bytes size %d; want %d bytes, size 1000", len(e.ResponseBody), e.ResponseBodySize, tt.wantRes)
			}
			if e.RequestTruncated() != (tt.wantReq < 100) || e.ResponseTruncated() != (tt.wantRes < 1000) {
				t.Errorf("truncated: request %v response %v", e.RequestTruncated(), e.ResponseTruncated())
			}
		})
	}
}

// TestInboundStreams proves that the proxy forwards a body as it arrives:
// the client reads the first chunk while the backend still holds the rest.
func TestInboundStreams(t *testing.T) {
	release := make(chan struct{})
	backend := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "first\n")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		io.WriteString(w, "second\n")
	})
	sink := newMemSink()
	proxy := startInbound(t, backend, InboundConfig{Sink: sink})
	res, err := rawClient.Get(proxy + "/stream")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	br := bufio.NewReader(res.Body)
	first := make(chan string, 1)
	go func() {
		line, _ := br.ReadString('\n')
		first <- line
	}()
	select {
	case line := <-first:
		if line != "first\n" {
			t.Fatalf("first line %q", line)
		}
	case <-time.After(30 * time.Second):
		close(release)
		t.Fatal("the client did not get the first chunk while the backend held the rest: the proxy buffers")
	}
	if n := len(sink.all()); n != 0 {
		t.Errorf("%d exchanges recorded before the body ended", n)
	}
	close(release)
	rest, _ := io.ReadAll(br)
	if string(rest) != "second\n" {
		t.Fatalf("rest %q", rest)
	}
	e := sink.wait(t, 1)[0]
	if string(e.ResponseBody) != "first\nsecond\n" || e.Error != "" {
		t.Errorf("recorded body %q error %q", e.ResponseBody, e.Error)
	}
}

func TestInboundAppDown(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + l.Addr().String()
	l.Close()
	sink := newMemSink()
	proxy := startInbound(t, nil, InboundConfig{Sink: sink, Target: mustURL(t, down)})
	res, err := rawClient.Get(proxy + "/orders")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusBadGateway || !strings.Contains(string(body), "connection refused") {
		t.Errorf("client got %d %q; want 502 naming the cause", res.StatusCode, body)
	}
	e := sink.wait(t, 1)[0]
	if e.Status != http.StatusBadGateway || !strings.Contains(e.Error, "connection refused") {
		t.Errorf("recorded status %d error %q; want 502 and the dial error", e.Status, e.Error)
	}
	if string(e.ResponseBody) != string(body) {
		t.Errorf("recorded body %q; want what the client got, %q", e.ResponseBody, body)
	}
}

// TestInboundBodyCutShort: the app dies in the middle of a response. The
// client sees the failure and the exchange is recorded with an error.
func TestInboundBodyCutShort(t *testing.T) {
	backend := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "100")
		io.WriteString(w, "0123456789")
		w.(http.Flusher).Flush()
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
	})
	sink := newMemSink()
	proxy := startInbound(t, backend, InboundConfig{Sink: sink})
	res, err := rawClient.Get(proxy + "/cut")
	if err == nil {
		_, err = io.ReadAll(res.Body)
		res.Body.Close()
	}
	if err == nil {
		t.Error("client read the whole response without an error")
	}
	e := sink.wait(t, 1)[0]
	if e.Error == "" || e.ResponseBodySize != 10 || e.Status != 200 {
		t.Errorf("recorded status %d size %d error %q; want 200, 10 bytes and an error", e.Status, e.ResponseBodySize, e.Error)
	}
}

func TestInboundGzipUnchanged(t *testing.T) {
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	zw.Write([]byte(strings.Repeat(`{"id":1}`, 100)))
	zw.Close()
	backend := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Accept-Encoding") != "gzip" {
			http.Error(w, "no gzip asked", 400)
			return
		}
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(zipped.Bytes())
	})
	sink := newMemSink()
	proxy := startInbound(t, backend, InboundConfig{Sink: sink})
	req, _ := http.NewRequest("GET", proxy+"/z", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	res, err := rawClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if !bytes.Equal(got, zipped.Bytes()) {
		t.Fatalf("client got %d bytes, status %d; want the %d gzip bytes unchanged", len(got), res.StatusCode, zipped.Len())
	}
	e := sink.wait(t, 1)[0]
	if !bytes.Equal(e.ResponseBody, zipped.Bytes()) || e.ResponseHeader.Get("Content-Encoding") != "gzip" {
		t.Errorf("recorded %d body bytes with Content-Encoding %q; want the gzip bytes", len(e.ResponseBody), e.ResponseHeader.Get("Content-Encoding"))
	}
}

// fakeTracker stands in for sqlcount: it records what it is told.
type fakeTracker struct {
	mu     sync.Mutex
	begun  map[int64]string
	ended  []int64
	during func(id int64)
}

func (f *fakeTracker) Begin(id int64, traceID string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.begun[id] = traceID
}

func (f *fakeTracker) End(id int64) []snapshots.SQLCount {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ended = append(f.ended, id)
	return nil
}

func TestInboundTracksRequestsInFlight(t *testing.T) {
	inflight := NewInflight()
	tracker := &fakeTracker{begun: map[int64]string{}}
	trace := "0af7651916cd43dd8448eb211c80319c"
	var parentByTrace, parentAlone int64
	var inFlight int
	backend := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		parentByTrace = inflight.Parent(trace)
		parentAlone = inflight.Parent("")
		inFlight = inflight.Len()
	})
	sink := newMemSink()
	proxy := startInbound(t, backend, InboundConfig{Sink: sink, Tracker: tracker, Inflight: inflight})
	req, _ := http.NewRequest("GET", proxy+"/", nil)
	req.Header.Set("traceparent", "00-"+trace+"-b7ad6b7169203331-01")
	res, err := rawClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	e := sink.wait(t, 1)[0]
	if parentByTrace != e.ID || parentAlone != e.ID || inFlight != 1 {
		t.Errorf("during the request: parent by trace %d, alone %d, in flight %d; want %d, %d, 1", parentByTrace, parentAlone, inFlight, e.ID, e.ID)
	}
	tracker.mu.Lock()
	defer tracker.mu.Unlock()
	if diff := cmp.Diff(map[int64]string{e.ID: trace}, tracker.begun); diff != "" {
		t.Errorf("tracker Begin (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]int64{e.ID}, tracker.ended); diff != "" {
		t.Errorf("tracker End (-want +got):\n%s", diff)
	}
	// The request leaves the registry just after the sink has the exchange,
	// so the registry empties within moments of sink.wait returning.
	deadline := time.Now().Add(5 * time.Second)
	for inflight.Len() != 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if n := inflight.Len(); n != 0 {
		t.Errorf("%d requests still in flight 5s after the exchange", n)
	}
}
