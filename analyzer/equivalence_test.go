package analyzer

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/replaykit/replay/snapshots"
)

// TestLatencyVerdictEquivalence: unchanged only when the whole interval
// lies inside the minimum change; a straddling interval is inconclusive
// with its smallest detectable change.
func TestLatencyVerdictEquivalence(t *testing.T) {
	// p95 of 80 ms: 10% is 8 ms, more than 5 ms, so the bounds are ×1/1.1 and ×1.1.
	cases := []struct {
		name           string
		base, cand     float64
		low, high      float64
		disjoint       bool
		minAbs, minRel float64
		want           Verdict
		wantMDC        float64
	}{
		{"straddles the minimum", 74.9, 80.0, 0.95, 1.22, false, 5, 0.10, Inconclusive, math.Sqrt(1.22 / 0.95)},
		{"straddles, below", 101.4, 101.0, 0.85, 1.05, false, 5, 0.10, Inconclusive, math.Sqrt(1.05 / 0.85)},
		{"inside", 80, 81, 0.97, 1.05, false, 5, 0.10, Unchanged, 1.1},
		{"inside, sure of a small change", 80, 84, 1.02, 1.08, true, 5, 0.10, Unchanged, 1.1},
		{"outside, up", 80, 100, 1.15, 1.35, true, 5, 0.10, Regression, 1.1},
		{"outside, down", 100, 80, 0.72, 0.87, true, 5, 0.10, Improvement, 1.1},
		{"beyond minimum, not the noise", 80, 96, 0.98, 1.45, false, 5, 0.10, Inconclusive, math.Sqrt(1.45 / 0.98)},
		// 3 ms p95: 5 ms is ×2.67, so the absolute minimum bounds the interval.
		{"small p95, absolute bound", 3, 3.3, 0.8, 1.9, false, 5, 0.10, Unchanged, 1 + 5.0/3},
		{"small p95, beyond absolute bound", 3, 3.3, 0.8, 2.9, false, 5, 0.10, Inconclusive, 1 + 5.0/3},
		// the same interval, judged with a 30% minimum, is inside
		{"wider min change", 74.9, 80.0, 0.95, 1.22, false, 5, 0.30, Unchanged, 1.3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ch := Change{Baseline: tc.base, Candidate: tc.cand, Delta: tc.cand - tc.base, Ratio: tc.cand / tc.base,
				CILow: tc.low, CIHigh: tc.high, Disjoint: tc.disjoint}
			if got := latencyVerdict(ch, tc.minAbs, tc.minRel, true); got != tc.want {
				t.Errorf("verdict %s, want %s", got, tc.want)
			}
			if got := minDetectable(ch, tc.minAbs, tc.minRel); math.Abs(got-tc.wantMDC) > 1e-9 {
				t.Errorf("min detectable ×%v, want ×%v", got, tc.wantMDC)
			}
		})
	}
}

