package analyzer

import "math"

// LookLevel is the false-alarm rate a look of a comparison that runs until
// it knows may spend: with α the rate for the whole comparison, prev the
// share of the most load reached at the previous look (0 at the first) and
// t at this one, it is α·(t² − prev²): the α-spending function α·t² of the
// power family (Kim and DeMets, ρ = 2), which keeps most of α for the later,
// larger looks while an early look can still stop a clear case. The levels
// of all looks add up to at most α, so by the union bound the chance that
// any look reports a change that is not there, or "unchanged" for a change
// that is, stays within α however the looks fall; stopping early leaves the
// rest unspent. Looks at a third, two thirds and all of the load are judged
// at 0.11α, 0.33α and 0.56α.
func LookLevel(alpha, prev, t float64) float64 {
	t, prev = min(t, 1), max(prev, 0)
	return alpha * (t*t - prev*prev)
}

// LookResamples is the number of bootstrap resamples a look judged at the
// level (a two-sided α) needs: each tail of the interval then holds at
// least ten resamples; never fewer than min.
func LookResamples(level float64, min int) int {
	return max(min, int(math.Ceil(20/level)))
}
