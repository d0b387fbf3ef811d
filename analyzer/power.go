package analyzer

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// maxLongerFactor bounds how many times longer a run Comparison.Longer
// suggests: past it, a quieter machine helps more than a longer run.
const maxLongerFactor = 25

// LongerRun estimates how long a comparison whose endpoints mostly could
// not tell would have to run, at the noise it saw, to tell (see
// Comparison.Longer).
type LongerRun struct {
	// Inconclusive and Endpoints count the endpoints inconclusive and in
	// all.
	Inconclusive, Endpoints int
	// Ran is the load each side ran.
	Ran time.Duration
	// Half and All are the factors (× Ran) by which the load would likely
	// make half of the inconclusive endpoints, and all of them, conclusive;
	// +Inf when beyond maxLongerFactor or not to be estimated.
	Half, All float64
}

// longerRun estimates a longer run when most endpoints are inconclusive:
// for each, how much longer its p95 interval must be measured to shrink
// (as 1/√duration) clear of 1 (a change beyond the minimum) or inside the
// minimum change (unchanged), or until it has MinSamples requests a side;
// nil when most endpoints were judged, or nothing ran.
func longerRun(c *Comparison) *LongerRun {
	n := len(c.Endpoints)
	bad := c.Counts[Inconclusive]
	ran := max(c.Baseline.Duration, c.Candidate.Duration)
	if n == 0 || 2*bad <= n || ran <= 0 || len(c.Faults) > 0 {
		return nil
	}
	var fs []float64
	for _, e := range c.Endpoints {
		if e.Verdict == Inconclusive {
			fs = append(fs, longerFactor(c, e))
		}
	}
	slices.Sort(fs)
	l := &LongerRun{Inconclusive: bad, Endpoints: n, Ran: ran, Half: fs[(len(fs)-1)/2], All: fs[len(fs)-1]}
	for _, f := range []*float64{&l.Half, &l.All} {
		if *f > maxLongerFactor {
			*f = math.Inf(1)
		}
	}
	return l
}

// longerFactor is how many times longer e's load would have to run to be
// conclusive at the noise this run saw; +Inf when it cannot be told.
func longerFactor(c *Comparison, e *EndpointComparison) float64 {
	b, k := e.Baseline.Requests, e.Candidate.Requests
	if least := min(b, k); least < int64(c.Options.MinSamples) {
		if least == 0 {
			return math.Inf(1)
		}
		return float64(c.Options.MinSamples) / float64(least)
	}
	ch := e.P95
	if ch.CILow <= 0 || ch.CIHigh <= 0 {
		return math.Inf(1)
	}
	minAbs, rel := minimums(c.Options, ch, "p95")
	lo, hi := changeBounds(ch.Baseline, minAbs, rel)
	h := (math.Log(ch.CIHigh) - math.Log(ch.CILow)) / 2
	m := (math.Log(ch.CIHigh) + math.Log(ch.CILow)) / 2
	var need float64 // the half-width that would settle it
	switch {
	case m >= math.Log(hi) || m <= math.Log(max(lo, 1e-9)):
		need = math.Abs(m) // clear of 1: a change that counts
	default:
		need = min(math.Log(hi)-m, m-math.Log(max(lo, 1e-9))) // inside the minimum: unchanged
	}
	if need <= 0 || h <= 0 {
		return math.Inf(1)
	}
	return max((h/need)*(h/need), 1)
}

// addLongerRun sets Longer, and a note saying it, when most endpoints are
// inconclusive.
func (c *Comparison) addLongerRun() {
	if c.Longer = longerRun(c); c.Longer != nil {
		c.Notes = append(c.Notes, longerSentence(c.Longer))
	}
}

// longerSentence says how long a run would likely settle the endpoints
// that could not tell; empty without an estimate.
func longerSentence(l *LongerRun) string {
	if l == nil {
		return ""
	}
	s := fmt.Sprintf("%d of %d endpoints could not tell at this noise level (this run: %s of load per side): ",
		l.Inconclusive, l.Endpoints, roundDuration(l.Ran))
	switch {
	case math.IsInf(l.Half, 1):
		return s + fmt.Sprintf("even a run %d× as long would likely leave most of them inconclusive; a quieter machine helps more than a longer run", maxLongerFactor)
	case math.IsInf(l.All, 1):
		return s + fmt.Sprintf("about %s per side (%s) would likely settle half of them, not all; a quieter machine helps more than a longer run",
			roundDuration(scale(l.Ran, l.Half)), times(l.Half))
	case l.All == l.Half:
		return s + fmt.Sprintf("about %s per side (%s) would likely settle them (--duration, or --max-duration to stop once they are)",
			roundDuration(scale(l.Ran, l.All)), times(l.All))
	}
	return s + fmt.Sprintf("about %s per side (%s) would likely settle half of them and %s (%s) all (--duration, or --max-duration to stop once they are)",
		roundDuration(scale(l.Ran, l.Half)), times(l.Half), roundDuration(scale(l.Ran, l.All)), times(l.All))
}

func scale(d time.Duration, f float64) time.Duration { return time.Duration(float64(d) * f) }

// times formats a factor: "4× this run".
func times(f float64) string {
	return FormatCount(math.Ceil(f*10)/10) + "× this run"
}

// roundDuration rounds up to whole seconds (whole minutes past 10 minutes).
func roundDuration(d time.Duration) time.Duration {
	unit := time.Second
	if d > 10*time.Minute {
		unit = time.Minute
	}
	return (d + unit - 1) / unit * unit
}
