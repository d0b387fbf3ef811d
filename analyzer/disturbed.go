package analyzer

import (
	"fmt"
	"slices"
	"strings"
)

// Slice pairs set aside for a burst of load on the machine.
const (
	// disturbedFactor is how far above its run's typical slice a slice's
	// score must be to count as disturbed: the score is the 95th percentile
	// of its results' latencies, each divided by its endpoint's median.
	disturbedFactor = 5.0
	// maxDisturbedShare caps the pairs set aside: when more than a fifth
	// are disturbed, none is.
	maxDisturbedShare = 0.2
	// minSliceResults is the fewest results a slice needs to be scored.
	minSliceResults = 20
)

// SetAside is a slice pair left out of the latency intervals because one
// of its slices was disturbed: a burst of load on the machine made it far
// slower than its run's other slices.
type SetAside struct {
	// Pair numbers the pair from 1; Slice is the disturbed slice's number
	// in its run, Side "baseline" or "candidate" (the more disturbed one
	// when both were).
	Pair, Slice int
	Side        string
	// Factor is how much slower the slice was than its run's typical
	// slice (the score's ratio).
	Factor float64
}

// sliceScores scores each slice of a run: the 90th percentile of its
// results' latencies, each divided by its endpoint's median latency in the
// run. A burst on the machine slows every endpoint of a slice at once; a
// build's slow endpoint is slow in every slice and scores alike in all.
func sliceScores(s *Summary) map[int32]float64 {
	per := map[int32][]float64{}
	for _, e := range s.Endpoints {
		if e.sample == nil || len(e.sample.items) < minSliceResults {
			continue
		}
		lats := make([]int64, len(e.sample.items))
		for i, it := range e.sample.items {
			lats[i] = it.lat
		}
		slices.Sort(lats)
		med := float64(max(quantile(lats, 0.5), 1))
		for _, it := range e.sample.items {
			per[it.slice] = append(per[it.slice], float64(it.lat)/med)
		}
	}
	scores := map[int32]float64{}
	for sl, vs := range per {
		if len(vs) < minSliceResults {
			continue
		}
		slices.Sort(vs)
		scores[sl] = vs[min(len(vs)-1, int(0.95*float64(len(vs))))]
	}
	return scores
}

// disturbedPairs finds the slice pairs to set aside: those in which a slice
// of either run scores disturbedFactor times its run's median slice score
// or more; none when more than maxDisturbedShare of the pairs are
// disturbed (the machine is busy throughout). Bursts of load on the machine fall on either side alike; when the
// candidate's slices are disturbed far more often than the baseline's
// (more than three times as often plus three), the build itself may stall,
// and none is set aside.
func disturbedPairs(base, cand *Summary, pairA, pairB map[int32]int32, pairs int) []SetAside {
	worst := map[int32]SetAside{}
	bySide := map[string]int{} // disturbed slices per side
	for k, run := range []struct {
		s    *Summary
		pair map[int32]int32
	}{{base, pairA}, {cand, pairB}} {
		scores := sliceScores(run.s)
		if len(scores) < pairs/2 {
			continue
		}
		typical := make([]float64, 0, len(scores))
		for _, v := range scores {
			typical = append(typical, v)
		}
		slices.Sort(typical)
		med := typical[len(typical)/2]
		for sl, v := range scores {
			p, ok := run.pair[sl]
			f := v / med
			if !ok || f < disturbedFactor {
				continue
			}
			side := [2]string{"baseline", "candidate"}[k]
			bySide[side]++
			if f > worst[p].Factor {
				worst[p] = SetAside{Pair: int(p) + 1, Slice: int(sl), Side: side, Factor: f}
			}
		}
	}
	out := make([]SetAside, 0, len(worst))
	for _, a := range worst {
		out = append(out, a)
	}
	if n, b := bySide["candidate"], bySide["baseline"]; len(out) == 0 || n > 3*b+3 {
		return nil
	}
	if len(out) > int(maxDisturbedShare*float64(pairs)) {
		// Bursts are the machine's state, not an accident: setting the
		// worst aside would keep one side's milder ones and drop the
		// other's, biasing the comparison. All pairs stay; the interval
		// widens.
		return nil
	}
	slices.SortFunc(out, func(a, b SetAside) int { return a.Pair - b.Pair })
	return out
}

// withoutPairs returns the pairing without the pairs set aside, the kept
// pairs numbered anew from 0; slices of pairs set aside are absent.
func withoutPairs(pairA, pairB map[int32]int32, pairs int, aside []SetAside) (a, b map[int32]int32, kept int) {
	drop := map[int32]bool{}
	for _, x := range aside {
		drop[int32(x.Pair-1)] = true
	}
	renumber := make(map[int32]int32, pairs)
	for p := range int32(pairs) {
		if !drop[p] {
			renumber[p] = int32(kept)
			kept++
		}
	}
	remap := func(m map[int32]int32) map[int32]int32 {
		out := make(map[int32]int32, len(m))
		for sl, p := range m {
			if q, ok := renumber[p]; ok {
				out[sl] = q
			}
		}
		return out
	}
	return remap(pairA), remap(pairB), kept
}

// setAsideSentence says which pairs were left out and why, e.g. "2 of 20
// slice pairs set aside, a burst of load on the machine making one slice
// far slower than the others (baseline slice 7 ×41, candidate slice 12 ×6):
// the p95 and p99 figures and their intervals rest on the other 18".
func setAsideSentence(aside []SetAside, pairs int) string {
	var parts []string
	for i, a := range aside {
		if i == 4 && len(aside) > 5 {
			parts = append(parts, fmt.Sprintf("%d more", len(aside)-i))
			break
		}
		parts = append(parts, fmt.Sprintf("%s slice %d %s", a.Side, a.Slice, FormatRatio(a.Factor)))
	}
	return fmt.Sprintf("%d of %d slice pairs set aside, a burst of load on the machine making a slice far slower than its run's others (%s): the p95 and p99 figures and their intervals rest on the other %d",
		len(aside), pairs, strings.Join(parts, ", "), pairs-len(aside))
}
