package analyzer

import (
	"math"
	"strings"
	"testing"
)

// powerEndpoints are four endpoints of equal share.
var powerEndpoints = []epSpec{{name: "GET /a", median: 4e6}, {name: "GET /b", median: 6e6}, {name: "GET /c", median: 3e6}, {name: "GET /d", median: 5e6}}

// powerSpec is a run of n requests in slices on a machine whose slices
// vary by a third on their own.
func powerSpec(name string, seed uint64, n, slices int) runSpec {
	return runSpec{name: name, n: n, slices: slices, jitter: 0.3, seed: seed*100 + uint64(len(name)), driftSeed: seed}
}

// TestLongerRunSettles: when most endpoints of an A/A comparison on a
// noisy machine are inconclusive, the comparison says how much longer a
// run would settle half of them — and a run that much longer (more slices
// of the same noise) does settle at least half in most seeds.
func TestLongerRunSettles(t *testing.T) {
	tried, settled := 0, 0
	for seed := range uint64(10) { // deterministic and cheap: every seed, also in -short mode
		base := summarize(t, powerSpec("baseline", seed, 2000, 10), powerEndpoints)
		cand := summarize(t, powerSpec("candidate", seed, 2000, 10), powerEndpoints)
		c := mustCompare(t, base, cand, CompareOptions{})
		l := c.Longer
		if c.Counts[Inconclusive]*2 <= len(c.Endpoints) {
			if l != nil {
				t.Fatalf("seed %d: Longer %+v with %d of %d inconclusive", seed, l, c.Counts[Inconclusive], len(c.Endpoints))
			}
			continue
		}
		if l == nil || l.Half < 1 || l.All < l.Half || l.Inconclusive != c.Counts[Inconclusive] {
			t.Fatalf("seed %d: Longer %+v; want an estimate for %d inconclusive", seed, l, c.Counts[Inconclusive])
		}
		if !strings.Contains(strings.Join(c.Notes, "\n"), "could not tell at this noise level") {
			t.Fatalf("seed %d: notes %q lack the estimate", seed, c.Notes)
		}
		if math.IsInf(l.Half, 1) {
			continue
		}
		tried++
		k := int(math.Ceil(l.Half))
		base = summarize(t, powerSpec("baseline", seed+1000, 2000*k, 10*k), powerEndpoints)
		cand = summarize(t, powerSpec("candidate", seed+1000, 2000*k, 10*k), powerEndpoints)
		longer := mustCompare(t, base, cand, CompareOptions{})
		if 2*longer.Counts[Inconclusive] <= c.Counts[Inconclusive] {
			settled++
		}
		t.Logf("seed %d: %d of %d inconclusive; %d× longer: %d inconclusive", seed, c.Counts[Inconclusive], len(c.Endpoints), k, longer.Counts[Inconclusive])
	}
	if tried == 0 || settled*3 < tried*2 {
		t.Errorf("a run as long as suggested settled half the endpoints in %d of %d seeds; want at least two thirds", settled, tried)
	}
}

// TestLongerRunQuiet: a comparison whose endpoints were judged suggests
// nothing.
func TestLongerRunQuiet(t *testing.T) {
	base := summarize(t, runSpec{name: "baseline", n: 4000, slices: 10, seed: 1}, powerEndpoints)
	cand := summarize(t, runSpec{name: "candidate", n: 4000, slices: 10, seed: 2}, powerEndpoints)
	if c := mustCompare(t, base, cand, CompareOptions{}); c.Longer != nil || c.Counts[Inconclusive]*2 > len(c.Endpoints) {
		t.Fatalf("quiet A/A: %v inconclusive, Longer %+v; want most judged and no estimate", c.Counts, c.Longer)
	}
}
