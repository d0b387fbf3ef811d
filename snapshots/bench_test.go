package snapshots

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/replaykit/replay/internal/cputime"
)

// benchExchange is a typical recorded API call: about 1.5 KB with headers
// and JSON bodies.
func benchExchange(i int) *Exchange {
	reqBody := bytes.Repeat([]byte(`{"sku":"A-1","qty":2},`), 12)
	respBody := bytes.Repeat([]byte(`{"id":12345,"status":"shipped","total":"19.99"},`), 18)
	return &Exchange{
		Direction: Inbound,
		Protocol:  "http",
		Service:   "127.0.0.1:8080",
		Start:     time.Unix(1700000000, int64(i)),
		Duration:  3 * time.Millisecond,
		Method:    "POST",
		URL:       fmt.Sprintf("/orders/%d/items?expand=1", i),
		Proto:     "HTTP/1.1",
		RequestHeader: http.Header{
			"Content-Type": {"application/json"}, "User-Agent": {"Go-http-client/1.1"},
			"Accept-Encoding": {"gzip"}, "Traceparent": {"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
		},
		RequestBody:      reqBody,
		RequestBodySize:  int64(len(reqBody)),
		Status:           200,
		ResponseHeader:   http.Header{"Content-Type": {"application/json"}, "Date": {"Mon, 02 Jan 2006 15:04:05 GMT"}},
		ResponseBody:     respBody,
		ResponseBodySize: int64(len(respBody)),
	}
}

// BenchmarkWriter measures exchanges written per second (committed, since
// Close waits for the last commit), from 8 concurrent producers.
func BenchmarkWriter(b *testing.B) {
	path := filepath.Join(b.TempDir(), "bench.snap")
	w, err := Create(path, Options{})
	if err != nil {
		b.Fatal(err)
	}
	size := int64(0)
	e := benchExchange(0)
	size = int64(len(e.RequestBody) + len(e.ResponseBody) + 300)
	b.SetBytes(size)
	b.SetParallelism(4)
	cpu0 := cputime.Self()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		// Exchanges share headers and bodies (a recorder's would not, but
		// making them is the recorder's cost, not the writer's).
		var templates [64]*Exchange
		for i := range templates {
			templates[i] = benchExchange(i)
		}
		i := 0
		for pb.Next() {
			i++
			e := *templates[i%len(templates)]
			w.CountSeen(Inbound)
			w.AddExchange(&e)
		}
	})
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "exchanges/s")
	b.ReportMetric(float64((cputime.Self()-cpu0).Microseconds())/float64(b.N), "cpu-µs/exchange")
	s, err := Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	n, _, err := s.Counts(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	if n != int64(b.N) {
		b.Fatalf("wrote %d exchanges, file holds %d", b.N, n)
	}
}

// BenchmarkRunWrite measures results written per second, with two SQL
// counts on half of them, from 4 producers per CPU: results made for each
// Add (two fmt.Sprintf calls each, as the benchmark always did), and copied
// from a few (the writer's cost alone, nearly).
func BenchmarkRunWrite(b *testing.B) {
	var templates [64]*Result
	for i := range templates {
		templates[i] = sampleResult(i + 1)
	}
	copied := func(i int) *Result {
		r := *templates[i%len(templates)]
		r.Seq = 0
		return &r
	}
	for _, bench := range []struct {
		name   string
		result func(i int) *Result
		pack   bool // RunWriter.Pack, not Add
	}{
		{"made", sampleResult, false},
		{"copied", copied, false},
		{"copied-packed", copied, true},
	} {
		b.Run(bench.name, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "bench.run")
			w, err := CreateRun(path, RunInfo{Name: "bench"})
			if err != nil {
				b.Fatal(err)
			}
			b.SetParallelism(4)
			cpu0 := cputime.Self()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				i := 0
				for pb.Next() {
					i++
					if bench.pack {
						w.Pack(bench.result(i))
					} else {
						w.Add(bench.result(i))
					}
				}
			})
			if err := w.Close(RunInfo{}); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "results/s")
			b.ReportMetric(float64((cputime.Self()-cpu0).Microseconds())/float64(b.N), "cpu-µs/result")
		})
	}
}

