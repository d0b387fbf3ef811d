package analyzer

import (
	"fmt"
	"math"
	"strconv"
)

// changeBounds are the ratios (candidate/baseline) beyond which a change of
// a percentile with the baseline value base (ms) counts: it must be at least
// the absolute minimum minAbs (ms) and the relative one minRel both, so the
// larger of the two, expressed as a ratio, is the bound on each side.
func changeBounds(base, minAbs, minRel float64) (lo, hi float64) {
	lo, hi = 1/(1+minRel), 1+minRel
	if base > 0 {
		hi = max(hi, 1+minAbs/base)
		lo = min(lo, max(1-minAbs/base, 0))
	} else if minAbs > 0 {
		lo, hi = 0, math.Inf(1)
	}
	return lo, hi
}

// equivalent reports whether the whole confidence interval of the change
// lies strictly inside the bounds of a change that counts: the run shows
// that no change of the minimum size happened, not merely that none was
// seen.
func equivalent(ch Change, minAbs, minRel float64) bool {
	lo, hi := changeBounds(ch.Baseline, minAbs, minRel)
	return ch.CIHigh > 0 && ch.CILow > lo && ch.CIHigh < hi
}

// minDetectable is the smallest rise (as a ratio) this run could have
// reported as a change: the interval's half-width on the log scale, exp(h)
// with h = (ln CIHigh − ln CILow)/2 — a true change that large moves the
// interval clear of 1 — and never less than the bounds of a change that
// counts. Zero when the interval was not computed.
func minDetectable(ch Change, minAbs, minRel float64) float64 {
	if ch.CILow <= 0 || ch.CIHigh <= 0 {
		return 0
	}
	_, hi := changeBounds(ch.Baseline, minAbs, minRel)
	return max(math.Exp((math.Log(ch.CIHigh)-math.Log(ch.CILow))/2), hi)
}

// MinDetectableMs is MinDetectable in milliseconds of the baseline
// percentile; zero when MinDetectable is.
func (ch Change) MinDetectableMs() float64 {
	if ch.MinDetectable == 0 {
		return 0
	}
	return ch.Baseline * (ch.MinDetectable - 1)
}

// p95Relative is the relative minimum the p95 change ch was judged by:
// MinRelative, raised to MinRelativeSequential for runs not interleaved.
func p95Relative(c *Comparison, ch Change) float64 {
	_, rel := minimums(c.Options, ch, "p95")
	return rel
}

// minimums are the absolute (ms) and relative minimum changes the named
// percentile ("p95" or "p99") was judged by; the relative one is raised to
// MinRelativeSequential for runs not interleaved.
func minimums(o CompareOptions, ch Change, name string) (minAbs, rel float64) {
	minAbs, rel = durMs(o.MinChange), o.MinRelative
	if name == "p99" {
		minAbs, rel = durMs(o.MinChangeP99), o.MinRelativeP99
	}
	if ch.Method != MethodPairedSlices {
		rel = max(rel, o.MinRelativeSequential)
	}
	return minAbs, rel
}

// inconclusiveSentence explains a percentile judged inconclusive for the
// noise: its change and interval, and the smallest change the run could
// have detected, e.g. "p95 rose 74.9 ms → 80 ms (+5.1 ms, CI ×0.95–×1.22):
// the interval allows a change of 10% and 5 ms or more; this run could
// detect a change of 13.3% (10 ms) or more".
func inconclusiveSentence(c *Comparison, ch Change, name string) string {
	minAbs, rel := minimums(c.Options, ch, name)
	s := fmt.Sprintf("%s %s %s → %s (%s, CI %s–%s)", name, direction(ch.Delta), FormatMs(ch.Baseline), FormatMs(ch.Candidate),
		signedMs(ch.Delta), FormatRatio(ch.CILow), FormatRatio(ch.CIHigh))
	if up, down := ch.Delta >= minAbs && ch.Ratio >= 1+rel, -ch.Delta >= minAbs && ch.Ratio <= 1/(1+rel); up || down {
		s += " but the noise is as large"
	} else {
		s += fmt.Sprintf(": the interval allows a change of %s%% and %s or more", FormatCount(100*rel), FormatMs(minAbs))
	}
	if ch.MinDetectable > 0 {
		s += fmt.Sprintf("; this run could detect a change of %s (%s) or more",
			formatChange(ch.MinDetectable), FormatMs(ch.MinDetectableMs()))
	}
	return s
}

// formatChange formats a ratio as a rise in percent: "15%", "7.5%", "×3.4"
// from ×2 up.
func formatChange(r float64) string {
	p := 100 * (r - 1)
	switch {
	case r >= 2:
		return FormatRatio(r)
	case p >= 10:
		return strconv.FormatFloat(math.Round(p), 'f', 0, 64) + "%"
	}
	return trimZeros(strconv.FormatFloat(p, 'f', 1, 64)) + "%"
}
