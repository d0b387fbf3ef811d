package analyzer

import (
	"context"
	"math"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/replaykit/replay/snapshots"
)

// cpuRun summarizes a synthetic run whose build spent perReq µs of CPU per
// request, each slice's figure moved by a machine factor shared with the
// other side (drift, from driftSeed) and one of its own (jitter).
func cpuRun(t *testing.T, spec runSpec, eps []epSpec, perReq, drift, jitter float64, driftSeed uint64) *Summary {
	t.Helper()
	info := spec.info()
	if perReq > 0 {
		rng := rand.New(rand.NewPCG(spec.seed, 99))
		drng := rand.New(rand.NewPCG(driftSeed, 98))
		n := max(spec.slices, 1)
		per := int64(spec.n / n)
		info.BuildCPU = &snapshots.BuildCPU{}
		for i := range n {
			f := math.Exp(drng.NormFloat64()*drift) * math.Exp(rng.NormFloat64()*jitter)
			slice := i + 1
			if spec.slices == 0 {
				slice = 0
			}
			cpu := time.Duration(float64(per) * perReq * f * float64(time.Microsecond))
			info.BuildCPU.Slices = append(info.BuildCPU.Slices, snapshots.SliceCPU{Slice: slice, CPU: cpu, Wall: time.Second})
		}
	}
	s, err := Summarize(context.Background(), info, synthResults(spec, eps), SummarizeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var cpuSentenceRe = regexp.MustCompile(`^the candidate spends [0-9]+% more CPU per request \([0-9]+ µs → [0-9]+ µs, CI ×1\.[0-9]+–×1\.[0-9]+\)`)

var cpuEndpoints = []epSpec{{name: "GET /orders", median: 4 * time.Millisecond}, {name: "GET /catalog", median: 6 * time.Millisecond}}

// TestCompareCPURegression: a candidate that spends 15% more CPU per
// request, on a machine whose slices vary by 5%, is a CPU regression and so
// an overall one, though its latency is the baseline's; the sentence says
// so in words.
func TestCompareCPURegression(t *testing.T) {
	for seed := range uint64(seeds(t, 10)) {
		base := cpuRun(t, runSpec{name: "baseline", n: 2000, slices: 10, seed: seed, jitter: 0.4, driftSeed: seed}, cpuEndpoints, 300, 0.1, 0.05, seed)
		cand := cpuRun(t, runSpec{name: "candidate", n: 2000, slices: 10, seed: seed + 100, jitter: 0.4, driftSeed: seed}, cpuEndpoints, 345, 0.1, 0.05, seed)
		c := mustCompare(t, base, cand, CompareOptions{})
		ch := c.CPU
		if !ch.Measured || ch.Verdict != Regression || c.Verdict != Regression {
			t.Fatalf("seed %d: CPU %+v, overall %s; want a CPU regression, overall regression", seed, ch, c.Verdict)
		}
		if ch.Ratio < 1.05 || ch.Ratio > 1.3 || ch.CILow <= 1 || ch.CIHigh < ch.Ratio || ch.Pairs != 10 {
			t.Fatalf("seed %d: CPU ratio %.3f, CI %.3f–%.3f over %d pairs; want about 1.15 (1.05–1.3), above 1, 10 pairs", seed, ch.Ratio, ch.CILow, ch.CIHigh, ch.Pairs)
		}
		if !cpuSentenceRe.MatchString(ch.Explanation) {
			t.Fatalf("seed %d: explanation %q", seed, ch.Explanation)
		}
		if c.Counts[Regression] == 0 && c.Counts[Inconclusive] > 0 && !strings.HasSuffix(ch.Explanation, "; latency could not tell") {
			t.Fatalf("seed %d: latency inconclusive, explanation %q does not say so", seed, ch.Explanation)
		}
	}
}

// TestMinCPUChange: a candidate 5% costlier per request, on a machine
// whose slices vary by 1%, is within the default 10% (unchanged) and a CPU
// regression with MinCPURelative at 3%, the p95's minimum left at 10%.
func TestMinCPUChange(t *testing.T) {
	for seed := range uint64(seeds(t, 10)) {
		base := cpuRun(t, runSpec{name: "baseline", n: 2000, slices: 10, seed: seed, jitter: 0.4, driftSeed: seed}, cpuEndpoints, 300, 0.1, 0.01, seed)
		cand := cpuRun(t, runSpec{name: "candidate", n: 2000, slices: 10, seed: seed + 100, jitter: 0.4, driftSeed: seed}, cpuEndpoints, 315, 0.1, 0.01, seed)
		if ch := mustCompare(t, base, cand, CompareOptions{}).CPU; ch.Verdict != Unchanged {
			t.Fatalf("seed %d: default minimum: CPU %s (%s); want unchanged", seed, ch.Verdict, ch.Explanation)
		}
		c := mustCompare(t, base, cand, CompareOptions{MinCPURelative: 0.03})
		if c.CPU.Verdict != Regression || c.Options.MinRelative != 0.10 || !strings.Contains(c.CPU.Explanation, "% more CPU per request") {
			t.Fatalf("seed %d: 3%% minimum: CPU %s (%s), p95 minimum %g; want a regression, 10%%", seed, c.CPU.Verdict, c.CPU.Explanation, c.Options.MinRelative)
		}
	}
}

// TestCompareCPUAA: the same CPU per request on both sides is never a CPU
// regression or improvement, on a noisy machine (8% per slice of each side,
// 20% shared) or a quiet one (2%), where it is unchanged.
func TestCompareCPUAA(t *testing.T) {
	for _, tc := range []struct {
		name          string
		jitter        float64
		mostUnchanged bool
	}{{"noisy", 0.08, false}, {"quiet", 0.02, true}} {
		t.Run(tc.name, func(t *testing.T) {
			unchanged := 0
			n := seeds(t, 40)
			for seed := range uint64(n) {
				base := cpuRun(t, runSpec{name: "baseline", n: 2000, slices: 10, seed: seed}, cpuEndpoints, 300, 0.2, tc.jitter, seed)
				cand := cpuRun(t, runSpec{name: "candidate", n: 2000, slices: 10, seed: seed + 1000}, cpuEndpoints, 300, 0.2, tc.jitter, seed)
				c := mustCompare(t, base, cand, CompareOptions{})
				switch c.CPU.Verdict {
				case Regression, Improvement:
					t.Fatalf("seed %d: A/A CPU %s: %s", seed, c.CPU.Verdict, c.CPU.Explanation)
				case Unchanged:
					unchanged++
				}
			}
			if tc.mostUnchanged && unchanged < n*9/10 {
				t.Errorf("A/A: CPU unchanged in %d of %d; want at least 90%%", unchanged, n)
			}
		})
	}
}

// TestCompareCPUNotMeasured: without the build's CPU time on a side (a
// build given as a URL), the change is not measured — no figure, no
// verdict — and a cpu goal fails, saying why.
func TestCompareCPUNotMeasured(t *testing.T) {
	base := cpuRun(t, runSpec{name: "baseline", n: 2000, slices: 10, seed: 1}, cpuEndpoints, 0, 0, 0, 1)
	cand := cpuRun(t, runSpec{name: "candidate", n: 2000, slices: 10, seed: 2}, cpuEndpoints, 300, 0, 0.02, 1)
	c := mustCompare(t, base, cand, CompareOptions{})
	if c.CPU.Measured || c.CPU.Verdict != "" || c.CPU.Baseline != 0 || !strings.Contains(c.CPU.Reason, "baseline") {
		t.Fatalf("CPU = %+v; want not measured on the baseline", c.CPU)
	}
	if base.CPU.Measured || base.CPU.PerRequest != 0 || base.CPU.Reason == "" {
		t.Fatalf("baseline CPU = %+v; want not measured, with a reason", base.CPU)
	}
	goals := mustGoals(t, "cpu<=+5%", "cpu<=100000us")
	for i, r := range CheckComparison(c, goals) {
		if i == 0 && (r.Passed || r.Reason == "") {
			t.Errorf("%s: %+v; want FAIL, CPU not measured", r.Goal, r)
		}
		if i == 1 && !r.Passed {
			t.Errorf("%s: %+v; want PASS against the candidate's 300 µs", r.Goal, r)
		}
	}
	for _, r := range Check(base, goals) {
		if r.Passed || r.Reason == "" || r.Actual != 0 {
			t.Errorf("%s on a run without CPU time: %+v; want FAIL with a reason", r.Goal, r)
		}
	}
}

// TestCompareCPUSequential: runs not interleaved have one slice each: the
// figures, but no interval and no verdict beyond inconclusive.
func TestCompareCPUSequential(t *testing.T) {
	base := cpuRun(t, runSpec{name: "baseline", n: 2000, seed: 1}, cpuEndpoints, 300, 0, 0, 1)
	cand := cpuRun(t, runSpec{name: "candidate", n: 2000, seed: 2}, cpuEndpoints, 600, 0, 0, 1)
	c := mustCompare(t, base, cand, CompareOptions{})
	ch := c.CPU
	if !ch.Measured || ch.Verdict != Inconclusive || ch.Pairs != 0 || ch.CIHigh != 0 || math.Abs(ch.Ratio-2) > 0.01 {
		t.Fatalf("CPU = %+v; want ×2, inconclusive without an interval", ch)
	}
	if !strings.Contains(ch.Explanation, "not judged") {
		t.Errorf("explanation %q", ch.Explanation)
	}
}

// TestCPUGoals: parsing and checking cpu goals.
func TestCPUGoals(t *testing.T) {
	for _, tc := range []struct {
		in    string
		value float64
		unit  string
		exp   string
	}{
		{"cpu<=200us", 200, "µs", "<= 200 µs"},
		{"cpu<0.5ms", 500, "µs", "< 500 µs"},
		{"cpu<=150", 150, "µs", "<= 150 µs"},
		{"cpu<=+5%", 5, "%", "<= +5%"},
		{"cpu<=-10%", -10, "%", "<= −10%"},
	} {
		g, err := ParseGoal(tc.in)
		if err != nil || g.Metric != "cpu" || g.Value != tc.value || g.Unit != tc.unit || g.Expected() != tc.exp {
			t.Errorf("ParseGoal(%q) = %+v (%q), %v; want %g %s, %q", tc.in, g, g.Expected(), err, tc.value, tc.unit, tc.exp)
		}
	}
	for _, bad := range []string{"GET /orders: cpu<=1ms", "cpu<=fast", "cpu<=+x%"} {
		if _, err := ParseGoal(bad); err == nil {
			t.Errorf("ParseGoal(%q): no error", bad)
		}
	}
	run := cpuRun(t, runSpec{name: "run", n: 1000, seed: 3}, cpuEndpoints, 250, 0, 0, 1)
	got := Check(run, mustGoals(t, "cpu<=300us", "cpu<=200us", "cpu<=+5%"))
	if !got[0].Passed || math.Abs(got[0].Actual-250) > 1 || got[1].Passed || got[2].Passed || got[2].Reason == "" {
		t.Errorf("Check = %+v; want 250 µs: PASS, FAIL, and the relative goal FAIL with a reason", got)
	}
}

func mustGoals(t *testing.T, ss ...string) []Goal {
	t.Helper()
	g, err := ParseGoals(ss)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestCPUOfAClientIsNotMeasured: a command that hands the work to another
// process (docker run) spends next to no CPU per request itself: not a
// figure to compare, but "not measured", saying why.
func TestCPUOfAClientIsNotMeasured(t *testing.T) {
	s := cpuRun(t, runSpec{name: "run", n: 2000, seed: 1}, cpuEndpoints, 0.5, 0, 0, 1)
	if s.CPU.Measured || !strings.Contains(s.CPU.Reason, "docker run") {
		t.Fatalf("CPU = %+v; want not measured, naming the likely cause", s.CPU)
	}
}
