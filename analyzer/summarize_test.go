package analyzer

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/replaykit/replay/snapshots"
)

// refQuantile is the nearest-rank quantile of sorted values as
// HdrHistogram defines it: the value at rank floor(q·n + 0.5), clamped to
// [1, n].
func refQuantile(sorted []int64, q float64) float64 {
	n := len(sorted)
	r := int(math.Floor(q*float64(n) + 0.5))
	if r < 1 {
		r = 1
	}
	if r > n {
		r = n
	}
	return float64(sorted[r-1]) / 1000
}

func TestPercentilesAgainstSortedReference(t *testing.T) {
	dists := map[string]func(r *rand.Rand) time.Duration{
		"lognormal": func(r *rand.Rand) time.Duration {
			return time.Duration(float64(4*time.Millisecond) * math.Exp(r.NormFloat64()*0.6))
		},
		"uniform": func(r *rand.Rand) time.Duration { return time.Duration(r.Int64N(int64(time.Second))) },
		"bimodal": func(r *rand.Rand) time.Duration {
			if r.IntN(10) == 0 {
				return 200*time.Millisecond + time.Duration(r.Int64N(int64(50*time.Millisecond)))
			}
			return time.Duration(r.Int64N(int64(3 * time.Millisecond)))
		},
		"sub-ms": func(r *rand.Rand) time.Duration { return time.Duration(r.Int64N(int64(900 * time.Microsecond))) },
	}
	for name, dist := range dists {
		for _, n := range []int{1, 2, 7, 100, DefaultSampleSize, DefaultSampleSize + 1, 20000} {
			t.Run(fmt.Sprintf("%s/%d", name, n), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(n), 3))
				rs := make([]*snapshots.Result, n)
				for i := range rs {
					at := t0.Add(time.Duration(i) * time.Millisecond)
					sent := at.Add(time.Duration(rng.IntN(1000)) * time.Microsecond)
					rs[i] = &snapshots.Result{Phase: snapshots.PhaseLoad, Endpoint: "GET /a", Intended: at, Sent: sent,
						Done: sent.Add(dist(rng)), Status: 200, RecordedStatus: 200}
				}
				s, err := Summarize(context.Background(), snapshots.RunInfo{}, fromSlice(rs), SummarizeOptions{})
				if err != nil {
					t.Fatal(err)
				}
				exact := n <= DefaultSampleSize
				for _, which := range []struct {
					name string
					got  LatencyStats
					f    func(*snapshots.Result) time.Duration
				}{
					{"latency", s.Endpoints[0].Latency, (*snapshots.Result).Latency},
					{"service time", s.Endpoints[0].ServiceTime, (*snapshots.Result).ServiceTime},
					{"overall latency", s.Overall.Latency, (*snapshots.Result).Latency},
				} {
					ref := sortedUs(rs, which.f)
					var sum int64
					for _, v := range ref {
						sum += v
					}
					check := func(what string, got, want float64, tol float64) {
						t.Helper()
						if math.Abs(got-want) > tol {
							t.Errorf("%s %s = %v ms, want %v ms (±%v)", which.name, what, got, want, tol)
						}
					}
					if which.got.Count != int64(n) {
						t.Errorf("%s count = %d, want %d", which.name, which.got.Count, n)
					}
					check("avg", which.got.Avg, float64(sum)/float64(n)/1000, 1e-9)
					check("min", which.got.Min, float64(ref[0])/1000, 0)
					check("max", which.got.Max, float64(ref[n-1])/1000, 0)
					for _, q := range []struct {
						q   float64
						got float64
					}{{0.50, which.got.P50}, {0.90, which.got.P90}, {0.95, which.got.P95}, {0.99, which.got.P99}} {
						want := refQuantile(ref, q.q)
						tol := 0.0
						if !exact {
							tol = want*0.001 + 0.001 // HdrHistogram: 3 significant digits, 1 µs unit
						}
						check(fmt.Sprintf("p%g", q.q*100), q.got, want, tol)
					}
				}
			})
		}
	}
}

