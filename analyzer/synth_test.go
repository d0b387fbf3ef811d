package analyzer

import (
	"context"
	"iter"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/replaykit/replay/snapshots"
)

// epSpec describes one endpoint of a synthetic run.
type epSpec struct {
	name     string
	median   time.Duration // of a lognormal latency
	sigma    float64       // its shape; 0 means 0.3
	extra    time.Duration // added to every request (an injected delay)
	weight   int           // relative share of requests; 0 means 1
	sql      []snapshots.SQLCount
	sqlFor   func(i int) []snapshots.SQLCount // when set, the statements of the i-th request (load and explain)
	failRate float64                          // probability a request fails with failStatus
	failWith int                              // status of failures; 0 means 503
	upstream []snapshots.UpstreamCount        // calls to mocked services of every request (counted when not nil)
}

// runSpec describes a synthetic run.
type runSpec struct {
	name      string
	n         int     // load-phase results
	slices    int     // interleaving slices (0: not sliced)
	drift     float64 // sigma of the per-slice machine factor shared by both sides (driftSeed)
	driftSeed uint64
	jitter    float64 // sigma of a per-slice factor of this side alone
	global    float64 // a factor on every latency of this run (sequential drift); 0 means 1
	outliers  float64 // probability of a 0–30 ms pause on a request
	explain   int     // explain-phase results per endpoint
	seed      uint64
	misses    int64
	// bursts is the probability that a slice of this side is hit by a
	// burst of load that multiplies its latencies by 8 to 30.
	bursts float64
}

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// synthResults generates a run's results deterministically.
func synthResults(spec runSpec, eps []epSpec) iter.Seq2[*snapshots.Result, error] {
	return func(yield func(*snapshots.Result, error) bool) {
		rng := rand.New(rand.NewPCG(spec.seed, 7))
		drng := rand.New(rand.NewPCG(spec.driftSeed, 11))
		slices := max(spec.slices, 1)
		drift := make([]float64, slices)
		jitter := make([]float64, slices)
		for i := range drift {
			drift[i] = math.Exp(drng.NormFloat64() * spec.drift)
			jitter[i] = math.Exp(rng.NormFloat64() * spec.jitter)
			if rng.Float64() < spec.bursts {
				jitter[i] *= 8 + 22*rng.Float64()
			}
		}
		global := spec.global
		if global == 0 {
			global = 1
		}
		total := 0
		for _, e := range eps {
			total += max(e.weight, 1)
		}
		var seq int64
		for i := range spec.n {
			pick := rng.IntN(total)
			var e epSpec
			for _, c := range eps {
				if pick -= max(c.weight, 1); pick < 0 {
					e = c
					break
				}
			}
			s := i * slices / max(spec.n, 1)
			sigma := e.sigma
			if sigma == 0 {
				sigma = 0.3
			}
			lat := float64(e.median) * math.Exp(rng.NormFloat64()*sigma) * drift[s] * jitter[s] * global
			if rng.Float64() < spec.outliers {
				lat += rng.Float64() * float64(30*time.Millisecond)
			}
			d := time.Duration(lat) + e.extra
			intended := t0.Add(time.Duration(i) * time.Millisecond)
			sent := intended.Add(time.Duration(rng.IntN(200)) * time.Microsecond)
			seq++
			r := &snapshots.Result{
				Seq: seq, Phase: snapshots.PhaseLoad, Endpoint: e.name, Method: "GET", URL: "/x",
				Intended: intended, Sent: sent, Done: sent.Add(d),
				Status: 200, RecordedStatus: 200, SQLCounted: e.sql != nil, SQL: e.sql,
				UpstreamCounted: e.upstream != nil, Upstream: e.upstream,
			}
			if spec.slices > 0 {
				r.Slice = s + 1
			}
			if e.sqlFor != nil {
				r.SQLCounted, r.SQL = true, e.sqlFor(i)
			}
			if rng.Float64() < e.failRate {
				r.Status = cmpOr(e.failWith, 503)
			}
			if !yield(r, nil) {
				return
			}
		}
		for _, e := range eps {
			for i := range spec.explain {
				seq++
				at := t0.Add(time.Duration(spec.n+int(seq)) * time.Millisecond)
				r := &snapshots.Result{
					Seq: seq, Phase: snapshots.PhaseExplain, Endpoint: e.name, Method: "GET", URL: "/x",
					Intended: at, Sent: at, Done: at.Add(e.median), Status: 200, RecordedStatus: 200,
					SQLCounted: e.sql != nil, SQL: e.sql,
					UpstreamCounted: e.upstream != nil, Upstream: e.upstream,
				}
				if e.sqlFor != nil {
					r.SQLCounted, r.SQL = true, e.sqlFor(i)
				}
				if !yield(r, nil) {
					return
				}
			}
		}
	}
}

func cmpOr(v, d int) int {
	if v == 0 {
		return d
	}
	return v
}

func (spec runSpec) info() snapshots.RunInfo {
	return snapshots.RunInfo{
		Name: spec.name, Snapshot: "demo.snap", Target: "http://127.0.0.1:8080",
		Started: t0, Ended: t0.Add(time.Duration(spec.n) * time.Millisecond), MockMisses: spec.misses,
	}
}

// summarize builds a summary of a synthetic run.
func summarize(t testing.TB, spec runSpec, eps []epSpec) *Summary {
	t.Helper()
	s, err := Summarize(context.Background(), spec.info(), synthResults(spec, eps), SummarizeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// fromSlice yields results from a slice.
func fromSlice(rs []*snapshots.Result) iter.Seq2[*snapshots.Result, error] {
	return func(yield func(*snapshots.Result, error) bool) {
		for _, r := range rs {
			if !yield(r, nil) {
				return
			}
		}
	}
}

// collect materialises a synthetic run.
func collect(seq iter.Seq2[*snapshots.Result, error]) []*snapshots.Result {
	var out []*snapshots.Result
	for r := range seq {
		out = append(out, r)
	}
	return out
}

// sortedMs returns values as sorted int64 microseconds.
func sortedUs(rs []*snapshots.Result, f func(*snapshots.Result) time.Duration) []int64 {
	var out []int64
	for _, r := range rs {
		if r.Phase == snapshots.PhaseLoad {
			out = append(out, f(r).Microseconds())
		}
	}
	slices.Sort(out)
	return out
}
