package analyzer

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/replaykit/replay/snapshots"
)

// CPUUsage is the CPU time a build spent per request over its load: its
// process tree's user and system time (snapshots.RunInfo.BuildCPU), over
// every load request of the run. It is per build, not per endpoint: the
// process tree serves every endpoint at once.
type CPUUsage struct {
	// Measured reports whether the run measured the build's CPU time;
	// when false every figure is zero and Reason says why.
	Measured bool
	// Reason says why the CPU time was not measured; empty when it was.
	Reason string
	// Total is the build's CPU time over its load.
	Total time.Duration
	// Requests counts the load requests it served.
	Requests int64
	// PerRequest is Total per request, in microseconds.
	PerRequest float64
	// Slices are the figures of each load slice, in the order they ran.
	Slices []CPUSlice
}

// CPUSlice is a build's CPU time over one slice of its load.
type CPUSlice struct {
	// Slice numbers it as its results do (snapshots.Result.Slice).
	Slice int
	// CPU is the build's CPU time over the slice.
	CPU time.Duration
	// Requests counts the slice's load results.
	Requests int64
	// Wall is the slice's length.
	Wall time.Duration
}

// CPUNotMeasured is why a run without the build's CPU time has none.
const CPUNotMeasured = "replay reads the CPU time only of a build it starts (a command, on Linux)"

// cpuUsage is a run's CPU figures: info's CPU time per slice, with the
// requests of each (perSlice, by slice number; loads in all).
func cpuUsage(info snapshots.RunInfo, perSlice map[int]int64, loads int64) CPUUsage {
	b := info.BuildCPU
	switch {
	case b == nil || len(b.Slices) == 0:
		return CPUUsage{Reason: CPUNotMeasured}
	case loads == 0:
		return CPUUsage{Reason: "the run has no load requests"}
	}
	u := CPUUsage{Measured: true, Requests: loads, Total: b.Total()}
	for _, s := range b.Slices {
		n := perSlice[s.Slice]
		if s.Slice == 0 {
			n = loads
		}
		u.Slices = append(u.Slices, CPUSlice{Slice: s.Slice, CPU: s.CPU, Requests: n, Wall: s.Wall})
	}
	u.PerRequest = micros(u.Total) / float64(loads)
	if u.PerRequest < minCPUPerRequest {
		return CPUUsage{Reason: fmt.Sprintf("the build's process tree spent %s per request, less than any server does: its command hands the work to a process it did not start (docker run, a service manager), whose CPU time replay cannot see",
			FormatMicros(u.PerRequest))}
	}
	return u
}

// minCPUPerRequest (µs) is less CPU time than any server spends on a
// request: a process tree below it is not the one serving.
const minCPUPerRequest = 2.0

// UpdateCPU computes CPU again from Info.BuildCPU, which a run file gets
// only as it closes: a summary made while the results came in (replay run)
// has none before. A run of one load call (not sliced, or one slice) has
// every figure; for more slices the summary no longer knows each one's
// requests, so only the whole run's figures are right (Summarize the run
// file for the rest).
func (s *Summary) UpdateCPU() {
	var loads int64
	if s.Overall != nil {
		loads = s.Overall.Requests
	}
	perSlice := map[int]int64{}
	if len(s.Slices) == 1 {
		perSlice[s.Slices[0]] = loads
	}
	s.CPU = cpuUsage(s.Info, perSlice, loads)
}

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// CPUChange compares the builds' CPU time per request (whole run, per
// build: see CPUUsage).
type CPUChange struct {
	// Measured reports whether both runs measured their build's CPU time;
	// when false, no figure is set and Reason says why.
	Measured bool
	Reason   string
	// Baseline and Candidate are CPU microseconds per request over the
	// slice pairs compared (every slice when the runs were not sliced).
	// Pairs set aside for the latency (Comparison.SetAside) count: a burst
	// of load slows requests far more than it moves their CPU time.
	Baseline, Candidate float64
	// Ratio is Candidate / Baseline.
	Ratio float64
	// CILow and CIHigh bound the confidence interval of Ratio, from a
	// bootstrap over the slice pairs (as the latency's, MethodPairedSlices);
	// both zero without slice pairs (a sequential comparison).
	CILow, CIHigh float64
	// MinDetectable is the smallest rise, as a ratio, this run could have
	// reported (see Change.MinDetectable); zero without an interval.
	MinDetectable float64
	// Pairs is the number of slice pairs compared.
	Pairs int
	// Verdict judges the change against CPU's relative minimum change
	// (CompareOptions.MinCPURelative, by default the p95's): a regression or an improvement beyond
	// it and the noise, unchanged when the whole interval lies within it,
	// else inconclusive; "" when not Measured.
	Verdict Verdict
	// Explanation is one sentence with the figures, e.g. "the candidate
	// spends 5% more CPU per request (312 µs → 328 µs, CI ×1.02–×1.08);
	// latency could not tell".
	Explanation string
}

