package recorder

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/replaykit/replay/snapshots"
)

// discardSink counts exchanges and keeps none.
type discardSink struct{ ids, added atomic.Int64 }

func (s *discardSink) NewID() int64                    { return s.ids.Add(1) }
func (s *discardSink) AddExchange(*snapshots.Exchange) { s.added.Add(1) }
func (s *discardSink) CountSeen(snapshots.Direction)   {}

// BenchmarkOutbound measures what the recording forward proxy adds to an
// app's HTTPS calls (1 KiB JSON responses, keep-alive): direct to the
// upstream against through the MITM recorder, and the same for plain HTTP,
// one request at a time (latency: ns/op) and from 32 concurrent clients
// (throughput: req/s).
//
//	go test -run '^$' -bench BenchmarkOutbound -benchtime 3s ./recorder/
func BenchmarkOutbound(b *testing.B) {
	e := newOBEnv(b)
	body := `{"items":[` + strings.Repeat(`{"sku":"A-1","price":100},`, 39) + `{"sku":"A-1","price":100}]}`
	e.https("api.test:443", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, body)
	}))
	e.http("plain.test:80", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, body)
	}))
	sink := &discardSink{}
	e.cfg.Sink = sink
	e.start()

	upstream := e.resolve["api.test:443"]
	direct := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, upstream)
		},
		TLSClientConfig:     &tls.Config{RootCAs: e.upstreamCA.Pool()},
		MaxIdleConnsPerHost: 256,
	}}
	plainUpstream := e.resolve["plain.test:80"]
	plainDirect := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, plainUpstream)
		},
		MaxIdleConnsPerHost: 256,
	}}
	proxied := e.client()
	proxied.Transport.(*http.Transport).MaxIdleConnsPerHost = 256

	get := func(b *testing.B, c *http.Client, url string) {
		res, err := c.Get(url)
		if err != nil {
			b.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || n != int64(len(body)) {
			b.Fatalf("status %d, %d bytes", res.StatusCode, n)
		}
	}
	cases := []struct {
		name string
		c    *http.Client
		url  string
	}{
		{"https-direct", direct, "https://api.test/products"},
		{"https-mitm", proxied, "https://api.test/products"},
		{"http-direct", plainDirect, "http://plain.test/products"},
		{"http-proxy", proxied, "http://plain.test/products"},
	}
	for _, tc := range cases {
		b.Run(tc.name+"/serial", func(b *testing.B) {
			get(b, tc.c, tc.url) // warm the connections and the leaf
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				get(b, tc.c, tc.url)
			}
		})
		b.Run(tc.name+"/parallel32", func(b *testing.B) {
			get(b, tc.c, tc.url)
			b.SetParallelism(max(1, 32/runtime.GOMAXPROCS(0)))
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					get(b, tc.c, tc.url)
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
		})
	}
	if sink.added.Load() == 0 {
		b.Error("nothing was recorded")
	}
}