func TestSummarizeFigures(t *testing.T) {
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	load := func(ep string, start, dur, status, recorded int, sql ...snapshots.SQLCount) *snapshots.Result {
		return &snapshots.Result{Phase: snapshots.PhaseLoad, Endpoint: ep, Method: "GET", Intended: at(start), Sent: at(start + 1),
			Done: at(start + dur), Status: status, RecordedStatus: recorded, SQLCounted: sql != nil, SQL: sql}
	}
	ms := time.Millisecond
	q := func(fp string, n int, d time.Duration) snapshots.SQLCount {
		return snapshots.SQLCount{Fingerprint: fp, Count: n, Duration: d}
	}
	results := []*snapshots.Result{
		load("GET /orders", 0, 10, 200, 200, q("SELECT a", 1, 2*ms)),
		load("GET /orders", 100, 20, 200, 200, q("SELECT a", 1, 4*ms), q("SELECT b", 2, 2*ms)),
		load("GET /orders", 200, 30, 503, 200, q("SELECT a", 1, 6*ms)),
		load("GET /orders/{id}", 300, 5, 404, 404, []snapshots.SQLCount{}...), // counted, no statements
		load("GET /orders/{id}", 400, 5, 0, 200),
		{Phase: snapshots.PhaseLoad, Endpoint: "GET /orders/{id}", Intended: at(500), Sent: at(500), Done: at(1000), Error: "timeout"},
		// explain phase: exact counts for GET /orders, none for the other.
		{Phase: snapshots.PhaseExplain, Endpoint: "GET /orders", Intended: at(2000), Sent: at(2000), Done: at(2003), Status: 200, RecordedStatus: 200,
			SQLCounted: true, SQL: []snapshots.SQLCount{q("SELECT a", 1, ms), q("SELECT b", 3, 3*ms)}},
		{Phase: snapshots.PhaseExplain, Endpoint: "GET /orders", Intended: at(2010), Sent: at(2010), Done: at(2013), Status: 500, RecordedStatus: 200,
			SQLCounted: true, SQL: []snapshots.SQLCount{q("SELECT a", 1, ms), q("SELECT b", 1, ms)}},
	}
	results[3].SQLCounted = true
	s, err := Summarize(context.Background(), snapshots.RunInfo{Name: "base"}, fromSlice(results), SummarizeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Duration != time.Second {
		t.Errorf("duration = %v, want 1s (first intended start to last response)", s.Duration)
	}
	if len(s.Endpoints) != 2 || s.Endpoints[0].Endpoint != "GET /orders" {
		t.Fatalf("endpoints = %v", s.Endpoints)
	}
	o := s.Endpoints[0]
	if o.Requests != 3 || o.Failed != 1 || o.ExplainRequests != 2 || o.ExplainFailed != 1 {
		t.Errorf("orders counts = %d/%d explain %d/%d, want 3/1 explain 2/1", o.Requests, o.Failed, o.ExplainRequests, o.ExplainFailed)
	}
	if math.Abs(o.SuccessRate-200.0/3) > 1e-9 || o.TPS != 3 {
		t.Errorf("success %v tps %v, want 66.67 and 3", o.SuccessRate, o.TPS)
	}
	// Latency is over the two answered requests: the 503 is counted apart.
	if o.Latency.Count != 2 || o.Latency.Avg != 15 || o.Latency.P50 != 10 || o.Latency.Max != 20 || o.ServiceTime.Avg != 14 {
		t.Errorf("latency %+v service %+v", o.Latency, o.ServiceTime)
	}
	if diff := cmp.Diff(map[string]int64{"2xx": 2, "5xx": 1}, o.Statuses); diff != "" {
		t.Errorf("statuses (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]FailureCount{{Status: 503, Count: 1}}, o.Failures); diff != "" {
		t.Errorf("failures (-want +got):\n%s", diff)
	}
	// SQL: the explain phase is the preferred source; the load phase gives database time.
	if o.SQL.Source != SQLSourceExplain || o.SQL.Requests != 2 || o.SQL.PerRequest != 3 {
		t.Errorf("sql = %+v, want explain, 2 requests, 3 per request", o.SQL)
	}
	wantB := FingerprintStats{Fingerprint: "SELECT b", Count: 4, PerRequest: 2, MinPerRequest: 1, MaxPerRequest: 3, DBTimePerRequest: 2, PerCall: 1}
	if diff := cmp.Diff(&wantB, o.SQL.Fingerprint("SELECT b")); diff != "" {
		t.Errorf("explain fingerprint (-want +got):\n%s", diff)
	}
	if o.LoadSQL.Source != SQLSourceLoad || o.LoadSQL.Requests != 3 || math.Abs(o.LoadSQL.PerRequest-5.0/3) > 1e-9 ||
		math.Abs(o.LoadSQL.DBTimePerRequest-14.0/3) > 1e-9 || o.DBTime() != &o.LoadSQL {
		t.Errorf("load sql = %+v", o.LoadSQL)
	}
	if f := o.LoadSQL.Fingerprint("SELECT b"); f == nil || f.MinPerRequest != 0 || f.MaxPerRequest != 2 {
		t.Errorf("load SELECT b = %+v, want min 0 (absent from some requests), max 2", f)
	}
	id := s.Endpoints[1]
	if id.Requests != 3 || id.Failed != 2 || id.SQL.Source != SQLSourceLoad || id.SQL.Requests != 1 || id.SQL.PerRequest != 0 {
		t.Errorf("GET /orders/{id} = %+v", id)
	}
	if diff := cmp.Diff([]FailureCount{{Status: 0, Count: 1}, {Error: "timeout", Count: 1}}, id.Failures); diff != "" {
		t.Errorf("failures (-want +got):\n%s", diff)
	}
	if id.Failures[1].String() != "timeout" || (FailureCount{Status: 503}).String() != "503 Service Unavailable" {
		t.Errorf("failure strings %q", id.Failures[1].String())
	}
	// Overall: six load requests, three failed; SQL weighted by traffic (3 and 3 requests: (3+0)/2).
	if s.Overall.Requests != 6 || s.Overall.Failed != 3 || s.Overall.TPS != 6 {
		t.Errorf("overall = %d/%d tps %v", s.Overall.Requests, s.Overall.Failed, s.Overall.TPS)
	}
	if s.Overall.SQL.PerRequest != 1.5 || s.Overall.SQL.Source != "explain+load" {
		t.Errorf("overall sql = %v from %q, want 1.5 from explain+load", s.Overall.SQL.PerRequest, s.Overall.SQL.Source)
	}
	if s.Sliced || len(s.Slices) != 0 {
		t.Errorf("sliced = %v %v, want not sliced", s.Sliced, s.Slices)
	}
}

func TestSummarizeSlicesAndDuplicates(t *testing.T) {
	var rs []*snapshots.Result
	for i := range 40 {
		at := t0.Add(time.Duration(i) * time.Millisecond)
		rs = append(rs, &snapshots.Result{Phase: snapshots.PhaseLoad, Slice: 2*(i/10) + 1, Endpoint: "GET /a", Intended: at, Sent: at,
			Done: at.Add(time.Millisecond), Status: 200, SQLCounted: true,
			// the same fingerprint twice in one request is counted as one entry
			SQL: []snapshots.SQLCount{{Fingerprint: "SELECT 1", Count: 1}, {Fingerprint: "SELECT 1", Count: 2}}})
	}
	s, err := Summarize(context.Background(), snapshots.RunInfo{}, fromSlice(rs), SummarizeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !s.Sliced || fmt.Sprint(s.Slices) != "[1 3 5 7]" {
		t.Errorf("slices = %v %v, want sliced [1 3 5 7]", s.Sliced, s.Slices)
	}
	f := s.Endpoints[0].SQL.Fingerprint("SELECT 1")
	if f == nil || f.MinPerRequest != 3 || f.MaxPerRequest != 3 || f.PerRequest != 3 {
		t.Errorf("SELECT 1 = %+v, want 3 per request", f)
	}
}

func TestSummarizeErrors(t *testing.T) {
	boom := errors.New("disk on fire")
	bad := func(yield func(*snapshots.Result, error) bool) {
		if yield(&snapshots.Result{Endpoint: "GET /a"}, nil) {
			yield(nil, boom)
		}
	}
	_, err := Summarize(context.Background(), snapshots.RunInfo{Name: "base"}, bad, SummarizeOptions{})
	if !errors.Is(err, boom) || err.Error() != `summarize run "base": disk on fire` {
		t.Errorf("err = %v, want the iterator's error wrapped", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = Summarize(ctx, snapshots.RunInfo{}, synthResults(runSpec{n: 5000, seed: 1}, []epSpec{{name: "GET /a", median: time.Millisecond}}), SummarizeOptions{})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	if _, err := Summarize(context.Background(), snapshots.RunInfo{}, fromSlice(nil), SummarizeOptions{SampleSize: -1}); err == nil {
		t.Error("negative sample size: no error")
	}
	// An empty run is fine.
	s, err := Summarize(context.Background(), snapshots.RunInfo{}, fromSlice(nil), SummarizeOptions{})
	if err != nil || s.Overall.Requests != 0 || len(s.Endpoints) != 0 {
		t.Errorf("empty run: %v %+v", err, s)
	}
}

// TestSummarizeBoundedSample checks that a large run keeps only the sample.
func TestSummarizeBoundedSample(t *testing.T) {
	s := summarize(t, runSpec{n: 30000, seed: 2}, []epSpec{{name: "GET /a", median: 3 * time.Millisecond}})
	e := s.Endpoints[0]
	if e.Requests != 30000 || len(e.sample.items) != DefaultSampleSize || e.sample.seen != 30000 {
		t.Errorf("requests %d, sample %d of %d; want 30000, %d of 30000", e.Requests, len(e.sample.items), e.sample.seen, DefaultSampleSize)
	}
}

var _ iter.Seq2[*snapshots.Result, error] = fromSlice(nil)