// BenchmarkRunRead measures results read per second by Run.Results.
func BenchmarkRunRead(b *testing.B) {
	path := filepath.Join(b.TempDir(), "bench.run")
	w, err := CreateRun(path, RunInfo{Name: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	for i := 1; i <= b.N; i++ {
		w.Add(sampleResult(i))
	}
	if err := w.Close(RunInfo{}); err != nil {
		b.Fatal(err)
	}
	r, err := OpenRun(path)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	runtime.GC()
	var ms runtime.MemStats
	var maxHeap uint64
	cpu0 := cputime.Self()
	b.ResetTimer()
	n := 0
	for _, err := range r.Results(context.Background()) {
		if err != nil {
			b.Fatal(err)
		}
		n++
		if n%(1<<16) == 0 { // memory stays bounded: sample the heap
			runtime.ReadMemStats(&ms)
			maxHeap = max(maxHeap, ms.HeapAlloc)
		}
	}
	b.StopTimer()
	if n != b.N {
		b.Fatalf("read %d of %d", n, b.N)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "results/s")
	b.ReportMetric(float64((cputime.Self()-cpu0).Microseconds())/float64(b.N), "cpu-µs/result")
	b.ReportMetric(float64(maxHeap)/(1<<20), "max-heap-MB")
}

// benchByID writes n inbound exchanges (benchExchange), each with an
// outbound call, and returns the snapshot and the IDs of direction d in
// order.
func benchByID(b *testing.B, n int, d Direction) (*Snapshot, []int64) {
	b.Helper()
	path := filepath.Join(b.TempDir(), "byid.snap")
	w, err := Create(path, Options{})
	if err != nil {
		b.Fatal(err)
	}
	for i := range n {
		in := benchExchange(i)
		in.ID = w.NewID()
		w.AddExchange(in)
		out := benchExchange(i)
		out.Direction, out.Service, out.ParentID = Outbound, "stock.test:443", in.ID
		w.AddExchange(out)
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	s, err := Open(path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	var ids []int64
	for e, err := range s.Index(context.Background(), d) {
		if err != nil {
			b.Fatal(err)
		}
		ids = append(ids, e.ID)
	}
	return s, ids
}

// benchmarkByID reads batches of batch IDs with read, as a replay does
// during its load (Requests: the replayer's batches of 512; Answers: the
// mock's of 128), and reports the CPU per exchange read.
func benchmarkByID(b *testing.B, d Direction, batch int, read func(*Snapshot) func(context.Context, []int64) ([]*Exchange, error)) {
	s, ids := benchByID(b, 20000, d)
	ctx := context.Background()
	cpu0 := cputime.Self()
	b.ResetTimer()
	n := 0
	for i := 0; i < b.N; i++ {
		lo := (i * batch) % (len(ids) - batch)
		exs, err := read(s)(ctx, ids[lo:lo+batch])
		if err != nil || len(exs) != batch {
			b.Fatalf("%v: %d of %d", err, len(exs), batch)
		}
		n += len(exs)
	}
	b.StopTimer()
	b.ReportMetric(float64((cputime.Self()-cpu0).Nanoseconds())/float64(n)/1000, "cpu-µs/exchange")
}

func BenchmarkRequests(b *testing.B) {
	benchmarkByID(b, Inbound, 512, func(s *Snapshot) func(context.Context, []int64) ([]*Exchange, error) { return s.Requests })
}

func BenchmarkAnswers(b *testing.B) {
	benchmarkByID(b, Outbound, 128, func(s *Snapshot) func(context.Context, []int64) ([]*Exchange, error) { return s.Answers })
}