// compareCPU compares the builds' CPU time per request; the endpoints are
// judged already (their verdicts word the explanation).
func compareCPU(c *Comparison) CPUChange {
	b, k := c.Baseline.CPU, c.Candidate.CPU
	switch {
	case !b.Measured && !k.Measured:
		return CPUChange{Reason: "not measured on either build: " + b.Reason}
	case !b.Measured:
		return CPUChange{Reason: "not measured on the baseline: " + b.Reason}
	case !k.Measured:
		return CPUChange{Reason: "not measured on the candidate: " + k.Reason}
	}
	o := c.Options
	bs, ks := pairCPU(b.Slices, k.Slices)
	ch := CPUChange{Measured: true, Pairs: len(bs)}
	if len(bs) < o.MinBlocks {
		// Too few pairs for an interval: the whole runs' figures, unjudged.
		bs, ks, ch.Pairs = b.Slices, k.Slices, 0
	}
	ch.Baseline, ch.Candidate = perRequest(bs, nil), perRequest(ks, nil)
	ch.Ratio = ch.Candidate / max(ch.Baseline, 1e-9)
	if ch.Pairs > 0 {
		ch.CILow, ch.CIHigh = bootstrapCPU(bs, ks, o.Resamples, o.Confidence, rand.New(rand.NewPCG(o.Seed, 0xC9)))
	}
	lat := Change{Baseline: ch.Baseline, Candidate: ch.Candidate, Delta: ch.Candidate - ch.Baseline, Ratio: ch.Ratio,
		CILow: ch.CILow, CIHigh: ch.CIHigh, Disjoint: true}
	ch.MinDetectable = minDetectable(lat, 0, o.MinCPURelative)
	ch.Verdict = Inconclusive
	if ch.Pairs > 0 {
		ch.Verdict = latencyVerdict(lat, 0, o.MinCPURelative, true)
	}
	ch.Explanation = cpuSentence(c, ch)
	return ch
}

// pairCPU pairs the slices of two interleaved runs by rank, as slicePairs
// pairs their results; surplus slices of the longer run are left out. No
// pairs when either run was not sliced.
func pairCPU(b, k []CPUSlice) (bs, ks []CPUSlice) {
	sorted := func(s []CPUSlice) []CPUSlice {
		s = slices.Clone(s)
		slices.SortStableFunc(s, func(x, y CPUSlice) int { return cmp.Compare(x.Slice, y.Slice) })
		return s
	}
	bs, ks = sorted(b), sorted(k)
	n := min(len(bs), len(ks))
	if n == 0 || bs[0].Slice == 0 || ks[0].Slice == 0 {
		return nil, nil
	}
	return bs[:n], ks[:n]
}

// perRequest is the CPU microseconds per request over the slices, each
// counted w[i] times (once each when w is nil); zero without requests.
func perRequest(s []CPUSlice, w []int) float64 {
	var cpu time.Duration
	var n int64
	for i, x := range s {
		k := 1
		if w != nil {
			k = w[i]
		}
		cpu += time.Duration(k) * x.CPU
		n += int64(k) * x.Requests
	}
	if n == 0 {
		return 0
	}
	return micros(cpu) / float64(n)
}

