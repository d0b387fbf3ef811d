package replayer

import (
	"context"
	"crypto/tls"
	"io"
	"log"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/replaykit/replay/internal/ca"
	"github.com/replaykit/replay/internal/grpctest"
	"github.com/replaykit/replay/recorder"
	"github.com/replaykit/replay/snapshots"
)

// protoCounter is a REST server that counts the requests it serves by
// protocol and path, and echoes their bodies.
type protoCounter struct {
	mu   sync.Mutex
	seen map[string]int // "HTTP/2.0 POST /items/3"
}

func (p *protoCounter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	p.mu.Lock()
	if p.seen == nil {
		p.seen = map[string]int{}
	}
	p.seen[r.Proto+" "+r.Method+" "+r.URL.Path]++
	p.mu.Unlock()
	if strings.HasSuffix(r.URL.Path, "/missing") {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write([]byte(`{"path":"` + r.URL.Path + `","got":` + strconv.Itoa(len(body)) + `}`))
}

func (p *protoCounter) counts() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]int{}
	for k, v := range p.seen {
		out[k] = v
	}
	return out
}

// serveBoth serves h over HTTP/1.1 and h2c on one listener.
func serveBoth(t *testing.T, h http.Handler) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := new(http.Protocols)
	p.SetHTTP1(true)
	p.SetUnencryptedHTTP2(true)
	srv := &http.Server{Handler: h, Protocols: p}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return l.Addr().String()
}

// recordREST records REST requests through replay's recorder in front of
// a server of both protocols: 20 over h2c (some POSTs with bodies, some
// answered 404) and 10 over HTTP/1.1.
func recordREST(t *testing.T) ([]*snapshots.Exchange, map[string]int) {
	t.Helper()
	app := &protoCounter{}
	sink := &recSink{}
	in, err := recorder.NewInbound(recorder.InboundConfig{Target: &url.URL{Scheme: "http", Host: serveBoth(t, app)}, Sink: sink})
	if err != nil {
		t.Fatal(err)
	}
	addr := serveBoth(t, in)
	h2c := &http.Client{Transport: &http2.Transport{AllowHTTP: true, DialTLSContext: func(ctx context.Context, network, addr string, _ *tls.Config) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}}}
	send := func(c *http.Client, method, path, body string) {
		req, _ := http.NewRequest(method, "http://"+addr+path, strings.NewReader(body))
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	for i := range 20 {
		switch i % 4 {
		case 0:
			send(h2c, "POST", "/items/"+strconv.Itoa(i), strings.Repeat("x", 100*i))
		case 1:
			send(h2c, "GET", "/items/missing", "")
		default:
			send(h2c, "GET", "/items/"+strconv.Itoa(i), "")
		}
	}
	for i := range 10 {
		send(http.DefaultClient, "GET", "/h1/"+strconv.Itoa(i), "")
	}
	return sink.quiet(t, 30), app.counts()
}

// TestReplayHTTP2REST records REST over h2c and HTTP/1.1 and replays it:
// what came over HTTP/2 goes over HTTP/2, what came over HTTP/1.1 over
// HTTP/1.1, each request once, every status as recorded, in the closed
// and the open model (whose idle workers wait on HTTP/1.1 connections),
// and with Config.NetHTTP (x/net/http2's transport).
func TestReplayHTTP2REST(t *testing.T) {
	exs, want := recordREST(t)
	for _, p := range []struct {
		name    string
		plan    LoadPlan
		netHTTP bool // x/net/http2's transport rather than the direct client
	}{
		{"closed", LoadPlan{VUs: 3, Iterations: 1}, false},
		{"open", LoadPlan{Rate: Rate{Count: 300, Per: time.Second}, Iterations: 1}, false},
		{"netHTTP", LoadPlan{VUs: 3, Iterations: 1}, true},
	} {
		t.Run(p.name, func(t *testing.T) {
			app := &protoCounter{}
			r := newReplayer(t, Config{Target: "http://" + serveBoth(t, app), Exchanges: exs, NetHTTP: p.netHTTP})
			var s sink
			if _, err := r.Run(context.Background(), p.plan, &s); err != nil {
				t.Fatal(err)
			}
			checkResults(t, s.all(), len(exs))
			if got := app.counts(); !maps.Equal(got, want) {
				t.Errorf("the server saw %v on replay, %v when recorded", got, want)
			}
		})
	}
}

