package analyzer

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/replaykit/replay/snapshots"
)

const ms = time.Millisecond

var (
	listSQL  = snapshots.SQLCount{Fingerprint: "SELECT id, customer, status, created_at FROM orders ORDER BY id DESC LIMIT ?", Count: 1, Duration: 800 * time.Microsecond}
	itemsFP  = "SELECT id, sku, qty, price_cents FROM order_items WHERE order_id = ?"
	statusFP = snapshots.SQLCount{Fingerprint: "SELECT status FROM orders WHERE id = ?", Count: 1, Duration: 300 * time.Microsecond}
)

// demoEndpoints are endpoints like the demo's: p95 of a few milliseconds,
// SQL counted, and one slow endpoint with a wide distribution.
func demoEndpoints() []epSpec {
	return []epSpec{
		{name: "GET /orders", median: 3 * ms, weight: 3, sql: []snapshots.SQLCount{listSQL}},
		{name: "GET /orders/{id}/status", median: 2 * ms, weight: 3, sql: []snapshots.SQLCount{statusFP}},
		{name: "GET /report", median: 60 * ms, sigma: 0.5, weight: 1, sql: []snapshots.SQLCount{}},
	}
}

// noisy is an interleaved run on a noisy machine: 20 slices, a machine
// factor per slice shared by both sides (sigma 25%), a factor per slice of
// each side alone (sigma 10%) and 2% of requests paused 0–30 ms.
func noisy(name string, seed uint64) runSpec {
	return runSpec{name: name, n: 6000, slices: 20, drift: 0.25, driftSeed: seed, jitter: 0.10, outliers: 0.02, explain: 3, seed: seed*100 + uint64(len(name))}
}

// seeds is how many seeds a many-seed test runs: n, or fewer in -short
// mode and under the race detector.
func seeds(t *testing.T, n int) int {
	switch {
	case testing.Short():
		return max(n/5, 2)
	case raceEnabled:
		return max(n/3, 2)
	}
	return n
}

