package analyzer

import (
	"slices"
	"testing"
)

// TestSetAsideFigures: with slice pairs set aside, every endpoint's p95 and
// p99, judged or too rare to judge, are those of the requests of the pairs
// kept, marked so (Change.WithoutSetAside): the figures its verdict and
// explanation rest on. Each side's own figures (Latency) keep every slice.
func TestSetAsideFigures(t *testing.T) {
	spec := func(name string, seed uint64) runSpec {
		return runSpec{name: name, n: 4000, slices: 40, drift: 0.15, driftSeed: seed, jitter: 0.05,
			seed: seed*1000 + uint64(len(name)), bursts: 0.06}
	}
	eps := []epSpec{{name: "GET /orders", median: 45 * ms, sigma: 0.35, weight: 400}, {name: "GET /rare", median: 5 * ms, weight: 2}}
	var c *Comparison
	for seed := range uint64(20) {
		if c = mustCompare(t, summarize(t, spec("baseline", seed), eps), summarize(t, spec("candidate", seed), eps), CompareOptions{}); len(c.SetAside) > 0 {
			break
		}
	}
	if len(c.SetAside) == 0 {
		t.Fatal("no seed had a pair set aside")
	}
	// The pairs kept, by rank of each run's slices.
	drop := map[int]bool{}
	for _, a := range c.SetAside {
		drop[a.Pair-1] = true
	}
	kept := func(s *Summary, name string) []int64 {
		rank := map[int32]int{}
		for i, sl := range s.Slices {
			rank[int32(sl)] = min(i, c.SlicePairs-1)
		}
		var v []int64
		for _, it := range s.Endpoint(name).sample.items {
			if !drop[rank[it.slice]] {
				v = append(v, it.lat)
			}
		}
		slices.Sort(v)
		return v
	}
	for _, e := range c.Endpoints {
		b, k := kept(c.Baseline, e.Endpoint), kept(c.Candidate, e.Endpoint)
		for _, x := range []struct {
			name string
			ch   Change
			q    float64
		}{{"p95", e.P95, 0.95}, {"p99", e.P99, 0.99}} {
			want := [2]float64{usToMs(quantile(b, x.q)), usToMs(quantile(k, x.q))}
			if got := [2]float64{x.ch.Baseline, x.ch.Candidate}; got != want || !x.ch.WithoutSetAside {
				t.Errorf("%s %s: %v (without set aside %v), want %v over the %d pairs kept",
					e.Endpoint, x.name, got, x.ch.WithoutSetAside, want, c.SlicePairs-len(c.SetAside))
			}
		}
	}
	if e := c.Endpoint("GET /rare"); e.P95.Verdict != "" {
		t.Errorf("GET /rare judged (%s): the test wants an endpoint too rare to judge", e.P95.Verdict)
	}
}