// TestInconclusiveSentence: the explanation names the interval and the
// smallest change the run could detect.
func TestInconclusiveSentence(t *testing.T) {
	o, _ := CompareOptions{}.withDefaults()
	c := &Comparison{Options: o}
	ch := Change{Baseline: 74.9, Candidate: 80, Delta: 5.1, Ratio: 80 / 74.9, CILow: 0.95, CIHigh: 1.22, Method: MethodPairedSlices}
	ch.MinDetectable = minDetectable(ch, 5, 0.10)
	got := inconclusiveSentence(c, ch, "p95")
	want := "p95 rose 74.9 ms → 80 ms (+5.1 ms, CI ×0.95–×1.22): the interval allows a change of 10% and 5 ms or more; this run could detect a change of 13% (10 ms) or more"
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestParseMinChange(t *testing.T) {
	for _, tc := range []struct {
		in      string
		rel     float64
		abs     time.Duration
		wantErr string
	}{
		{"10%,5ms", 0.10, 5 * ms, ""},
		{"5ms, 20%", 0.20, 5 * ms, ""},
		{"2.5%", 0.025, 0, ""},
		{"1s", 0, time.Second, ""},
		{"", 0, 0, "want a percentage and a duration"},
		{"10", 0, 0, "neither a percentage"},
		{"-5%", 0, 0, "not one percentage"},
		{"10%,20%", 0, 0, "not one percentage"},
		{"5ms,1ms", 0, 0, "one positive duration"},
		{"1%,2%,3ms", 0, 0, "want a percentage"},
	} {
		o, err := ParseMinChange(tc.in)
		switch {
		case tc.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%q: error %v, want %q", tc.in, err, tc.wantErr)
			}
		case err != nil:
			t.Errorf("%q: %v", tc.in, err)
		case o.MinRelative != tc.rel || o.MinChange != tc.abs:
			t.Errorf("%q: %v and %v, want %v and %v", tc.in, o.MinRelative, o.MinChange, tc.rel, tc.abs)
		}
	}
	for _, c := range []float64{0.4, 1, 95} {
		if ParseConfidence(c) == nil {
			t.Errorf("confidence %v accepted", c)
		}
	}
	if err := ParseConfidence(0.95); err != nil {
		t.Error(err)
	}
}

// oneEndpoint is a 10 s interleaved run of one endpoint with a p95 of
// 60–100 ms on a noisy machine: 12 slices, a shared machine factor per
// slice (sigma 15%), one per slice and side (5%), 2% of requests paused.
func oneEndpoint(name string, seed uint64, extra float64) (runSpec, []epSpec) {
	spec := runSpec{name: name, n: 1000, slices: 12, drift: 0.15, driftSeed: seed, jitter: 0.05, outliers: 0.02,
		seed: seed*1000 + uint64(len(name))}
	ep := epSpec{name: "GET /orders", median: 45 * ms, sigma: 0.35}
	if extra != 0 {
		spec.global = extra
	}
	return spec, []epSpec{ep}
}

// TestEquivalenceAA: the same distribution on both sides gives a regression
// in at most 1 − confidence of the comparisons, at 95% and at 99%; and a
// real 20% slowdown is never called unchanged.
func TestEquivalenceAA(t *testing.T) {
	n := seeds(t, 500)
	for _, conf := range []float64{0.95, 0.99} {
		counts := map[Verdict]int{}
		for seed := range uint64(n) {
			bs, eps := oneEndpoint("baseline", seed, 0)
			cs, _ := oneEndpoint("candidate", seed, 0)
			c := mustCompare(t, summarize(t, bs, eps), summarize(t, cs, eps), CompareOptions{Confidence: conf, Resamples: 500})
			counts[c.Endpoints[0].P95.Verdict]++
		}
		t.Logf("A/A at %v: %d pairs: %v", conf, n, counts)
		if max(counts[Regression], counts[Improvement]) > int(math.Ceil((1-conf)*float64(n))) {
			t.Errorf("A/A at %v: %v in %d pairs: more false alarms than 1 − confidence", conf, counts, n)
		}
	}
	counts := map[Verdict]int{}
	for seed := range uint64(seeds(t, 100)) {
		bs, eps := oneEndpoint("baseline", seed, 0)
		cs, _ := oneEndpoint("candidate", seed, 1.2)
		c := mustCompare(t, summarize(t, bs, eps), summarize(t, cs, eps), CompareOptions{Confidence: 0.95, Resamples: 500})
		e := c.Endpoints[0]
		counts[e.P95.Verdict]++
		if e.P95.Verdict == Unchanged || e.Verdict == Unchanged {
			t.Errorf("seed %d: 20%% slower called unchanged: %s", seed, e.Explanation)
		}
	}
	t.Logf("+20%%: %v", counts)
}