func checkResults(t *testing.T, res []*snapshots.Result, n int) {
	t.Helper()
	if len(res) != n {
		t.Errorf("%d results, want %d", len(res), n)
	}
	for _, r := range res {
		if r.Failed() || r.Status != r.RecordedStatus {
			t.Errorf("%s %s: status %d (recorded %d), error %q", r.Method, r.URL, r.Status, r.RecordedStatus, r.Error)
		}
	}
}

// TestReplayHTTP2OverTLS replays the gRPC and the REST recordings to
// servers over TLS (h2 by ALPN): the same calls, every status as
// recorded; a server that speaks only HTTP/1.1 (in the clear, where h2c
// went, or over TLS) is named.
func TestReplayHTTP2OverTLS(t *testing.T) {
	c, err := ca.LoadOrCreate(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cert, err := c.Leaf("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	tlsCfg := &tls.Config{RootCAs: c.Pool()}
	t.Run("grpc", func(t *testing.T) {
		exs, calls := recordInterop(t)
		srv := grpctest.Start(t, cert)
		r := newReplayer(t, Config{Target: "https://" + srv.Addr, Exchanges: exs, TLS: tlsCfg})
		var s sink
		if _, err := r.Run(context.Background(), LoadPlan{VUs: 4, Iterations: 1}, &s); err != nil {
			t.Fatal(err)
		}
		checkGRPCReplay(t, s.all(), exs, calls, waitCalls(srv, len(exs)))
	})
	t.Run("rest", func(t *testing.T) {
		exs, want := recordREST(t)
		app := &protoCounter{}
		ts := httptest.NewUnstartedServer(app)
		ts.EnableHTTP2 = true
		ts.TLS = &tls.Config{Certificates: []tls.Certificate{*cert}}
		ts.StartTLS()
		defer ts.Close()
		r := newReplayer(t, Config{Target: ts.URL, Exchanges: exs, TLS: tlsCfg})
		var s sink
		if _, err := r.Run(context.Background(), LoadPlan{VUs: 3, Iterations: 1}, &s); err != nil {
			t.Fatal(err)
		}
		checkResults(t, s.all(), len(exs))
		// Over TLS, every request's protocol is the target's choice by
		// ALPN: h2 for those recorded over HTTP/2, HTTP/1.1 (net/http
		// asks for it alone) for the others.
		if got := app.counts(); !maps.Equal(got, want) {
			t.Errorf("the server saw %v on replay, %v when recorded", got, want)
		}
	})
	t.Run("no h2c", func(t *testing.T) {
		exs, _ := recordREST(t)
		ts := httptest.NewServer(&protoCounter{}) // HTTP/1.1 alone
		defer ts.Close()
		r := newReplayer(t, Config{Target: ts.URL, Exchanges: exs[:1]})
		var s sink
		if _, err := r.Run(context.Background(), LoadPlan{VUs: 1, Iterations: 1}, &s); err != nil {
			t.Fatal(err)
		}
		// What the client sees first decides the words: the server's
		// HTTP/1.1 answer to the preface, or the connection it then closes.
		if res := s.all(); len(res) != 1 || res[0].Status != 0 ||
			!strings.Contains(res[0].Error, "answered in HTTP/1.1") && !strings.Contains(res[0].Error, "client conn could not be established") {
			t.Errorf("result %+v, want an error saying the target speaks HTTP/1.1 only", res[0])
		}
	})
	t.Run("no h2", func(t *testing.T) {
		exs, _ := recordREST(t)
		ts := httptest.NewUnstartedServer(&protoCounter{})
		ts.Config.ErrorLog = log.New(io.Discard, "", 0)
		ts.TLS = &tls.Config{Certificates: []tls.Certificate{*cert}, NextProtos: []string{"http/1.1"}}
		ts.StartTLS()
		defer ts.Close()
		r := newReplayer(t, Config{Target: ts.URL, Exchanges: exs[:1], TLS: tlsCfg})
		var s sink
		if _, err := r.Run(context.Background(), LoadPlan{VUs: 1, Iterations: 1}, &s); err != nil {
			t.Fatal(err)
		}
		if res := s.all(); len(res) != 1 || !strings.Contains(res[0].Error, "HTTP/2 (ALPN h2)") {
			t.Errorf("results %+v, want an error saying the target offers no HTTP/2", res[0])
		}
	})
}
