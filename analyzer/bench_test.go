package analyzer

import (
	"context"
	"fmt"
	"iter"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/replaykit/replay/internal/cputime"
	"github.com/replaykit/replay/snapshots"
)

// benchEndpoints are five endpoints with SQL counted, like a small service.
var benchEndpoints = []struct {
	name   string
	median time.Duration
	weight int
	sql    []snapshots.SQLCount
}{
	{"GET /orders", 3 * ms, 30, []snapshots.SQLCount{listSQL}},
	{"GET /orders/{id}", 2 * ms, 30, []snapshots.SQLCount{statusFP, {Fingerprint: itemsFP, Count: 1, Duration: 200 * time.Microsecond}}},
	{"GET /orders/{id}/status", 2 * ms, 20, []snapshots.SQLCount{statusFP}},
	{"POST /orders", 6 * ms, 15, []snapshots.SQLCount{{Fingerprint: "BEGIN", Count: 1}, {Fingerprint: "INSERT INTO orders (customer) VALUES (?) RETURNING id", Count: 1, Duration: ms}, {Fingerprint: "COMMIT", Count: 1, Duration: ms}}},
	{"GET /catalog", 20 * ms, 5, nil},
}

// benchResults streams n results as a run reader would (a new Result per
// row), with latencies from a precomputed lognormal table so that the
// generator costs little next to what it feeds.
func benchResults(n int, seed uint64, slices int, extra time.Duration) iter.Seq2[*snapshots.Result, error] {
	rng := rand.New(rand.NewPCG(seed, 1))
	table := make([]time.Duration, 1<<16)
	for i := range table {
		table[i] = time.Duration(math.Exp(rng.NormFloat64()*0.4) * float64(time.Millisecond))
	}
	var pick []int
	for i, e := range benchEndpoints {
		for range e.weight {
			pick = append(pick, i)
		}
	}
	return func(yield func(*snapshots.Result, error) bool) {
		for i := range n {
			h := uint64(i)*0x9E3779B97F4A7C15 + seed
			e := benchEndpoints[pick[h%uint64(len(pick))]]
			d := time.Duration(float64(table[(h>>20)&0xFFFF]) * float64(e.median) / float64(time.Millisecond))
			if e.name == "GET /orders" {
				d += extra
			}
			at := t0.Add(time.Duration(i) * 100 * time.Microsecond)
			r := &snapshots.Result{Seq: int64(i + 1), Phase: snapshots.PhaseLoad, Endpoint: e.name, Method: "GET", URL: "/x",
				Intended: at, Sent: at.Add(50 * time.Microsecond), Done: at.Add(50*time.Microsecond + d),
				Status: 200, RecordedStatus: 200, SQLCounted: e.sql != nil}
			if e.sql != nil {
				r.SQL = append([]snapshots.SQLCount(nil), e.sql...)
			}
			if slices > 0 {
				r.Slice = 2*(i*slices/n) + int(seed%2) + 1
			}
			if !yield(r, nil) {
				return
			}
		}
	}
}

func benchSummary(b *testing.B, n int, seed uint64, slices int, extra time.Duration) *Summary {
	s, err := Summarize(context.Background(), snapshots.RunInfo{Name: fmt.Sprint(seed)}, benchResults(n, seed, slices, extra), SummarizeOptions{})
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// reportCPU reports CPU seconds per operation since start.
func reportCPU(b *testing.B, start float64) {
	b.ReportMetric((cputime.Self().Seconds()-start)/float64(b.N), "cpu-s/op")
}

// BenchmarkSummarize1M summarizes a run of 1,000,000 results.
func BenchmarkSummarize1M(b *testing.B) {
	const n = 1_000_000
	cpu := cputime.Self().Seconds()
	var s *Summary
	for b.Loop() {
		s = benchSummary(b, n, 1, 20, 0)
	}
	reportCPU(b, cpu)
	// What a summary of a million results keeps: bounded by endpoints.
	var before, after runtime.MemStats
	s = nil
	runtime.GC()
	runtime.ReadMemStats(&before)
	s = benchSummary(b, n, 1, 20, 0)
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/1e6, "summary-MB")
	runtime.KeepAlive(s)
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "results/s")
}

