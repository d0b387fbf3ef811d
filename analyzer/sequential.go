package analyzer

import "math"

// LookLevel is the false-alarm rate a look of a comparison that runs until
// it knows may spend: with α the rate for the whole comparison, prev the
// share of the most load reached at the previous look (0 at the first) and
// t at this one, it is α·(t − prev) — an α-spending function linear in the
// share of load (Lan and DeMets' Pocock-like spending). The levels of all
// looks add up to at most α, so by the union bound the chance that any look
// reports a change that is not there, or "unchanged" for a change that is,
// stays within α however the looks fall; stopping early leaves the rest
// unspent.
func LookLevel(alpha, prev, t float64) float64 {
	return alpha * (min(t, 1) - max(prev, 0))
}

// LookResamples is the number of bootstrap resamples a look judged at the
// level (a two-sided α) needs: each tail of the interval then holds at
// least ten resamples; never fewer than min.
func LookResamples(level float64, min int) int {
	return max(min, int(math.Ceil(20/level)))
}