func mustCompare(t testing.TB, base, cand *Summary, o CompareOptions) *Comparison {
	t.Helper()
	c, err := Compare(base, cand, o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestCompareAANoRegression: the same build on both sides, on a noisy
// machine, never gives a regression.
func TestCompareAANoRegression(t *testing.T) {
	for _, mode := range []string{"interleaved", "sequential"} {
		t.Run(mode, func(t *testing.T) {
			regressions, improvements, inconclusive, total := 0, 0, 0, 0
			n := seeds(t, 30)
			if mode == "sequential" {
				n = seeds(t, 20)
			}
			for seed := range uint64(n) {
				bs, cs := noisy("baseline", seed), noisy("candidate", seed)
				if mode == "sequential" {
					// two separate runs: no slices, each on a machine up to ±5% faster or slower
					r := rand.New(rand.NewPCG(seed, 99))
					bs.slices, cs.slices = 0, 0
					bs.global, cs.global = 0.95+0.1*r.Float64(), 0.95+0.1*r.Float64()
				}
				c := mustCompare(t, summarize(t, bs, demoEndpoints()), summarize(t, cs, demoEndpoints()), CompareOptions{})
				for _, e := range c.Endpoints {
					total++
					switch e.Verdict {
					case Regression:
						regressions++
						t.Errorf("seed %d: %s: regression: %s", seed, e.Endpoint, e.Explanation)
					case Improvement:
						improvements++
						t.Logf("seed %d: %s: improvement: %s", seed, e.Endpoint, e.Explanation)
					case Inconclusive:
						inconclusive++
					}
				}
				if c.Verdict == Regression {
					t.Errorf("seed %d: overall regression", seed)
				}
			}
			t.Logf("%s A/A: %d endpoint comparisons: %d regressions, %d improvements, %d inconclusive", mode, total, regressions, improvements, inconclusive)
			if improvements > total/50 {
				t.Errorf("%d false improvements in %d comparisons", improvements, total)
			}
		})
	}
}

// TestCompareDetectsDelay: 50 ms added to one endpoint whose p95 is a few
// milliseconds is a regression on that endpoint only, explained as latency
// not from the database.
func TestCompareDetectsDelay(t *testing.T) {
	for _, mode := range []string{"interleaved", "sequential", "small"} {
		t.Run(mode, func(t *testing.T) {
			for seed := range uint64(seeds(t, 10)) {
				bs, cs := noisy("baseline", seed), noisy("candidate", seed)
				switch mode {
				case "sequential":
					bs.slices, cs.slices = 0, 0
				case "small": // 60 requests per endpoint and side
					bs.n, cs.n = 180, 180
					bs.slices, cs.slices = 10, 10
				}
				eps := demoEndpoints()
				eps[2].weight = 3
				slow := demoEndpoints()
				slow[2].weight = 3
				slow[1].extra = 50 * ms
				c := mustCompare(t, summarize(t, bs, eps), summarize(t, cs, slow), CompareOptions{})
				if c.Verdict != Regression {
					t.Errorf("seed %d: overall %s, want regression", seed, c.Verdict)
				}
				for _, e := range c.Endpoints {
					if e.Endpoint == "GET /orders/{id}/status" {
						if e.Verdict != Regression || e.Cause != CauseApp ||
							!strings.HasSuffix(e.Explanation, "with no change in SQL statements or database time: the slowdown is in the app") ||
							!strings.HasPrefix(e.Explanation, "p95 rose ") {
							t.Errorf("seed %d: %s: %s (%s): %s", seed, e.Endpoint, e.Verdict, e.Cause, e.Explanation)
						}
						if e.P95.CILow < 1.3 || !e.P95.Disjoint {
							t.Errorf("seed %d: CI low %v, disjoint %v: want a clear shift", seed, e.P95.CILow, e.P95.Disjoint)
						}
					} else if e.Verdict == Regression {
						t.Errorf("seed %d: %s: regression: %s", seed, e.Endpoint, e.Explanation)
					}
				}
			}
		})
	}
}

func TestCompareTooFewSamples(t *testing.T) {
	eps := []epSpec{{name: "GET /orders", median: 3 * ms, sql: []snapshots.SQLCount{listSQL}}}
	slow := []epSpec{{name: "GET /orders", median: 3 * ms, extra: 50 * ms, sql: []snapshots.SQLCount{listSQL}}}
	c := mustCompare(t, summarize(t, runSpec{n: 10, seed: 1}, eps), summarize(t, runSpec{n: 29, seed: 2}, slow), CompareOptions{})
	e := c.Endpoints[0]
	want := "too few requests to judge latency: 10 in the baseline and 29 in the candidate (need 30 on each side); SQL statements per request unchanged (1 → 1)"
	if e.Verdict != Inconclusive || e.Cause != CauseSamples || e.Explanation != want {
		t.Errorf("got %s (%s) %q\nwant inconclusive %q", e.Verdict, e.Cause, e.Explanation, want)
	}
	if c.Verdict != Inconclusive {
		t.Errorf("overall %s, want inconclusive (nothing conclusive)", c.Verdict)
	}
}

func TestCompareOverallVerdict(t *testing.T) {
	spec := func(name string) runSpec { return runSpec{name: name, n: 3000, slices: 10, seed: uint64(len(name))} }
	a := epSpec{name: "GET /a", median: 10 * ms, sigma: 0.1, weight: 200}
	b := epSpec{name: "GET /b", median: 10 * ms, sigma: 0.1, weight: 200}
	rare := epSpec{name: "GET /rare", median: 10 * ms, sigma: 0.1}
	faster := a
	faster.median = 2 * ms
	slower := b
	slower.extra = 20 * ms
	tests := []struct {
		name       string
		base, cand []epSpec
		want       Verdict
		counts     map[Verdict]int
	}{
		{"unchanged with one inconclusive", []epSpec{a, b, rare}, []epSpec{a, b, rare}, Unchanged, map[Verdict]int{Unchanged: 2, Inconclusive: 1}},
		{"improvement", []epSpec{a, b}, []epSpec{faster, b}, Improvement, map[Verdict]int{Improvement: 1, Unchanged: 1}},
		{"regression wins over improvement", []epSpec{a, b}, []epSpec{faster, slower}, Regression, map[Verdict]int{Improvement: 1, Regression: 1}},
		{"only inconclusive", []epSpec{rare}, []epSpec{rare}, Inconclusive, map[Verdict]int{Inconclusive: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base, cand := spec("base"), spec("cand")
			if len(tt.base) == 1 {
				base.n, cand.n = 20, 20
			}
			c := mustCompare(t, summarize(t, base, tt.base), summarize(t, cand, tt.cand), CompareOptions{})
			if c.Verdict != tt.want || fmt.Sprint(c.Counts) != fmt.Sprint(tt.counts) {
				t.Errorf("verdict %s counts %v, want %s %v", c.Verdict, c.Counts, tt.want, tt.counts)
			}
			// regressions first, unchanged last
			for i := 1; i < len(c.Endpoints); i++ {
				if c.Endpoints[i-1].Verdict.severity() > c.Endpoints[i].Verdict.severity() {
					t.Errorf("endpoints out of order: %s before %s", c.Endpoints[i-1].Verdict, c.Endpoints[i].Verdict)
				}
			}
		})
	}
}

func TestCompareOneSided(t *testing.T) {
	a := epSpec{name: "GET /a", median: 3 * ms}
	b := epSpec{name: "GET /new", median: 3 * ms}
	c := mustCompare(t, summarize(t, runSpec{n: 200, seed: 1}, []epSpec{a}), summarize(t, runSpec{n: 200, seed: 2}, []epSpec{a, b}), CompareOptions{})
	e := c.Endpoint("GET /new")
	if e == nil || e.Verdict != Inconclusive || e.Cause != CauseOneSided || !strings.HasPrefix(e.Explanation, "only in the candidate run (") ||
		e.Baseline == nil || e.Baseline.Requests != 0 {
		t.Errorf("GET /new = %+v", e)
	}
	c = mustCompare(t, summarize(t, runSpec{n: 200, seed: 2}, []epSpec{a, b}), summarize(t, runSpec{n: 200, seed: 1}, []epSpec{a}), CompareOptions{})
	if e := c.Endpoint("GET /new"); e == nil || !strings.HasPrefix(e.Explanation, "missing from the candidate run (the baseline had ") {
		t.Errorf("GET /new = %+v", e)
	}
}

func TestCompareOptions(t *testing.T) {
	s := summarize(t, runSpec{n: 100, seed: 1}, []epSpec{{name: "GET /a", median: ms}})
	for _, o := range []CompareOptions{{Confidence: 1}, {Confidence: -0.5}, {Resamples: 10}, {MinSamples: 1}, {MinChange: -1}, {MinRelative: -1}, {MinBlocks: 1}, {NPlusOneMin: -1}} {
		if _, err := Compare(s, s, o); err == nil || !strings.HasPrefix(err.Error(), "compare: ") {
			t.Errorf("%+v: err = %v, want an error", o, err)
		}
	}
	if _, err := Compare(nil, s, CompareOptions{}); err == nil {
		t.Error("nil summary: no error")
	}
	c := mustCompare(t, s, s, CompareOptions{})
	if c.Options.Confidence != 0.99 || c.Options.Resamples != 2000 || c.Options.MinChange != 5*ms || c.Options.MinRelative != 0.1 {
		t.Errorf("defaults = %+v", c.Options)
	}
}

// TestCompareDeterministic: the same inputs give the same intervals.
func TestCompareDeterministic(t *testing.T) {
	b := summarize(t, noisy("baseline", 1), demoEndpoints())
	k := summarize(t, noisy("candidate", 1), demoEndpoints())
	c1, c2 := mustCompare(t, b, k, CompareOptions{}), mustCompare(t, b, k, CompareOptions{})
	for i := range c1.Endpoints {
		if c1.Endpoints[i].P95 != c2.Endpoints[i].P95 || c1.Endpoints[i].Explanation != c2.Endpoints[i].Explanation {
			t.Errorf("%s: %+v != %+v", c1.Endpoints[i].Endpoint, c1.Endpoints[i].P95, c2.Endpoints[i].P95)
		}
	}
	if c1.Method != MethodPairedSlices || c1.SlicePairs != 20 {
		t.Errorf("method %s with %d pairs, want paired-slices with 20", c1.Method, c1.SlicePairs)
	}
}

func TestSlicePairs(t *testing.T) {
	a := &Summary{Sliced: true, Slices: []int{1, 3, 5, 7, 9, 11, 13, 15, 17}}
	b := &Summary{Sliced: true, Slices: []int{2, 4, 6, 8, 10, 12, 14, 16}}
	pa, pb, n := slicePairs(a, b, 8)
	if n != 8 || pa[1] != 0 || pb[2] != 0 || pa[15] != 7 || pa[17] != 7 || pb[16] != 7 {
		t.Errorf("pairs %d: %v %v", n, pa, pb)
	}
	if _, _, n := slicePairs(a, b, 9); n != 0 {
		t.Errorf("fewer pairs than minBlocks: %d pairs, want 0", n)
	}
	if _, _, n := slicePairs(a, &Summary{}, 2); n != 0 {
		t.Errorf("unsliced side: %d pairs, want 0", n)
	}
}
