package replayer

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2/hpack"

	"github.com/replaykit/replay/snapshots"
)

// bigBodies answers each request with as many bytes as its path says,
// after checking that its body is the one recorded (its length in its
// X-Len header, every byte 'u'); it counts the requests it saw whole.
type bigBodies struct {
	mu   sync.Mutex
	ok   int
	bad  []string
	busy int // streams in its handler at once, at most
	now  int
}

func (b *bigBodies) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b.mu.Lock()
	b.now++
	b.busy = max(b.busy, b.now)
	b.mu.Unlock()
	time.Sleep(time.Millisecond)
	body, err := io.ReadAll(r.Body)
	n, _ := strconv.Atoi(r.URL.Path[1:])
	want, _ := strconv.Atoi(r.Header.Get("X-Len"))
	b.mu.Lock()
	b.now--
	if err != nil || len(body) != want || bytes.Count(body, []byte("u")) != want || r.ProtoMajor != 2 {
		b.bad = append(b.bad, r.Proto+" "+r.URL.Path)
	} else {
		b.ok++
	}
	b.mu.Unlock()
	w.Write(bytes.Repeat([]byte("d"), n))
}

// serveH2C serves h over h2c alone, with the HTTP/2 settings cfg.
func serveH2C(t *testing.T, h http.Handler, cfg *http.HTTP2Config, keepAlives bool) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := new(http.Protocols)
	p.SetUnencryptedHTTP2(true)
	srv := &http.Server{Handler: h, Protocols: p, HTTP2: cfg}
	srv.SetKeepAlivesEnabled(keepAlives)
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return l.Addr().String()
}

// bigExchanges are n POSTs recorded over HTTP/2, of bodies up to 300 KB
// answered by up to 9 MB.
func bigExchanges(n int) []*snapshots.Exchange {
	var exs []*snapshots.Exchange
	for i := range n {
		up, down := (i%3)*150_000, (i%4)*3_000_000
		exs = append(exs, &snapshots.Exchange{ID: int64(i + 1), Proto: "HTTP/2.0", Method: "POST",
			URL: "/" + strconv.Itoa(down), Status: 200,
			RequestHeader: http.Header{"X-Len": {strconv.Itoa(up)}}, RequestBody: bytes.Repeat([]byte("u"), up)})
	}
	return exs
}

// TestH2DirectFlowControl replays requests whose bodies exceed the
// server's windows (16 KiB a stream, 64 KiB the connection) to a server
// that takes 2 streams at once, answered by bodies past the client's own
// window (4 MiB): every body arrives whole both ways, no more streams
// than allowed are open.
func TestH2DirectFlowControl(t *testing.T) {
	app := &bigBodies{}
	addr := serveH2C(t, app, &http.HTTP2Config{MaxConcurrentStreams: 2,
		MaxReceiveBufferPerStream: 16 << 10, MaxReceiveBufferPerConnection: 64 << 10}, true)
	exs := bigExchanges(12)
	r := newReplayer(t, Config{Target: "http://" + addr, Exchanges: exs, Timeout: 20 * time.Second})
	var s sink
	if _, err := r.Run(context.Background(), LoadPlan{VUs: 6, Iterations: 1}, &s); err != nil {
		t.Fatal(err)
	}
	res := s.all()
	checkResults(t, res, len(exs))
	for _, x := range res {
		if want, _ := strconv.Atoi(x.URL[1:]); x.Bytes != int64(want) {
			t.Errorf("%s: %d bytes received, want %d", x.URL, x.Bytes, want)
		}
	}
	if app.ok != len(exs) || len(app.bad) > 0 || app.busy > 2 {
		t.Errorf("the server saw %d requests whole, %v not, %d at once (limit 2)", app.ok, app.bad, app.busy)
	}
}

// TestH2DirectGoAway replays to a server that says GOAWAY each time its
// connection idles: streams it did not take are sent again on a new
// connection, each request served once.
func TestH2DirectGoAway(t *testing.T) {
	app := &bigBodies{}
	addr := serveH2C(t, app, nil, false)
	var exs []*snapshots.Exchange
	for i := range 60 {
		exs = append(exs, &snapshots.Exchange{ID: int64(i + 1), Proto: "HTTP/2.0", Method: "GET",
			URL: "/10", Status: 200, RequestHeader: http.Header{"X-Len": {"0"}}})
	}
	r := newReplayer(t, Config{Target: "http://" + addr, Exchanges: exs})
	var s sink
	if _, err := r.Run(context.Background(), LoadPlan{VUs: 4, Iterations: 1}, &s); err != nil {
		t.Fatal(err)
	}
	checkResults(t, s.all(), len(exs))
	if app.ok != len(exs) || len(app.bad) > 0 {
		t.Errorf("the server saw %d requests, %v bad; want %d", app.ok, app.bad, len(exs))
	}
}

// FuzzAppendHPACK: a header field as the direct client encodes it (an
// HPACK literal without indexing) decodes to itself, whatever its length
// (one byte of length, or more past 126).
func FuzzAppendHPACK(f *testing.F) {
	f.Add("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	f.Add("x", strings.Repeat("v", 126))
	f.Add(strings.Repeat("n", 127), strings.Repeat("v", 128))
	f.Add("grpc-timeout", strings.Repeat("v", 20000))
	f.Fuzz(func(t *testing.T, name, value string) {
		b := appendHPACK(appendHPACK(nil, name, value), "te", "trailers")
		var got []hpack.HeaderField
		d := hpack.NewDecoder(4096, func(f hpack.HeaderField) { got = append(got, f) })
		d.SetMaxStringLength(1 << 20)
		if _, err := d.Write(b); err != nil {
			t.Fatalf("%q: %v", b, err)
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || got[0].Name != name || got[0].Value != value || got[1].Value != "trailers" {
			t.Errorf("decoded %q, want %q: %q", got, name, value)
		}
	})
}