// TestSequentialLooksKeepFalseAlarmRate: a comparison that looks three
// times (after 10, 20 and 30 slice pairs) at levels spent with LookLevel
// calls a change in A/A data in at most α of the trials, where looking
// three times at the full α each would not be bound by it. The minimum
// changes are switched off, so the intervals alone decide.
func TestSequentialLooksKeepFalseAlarmRate(t *testing.T) {
	const alpha = 0.10
	n := seeds(t, 300)
	spent, naive := 0, 0
	for seed := range uint64(n) {
		spec := func(name string) runSpec {
			return runSpec{name: name, n: 1500, slices: 30, drift: 0.15, driftSeed: seed, jitter: 0.05, outliers: 0.02,
				seed: seed*1000 + uint64(len(name))}
		}
		eps := []epSpec{{name: "GET /orders", median: 45 * ms, sigma: 0.35}}
		base, cand := collect(synthResults(spec("baseline"), eps)), collect(synthResults(spec("candidate"), eps))
		alarm := map[bool]bool{}
		prev := 0.0
		for look := 1; look <= 3; look++ {
			upTo := func(rs []*snapshots.Result, name string) *Summary {
				var kept []*snapshots.Result
				for _, r := range rs {
					if r.Slice <= 10*look {
						kept = append(kept, r)
					}
				}
				s, err := Summarize(context.Background(), spec(name).info(), fromSlice(kept), SummarizeOptions{})
				if err != nil {
					t.Fatal(err)
				}
				return s
			}
			b, c := upTo(base, "baseline"), upTo(cand, "candidate")
			level := LookLevel(alpha, prev, float64(look)/3)
			prev = float64(look) / 3
			for _, spend := range []bool{true, false} {
				conf := 1 - alpha
				if spend {
					conf = 1 - level
				}
				o := CompareOptions{Confidence: conf, Resamples: LookResamples(level, 500), MinChange: 1, MinRelative: 1e-9}
				v := mustCompare(t, b, c, o).Endpoints[0].P95.Verdict
				if v == Regression || v == Improvement {
					alarm[spend] = true
				}
			}
		}
		if alarm[true] {
			spent++
		}
		if alarm[false] {
			naive++
		}
	}
	// The bound, with room for the binomial noise of n trials (3 sigma).
	bound := alpha*float64(n) + 3*math.Sqrt(alpha*(1-alpha)*float64(n))
	t.Logf("A/A, 3 looks, α %v, %d trials: %d false alarms with spent levels (bound %.0f), %d looking at the full α each time",
		alpha, n, spent, bound, naive)
	if float64(spent) > bound {
		t.Errorf("%d false alarms in %d trials with spent levels: more than α = %v allows (%.0f)", spent, n, alpha, bound)
	}
	if spent > naive {
		t.Errorf("spending the level gave more false alarms (%d) than not (%d)", spent, naive)
	}
}

