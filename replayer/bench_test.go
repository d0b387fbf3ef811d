package replayer

import (
	"context"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

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
	cpu0 := cpuTime()
	// One pass is one request: b.N iterations send b.N requests.
	if _, err := r.Run(context.Background(), LoadPlan{VUs: 8, Iterations: b.N}, &s); err != nil {
		b.Fatal(err)
	}
	cpu := cpuTime() - cpu0
	b.StopTimer()
	// The process's CPU per request, the target's included: steadier than
	// the time per request on a shared machine.
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-us/req")
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

// BenchmarkOpenModelLag runs the open model at 2,000 requests per second
// (b.N requests; use -benchtime 10000x for a five-second run) against an
// in-process loopback target and reports, in milliseconds, the latency from
// the intended start and the service time (from the actual send) at p50 and
// p99, their differences (the latency the generator adds: "added-p50-ms",
// "added-p99-ms") and the percentiles of the send lag itself (actual send
// minus intended start), and the process's CPU time per request, the
// target's included ("cpu-us/req"). It measures, it asserts nothing: the
// figures depend on the machine and on what else runs on it. benchtool
// compare measures the same against vegeta with the target in another
// process.
func BenchmarkOpenModelLag(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello, world\n")
	}))
	defer srv.Close()
	r, err := New(Config{Target: srv.URL, Exchanges: exchanges(1)})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	var s sink
	b.ResetTimer()
	cpu0 := cpuTime()
	plan := LoadPlan{Rate: Rate{Count: 2000, Per: time.Second}, Iterations: b.N}
	if _, err := r.Run(context.Background(), plan, &s); err != nil {
		b.Fatal(err)
	}
	cpu := cpuTime() - cpu0
	b.StopTimer()
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-us/req")
	res := s.all()
	var lat, svc, lag []time.Duration
	for _, x := range res {
		if x.Failed() {
			b.Fatalf("request failed: %s", x.Error)
		}
		lat = append(lat, x.Latency())
		svc = append(svc, x.ServiceTime())
		lag = append(lag, x.Sent.Sub(x.Intended))
	}
	for _, q := range []struct {
		name string
		p    float64
	}{{"p50", 0.50}, {"p99", 0.99}} {
		l, v := quantile(lat, q.p), quantile(svc, q.p)
		b.ReportMetric(ms(l), "lat-"+q.name+"-ms")
		b.ReportMetric(ms(v), "svc-"+q.name+"-ms")
		b.ReportMetric(ms(l-v), "added-"+q.name+"-ms")
		b.ReportMetric(ms(quantile(lag, q.p)), "sendlag-"+q.name+"-ms")
	}
}

// quantile returns the q-quantile of d (nearest rank); it sorts d.
func quantile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	i := int(math.Ceil(q*float64(len(d)))) - 1
	return d[max(i, 0)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// cpuTime is the process's user and system time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