// BenchmarkGenerate1M is the cost of the generator alone, to subtract.
func BenchmarkGenerate1M(b *testing.B) {
	cpu := cputime.Self().Seconds()
	for b.Loop() {
		for r := range benchResults(1_000_000, 1, 20, 0) {
			_ = r
		}
	}
	reportCPU(b, cpu)
}

// BenchmarkCompareTwo1M summarizes two runs of 1,000,000 results each and
// compares them, interleaved (paired slices) and sequential (iid bootstrap).
func BenchmarkCompareTwo1M(b *testing.B) {
	for _, slices := range []int{20, 0} {
		name := "interleaved"
		if slices == 0 {
			name = "sequential"
		}
		b.Run(name, func(b *testing.B) {
			cpu := cputime.Self().Seconds()
			for b.Loop() {
				base := benchSummary(b, 1_000_000, 2, slices, 0)
				cand := benchSummary(b, 1_000_000, 3, slices, 20*ms)
				c, err := Compare(base, cand, CompareOptions{})
				if err != nil {
					b.Fatal(err)
				}
				if c.Verdict != Regression {
					b.Fatalf("verdict %s, want regression", c.Verdict)
				}
			}
			reportCPU(b, cpu)
		})
	}
}

// BenchmarkCompare compares two prepared summaries of five endpoints each.
func BenchmarkCompare(b *testing.B) {
	for _, slices := range []int{20, 0} {
		name := "interleaved"
		if slices == 0 {
			name = "sequential"
		}
		b.Run(name, func(b *testing.B) {
			base := benchSummary(b, 200_000, 2, slices, 0)
			cand := benchSummary(b, 200_000, 3, slices, 0)
			cpu := cputime.Self().Seconds()
			for b.Loop() {
				if _, err := Compare(base, cand, CompareOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			reportCPU(b, cpu)
		})
	}
}

// BenchmarkCompareRunFiles reads two run files of 1,000,000 results each
// (REPLAY_BENCH_RESULTS to change) from disk, summarizes and compares them.
// Writing the files is set-up, not timed.
func BenchmarkCompareRunFiles(b *testing.B) {
	n := 1_000_000
	if v, err := strconv.Atoi(os.Getenv("REPLAY_BENCH_RESULTS")); err == nil && v > 0 {
		n = v
	}
	dir := b.TempDir()
	var paths [2]string
	for i, seed := range []uint64{2, 3} {
		paths[i] = filepath.Join(dir, fmt.Sprintf("%d.run", i))
		info := snapshots.RunInfo{Name: fmt.Sprint(i), Started: t0}
		w, err := snapshots.CreateRun(paths[i], info)
		if err != nil {
			b.Fatal(err)
		}
		for r := range benchResults(n, seed, 20, time.Duration(i)*20*ms) {
			w.Add(r)
		}
		if err := w.Close(info); err != nil {
			b.Fatal(err)
		}
	}
	ctx := context.Background()
	cpu := cputime.Self().Seconds()
	for b.Loop() {
		base, err := snapshots.OpenRun(paths[0])
		if err != nil {
			b.Fatal(err)
		}
		cand, err := snapshots.OpenRun(paths[1])
		if err != nil {
			b.Fatal(err)
		}
		c, err := CompareRuns(ctx, base, cand, SummarizeOptions{}, CompareOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if c.Verdict != Regression {
			b.Fatalf("verdict %s, want regression", c.Verdict)
		}
		base.Close()
		cand.Close()
	}
	b.ReportMetric(float64(2*n)*float64(b.N)/b.Elapsed().Seconds(), "results/s")
	reportCPU(b, cpu)
}