// TestBurstsSetAside: bursts of load that hit a few slices of either side
// (×8 to ×30) are set aside, so that a 20% slowdown is still found and an
// A/A comparison raises no alarm; bursts on the candidate's slices alone,
// which may be the build's own stalls, are not set aside.
func TestBurstsSetAside(t *testing.T) {
	spec := func(name string, seed uint64, global float64) runSpec {
		return runSpec{name: name, n: 4000, slices: 40, drift: 0.15, driftSeed: seed, jitter: 0.05, outliers: 0.01,
			seed: seed*1000 + uint64(len(name)), bursts: 0.06, global: global}
	}
	eps := []epSpec{{name: "GET /orders", median: 45 * ms, sigma: 0.35}, {name: "GET /catalog", median: 5 * ms, sigma: 0.3}}
	n := seeds(t, 60)
	counts := map[string]map[Verdict]int{"A/A": {}, "+20%": {}}
	aside := 0
	for seed := range uint64(n) {
		base := summarize(t, spec("baseline", seed, 0), eps)
		for _, tc := range []struct {
			name   string
			global float64
		}{{"A/A", 0}, {"+20%", 1.2}} {
			c := mustCompare(t, base, summarize(t, spec("candidate", seed, tc.global), eps), CompareOptions{})
			e := c.Endpoint("GET /orders")
			counts[tc.name][e.P95.Verdict]++
			aside += len(c.SetAside)
			if tc.name == "A/A" && (c.Verdict == Regression || c.Verdict == Improvement) {
				t.Errorf("seed %d: A/A %s: %s", seed, c.Verdict, e.Explanation)
			}
			if tc.name == "+20%" && e.P95.Verdict == Unchanged {
				t.Errorf("seed %d: +20%% called unchanged: %s", seed, e.Explanation)
			}
		}
	}
	t.Logf("%d seeds, bursts in 6%% of slices: %v; %d pairs set aside", n, counts, aside)
	if aside == 0 {
		t.Error("no pair was set aside")
	}
	if found := counts["+20%"][Regression]; found < n*8/10 {
		t.Errorf("+20%%: %d regressions in %d; want at least 80%%", found, n)
	}
	// Bursts on the candidate only: kept, the interval widens instead.
	b := spec("baseline", 1, 0)
	b.bursts = 0
	c := mustCompare(t, summarize(t, b, eps), summarize(t, spec("candidate", 1, 0), eps), CompareOptions{})
	k := spec("candidate", 1, 0)
	k.bursts = 0.15
	c = mustCompare(t, summarize(t, b, eps), summarize(t, k, eps), CompareOptions{})
	if len(c.SetAside) != 0 {
		t.Errorf("candidate-only bursts set aside: %+v", c.SetAside)
	}
}

// TestHeavyBurstsAA: when bursts disturb more slice pairs than may be set
// aside (a quarter of each side's slices, as beside a dozen bursty CPU
// spinners on two cores), setting aside the worst fifth would keep one
// side's milder bursts and drop the other's: none is set aside, and an A/A
// comparison raises no alarm.
func TestHeavyBurstsAA(t *testing.T) {
	eps := []epSpec{{name: "GET /orders", median: 16 * ms, sigma: 0.35}, {name: "GET /catalog", median: 5 * ms, sigma: 0.3}}
	for seed := range uint64(seeds(t, 40)) {
		spec := func(name string) runSpec {
			return runSpec{name: name, n: 4000, slices: 20, drift: 0.15, driftSeed: seed, jitter: 0.05, outliers: 0.01,
				seed: seed*1000 + uint64(len(name)), bursts: 0.25}
		}
		c := mustCompare(t, summarize(t, spec("baseline"), eps), summarize(t, spec("candidate"), eps), CompareOptions{})
		if c.Verdict == Regression || c.Verdict == Improvement {
			t.Errorf("seed %d: A/A %s with %d pairs set aside: %s", seed, c.Verdict, len(c.SetAside), c.Endpoint("GET /orders").Explanation)
		}
	}
}

// TestStudentT checks the t quantiles smallSampleWiden uses against
// tables, and the widening it gives.
func TestStudentT(t *testing.T) {
	z99, z95 := math.Sqrt2*math.Erfinv(0.99), math.Sqrt2*math.Erfinv(0.95)
	for _, tc := range []struct{ z, nu, want float64 }{
		{z99, 7, 3.499}, {z99, 9, 3.250}, {z99, 19, 2.861}, {z99, 39, 2.708}, {z95, 7, 2.365}, {z95, 19, 2.093},
	} {
		if got := studentT(tc.z, tc.nu); math.Abs(got-tc.want)/tc.want > 0.005 {
			t.Errorf("t(%v, %v) = %.4f, want %.3f", tc.z, tc.nu, got, tc.want)
		}
	}
	lo, hi := smallSampleWiden(0.8, 1.25, 10, 0.99)
	if f := math.Log(hi) / math.Log(1.25); math.Abs(f-1.33) > 0.02 || math.Abs(lo*hi-1) > 1e-9 {
		t.Errorf("10 pairs: [0.8, 1.25] widened to [%v, %v] (×%.3f); want ×1.33 around 1", lo, hi, f)
	}
}