// bootstrapCPU is the confidence interval (at level conf) of the ratio of
// CPU per request, candidate to baseline: slice pairs are resampled whole,
// as bootstrapRatios resamples them for the latency, and the interval
// widened for few pairs alike (smallSampleWiden).
func bootstrapCPU(bs, ks []CPUSlice, resamples int, conf float64, rng *rand.Rand) (lo, hi float64) {
	pairs := len(bs)
	w := make([]int, pairs)
	rs := make([]float64, 0, resamples)
	for range resamples {
		clear(w)
		for range pairs {
			w[rng.IntN(pairs)]++
		}
		b, k := perRequest(bs, w), perRequest(ks, w)
		if b <= 0 || k <= 0 {
			continue
		}
		rs = append(rs, k/b)
	}
	lo, hi = interval(rs, conf)
	return smallSampleWiden(lo, hi, pairs, conf)
}

// cpuSentence explains the CPU change in one sentence.
func cpuSentence(c *Comparison, ch CPUChange) string {
	fig := fmt.Sprintf("%s → %s", FormatMicros(ch.Baseline), FormatMicros(ch.Candidate))
	ci := ""
	if ch.CIHigh > 0 {
		ci = fmt.Sprintf("CI %s–%s", FormatRatio(ch.CILow), FormatRatio(ch.CIHigh))
	}
	switch ch.Verdict {
	case Regression:
		return fmt.Sprintf("the candidate spends %s more CPU per request (%s, %s)%s", formatChange(ch.Ratio), fig, ci, latencyTold(c))
	case Improvement:
		return fmt.Sprintf("the candidate spends %s less CPU per request (%s, %s)", formatPercentDrop(ch.Ratio), fig, ci)
	case Unchanged:
		return fmt.Sprintf("no change beyond %s%%: %s per request (%s)", FormatCount(100*c.Options.MinCPURelative), fig, ci)
	}
	if ch.Pairs == 0 {
		return fmt.Sprintf("%s per request, not judged: the runs were not interleaved in at least %d slice pairs", fig, c.Options.MinBlocks)
	}
	s := fmt.Sprintf("%s %s per request (%s): ", direction(ch.Candidate-ch.Baseline), fig, ci)
	if up, down := ch.Ratio >= 1+c.Options.MinCPURelative, ch.Ratio <= 1/(1+c.Options.MinCPURelative); up || down {
		s += "the noise is as large as the change"
	} else {
		s += fmt.Sprintf("the interval allows a change of %s%% or more", FormatCount(100*c.Options.MinCPURelative))
	}
	if ch.MinDetectable > 0 {
		s += fmt.Sprintf("; this run could detect a change of %s or more", formatChange(ch.MinDetectable))
	}
	return s
}

// latencyTold says what the latency showed beside a CPU regression: no
// endpoint regressed and some could not be judged, or none changed.
func latencyTold(c *Comparison) string {
	switch {
	case c.Counts[Regression] > 0:
		return ""
	case c.Counts[Inconclusive] > 0:
		return "; latency could not tell"
	case c.Counts[Unchanged] > 0:
		return "; latency did not change beyond the minimum"
	}
	return ""
}

// formatPercentDrop formats a ratio below 1 as a drop in percent: "12%".
func formatPercentDrop(r float64) string {
	p := 100 * (1 - r)
	if p >= 10 {
		return fmt.Sprintf("%.0f%%", math.Round(p))
	}
	return trimZeros(fmt.Sprintf("%.1f", p)) + "%"
}

// FormatMicros formats CPU microseconds: "312 µs", "48.5 µs", "1.25 ms"
// from a millisecond up.
func FormatMicros(us float64) string {
	if us >= 1000 {
		return FormatMs(us / 1000)
	}
	return FormatCount(us) + " µs"
}
