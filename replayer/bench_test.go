package replayer

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/replaykit/replay/snapshots"
)

type countSink struct{ n atomic.Int64 }

func (c *countSink) Add(*snapshots.Result) { c.n.Add(1) }

// benchmarkClosed sends b.N requests with 8 virtual users to a loopback
// target; the target shares the CPU, so compare the two clients, not the
// absolute figures (scripts/bench measures generator CPU per request).
func benchmarkClosed(b *testing.B, netHTTP bool) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello, world\n")
	}))
	defer srv.Close()
	r, err := New(Config{Target: srv.URL, Exchanges: exchanges(1), NetHTTP: netHTTP})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	var s countSink
	b.ReportAllocs()
	b.ResetTimer()
	// One pass is one request: b.N iterations send b.N requests.
	if _, err := r.Run(context.Background(), LoadPlan{VUs: 8, Iterations: b.N}, &s); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	if s.n.Load() != int64(b.N) {
		b.Fatalf("%d results for %d requests", s.n.Load(), b.N)
	}
}

func BenchmarkClosedFastClient(b *testing.B) { benchmarkClosed(b, false) }
func BenchmarkClosedNetHTTP(b *testing.B)    { benchmarkClosed(b, true) }

func BenchmarkTraceparent(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		newTraceparent()
	}
}
