package analyzer

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
)

// Bootstrap methods, as reported in Change.Method.
const (
	// MethodPairedSlices resamples interleaving slices in pairs (the i-th
	// slice of the baseline with the i-th of the candidate), whole slices at
	// a time: drift of the machine hits both sides of a pair alike and
	// cancels, while the variation between slices widens the interval.
	MethodPairedSlices = "paired-slices"
	// MethodIID resamples each side's results independently.
	MethodIID = "iid"
)

// side is one run's latency sample for one endpoint, prepared for the
// bootstrap: values ascending, with the slice pair each came from.
type side struct {
	values []int64 // µs, ascending
	pair   []int32 // pair index of values[i]; nil for MethodIID
	counts []int   // values per pair index
}

// newSide sorts a sample; pairOf maps a slice number to its pair index (nil
// for MethodIID). A nil sample is an empty side.
func newSide(s *sample, pairOf map[int32]int32, pairs int) side {
	if s == nil {
		s = &sample{}
	}
	items := slices.Clone(s.items)
	slices.SortFunc(items, func(a, b sampleItem) int { return cmp.Compare(a.lat, b.lat) })
	sd := side{values: make([]int64, 0, len(items))}
	if pairOf != nil {
		sd.pair = make([]int32, 0, len(items))
		sd.counts = make([]int, pairs)
	}
	for _, it := range items {
		if pairOf == nil {
			sd.values = append(sd.values, it.lat)
			continue
		}
		p, ok := pairOf[it.slice]
		if !ok {
			continue // its pair was set aside
		}
		sd.values = append(sd.values, it.lat)
		sd.pair = append(sd.pair, p)
		sd.counts[p]++
	}
	return sd
}

// quantilesWeighted returns the nearest-rank p95 and p99 of the multiset in
// which values[i] appears weight(i) times, total times in all, scanning down
// from the largest value (only the top few percent are visited).
func (s *side) quantilesWeighted(total int, weight func(i int) int) (p95, p99 int64) {
	t99 := total - rank(0.99, total) + 1
	t95 := total - rank(0.95, total) + 1
	acc := 0
	got99 := false
	for i := len(s.values) - 1; i >= 0; i-- {
		acc += weight(i)
		if !got99 && acc >= t99 {
			p99, got99 = s.values[i], true
		}
		if acc >= t95 {
			return s.values[i], p99
		}
	}
	return s.values[0], p99
}

// ratioCI holds bootstrap confidence intervals of candidate/baseline ratios.
type ratioCI struct {
	p95Low, p95High float64
	p99Low, p99High float64
	method          string
	pairs           int
}

// bootstrapRatios resamples both sides resamples times and returns the
// confidence intervals (at level conf) of the p95 and p99 ratios. With
// pairs > 0 it resamples slice pairs (MethodPairedSlices), else each side
// independently (MethodIID).
func bootstrapRatios(base, cand side, pairs, resamples int, conf float64, rng *rand.Rand) ratioCI {
	r95 := make([]float64, 0, resamples)
	r99 := make([]float64, 0, resamples)
	if pairs > 0 {
		w := make([]int, pairs)
		for range resamples {
			clear(w)
			for range pairs {
				w[rng.IntN(pairs)]++
			}
			nb, nc := 0, 0
			for p, k := range w {
				nb += k * base.counts[p]
				nc += k * cand.counts[p]
			}
			if nb == 0 || nc == 0 {
				continue // a resample without one side: skip it
			}
			b95, b99 := base.quantilesWeighted(nb, func(i int) int { return w[base.pair[i]] })
			c95, c99 := cand.quantilesWeighted(nc, func(i int) int { return w[cand.pair[i]] })
			r95 = append(r95, ratio(c95, b95))
			r99 = append(r99, ratio(c99, b99))
		}
	} else {
		cb := make([]int32, len(base.values))
		cc := make([]int32, len(cand.values))
		for range resamples {
			b95, b99 := resampleIID(&base, cb, rng)
			c95, c99 := resampleIID(&cand, cc, rng)
			r95 = append(r95, ratio(c95, b95))
			r99 = append(r99, ratio(c99, b99))
		}
	}
	ci := ratioCI{method: MethodIID}
	if pairs > 0 {
		ci.method, ci.pairs = MethodPairedSlices, pairs
	}
	ci.p95Low, ci.p95High = interval(r95, conf)
	ci.p99Low, ci.p99High = interval(r99, conf)
	if pairs > 0 {
		ci.p95Low, ci.p95High = smallSampleWiden(ci.p95Low, ci.p95High, pairs, conf)
		ci.p99Low, ci.p99High = smallSampleWiden(ci.p99Low, ci.p99High, pairs, conf)
	}
	return ci
}

// resampleIID draws len(values) values with replacement (as counts per
// index) and returns the resample's p95 and p99. Only the largest values
// can be a resample's p95 or p99, so for large samples it draws how many of
// the n draws land among the top T values (binomial, by its normal
// approximation; T leaves four standard deviations above the t95 draws the
// p95 needs) and then only those draws; in the rare resample with too few,
// it draws all n.
func resampleIID(s *side, counts []int32, rng *rand.Rand) (p95, p99 int64) {
	n := len(s.values)
	t95 := n - rank(0.95, n) + 1
	if top := t95 + 4*int(math.Sqrt(float64(t95))) + 16; top <= n/4 {
		p := float64(top) / float64(n)
		mean := float64(n) * p
		k := int(math.Round(mean + math.Sqrt(mean*(1-p))*rng.NormFloat64()))
		if k >= t95 {
			tail := counts[n-top:]
			clear(tail)
			draw(tail, k, rng)
			// The scan stops within the tail: it holds at least t95 draws.
			return s.quantilesWeighted(n, func(i int) int { return int(counts[i]) })
		}
	}
	clear(counts)
	draw(counts, n, rng)
	return s.quantilesWeighted(n, func(i int) int { return int(counts[i]) })
}

// draw adds k uniform draws to counts, two per 64-bit random number
// (multiply-shift; the bias, below len(counts)/2³², is immaterial here).
func draw(counts []int32, k int, rng *rand.Rand) {
	m := uint64(len(counts))
	for ; k >= 2; k -= 2 {
		x := rng.Uint64()
		counts[(x&0xFFFFFFFF)*m>>32]++
		counts[(x>>32)*m>>32]++
	}
	if k == 1 {
		counts[(rng.Uint64()&0xFFFFFFFF)*m>>32]++
	}
}

// orderInterval returns a distribution-free confidence interval (at level
// conf) of the q-quantile of sorted values: the order statistics whose
// ranks bound the binomial count of values below the quantile (normal
// approximation, widened outward). It holds for any sample size and any
// distribution, and needs no resampling.
func orderInterval(sorted []int64, q, conf float64) (lo, hi int64) {
	n := len(sorted)
	if n == 0 {
		return 0, 0
	}
	z := math.Sqrt2 * math.Erfinv(conf)
	mid, sd := float64(n)*q, math.Sqrt(float64(n)*q*(1-q))
	l := min(max(int(math.Floor(mid-z*sd)), 1), n)
	u := min(max(int(math.Ceil(mid+z*sd))+1, 1), n)
	return sorted[l-1], sorted[u-1]
}

// disjoint reports whether the candidate's interval of a quantile lies
// wholly above (up) or below (down) the baseline's.
func disjoint(base, cand []int64, q, conf float64) (up, down bool) {
	bl, bh := orderInterval(base, q, conf)
	cl, ch := orderInterval(cand, q, conf)
	return cl > bh, ch < bl
}

// ratio is c/b with both floored at 1 µs, so that zero latencies compare.
func ratio(c, b int64) float64 { return float64(max(c, 1)) / float64(max(b, 1)) }

// interval returns the percentile interval of rs at level conf.
func interval(rs []float64, conf float64) (lo, hi float64) {
	if len(rs) == 0 {
		return 0, 0
	}
	slices.Sort(rs)
	a := (1 - conf) / 2
	return rs[rank(a, len(rs))-1], rs[rank(1-a, len(rs))-1]
}

// smallSampleWiden widens a paired-slices interval [lo, hi] for its number
// of pairs: resampling a few clusters (slice pairs) gives percentile
// intervals too narrow, by the ratio of Student's t with pairs − 1 degrees
// of freedom to the normal quantile, and by √(pairs/(pairs − 1)) for the
// variance the resamples miss. The interval's half-width on the log scale
// is multiplied by both, around its log-midpoint: ×1.45 at 8 pairs, ×1.33
// at 10, ×1.14 at 20, ×1.06 at 40 (99%).
func smallSampleWiden(lo, hi float64, pairs int, conf float64) (float64, float64) {
	if lo <= 0 || hi <= 0 || pairs < 2 {
		return lo, hi
	}
	z := math.Sqrt2 * math.Erfinv(conf)
	f := studentT(z, float64(pairs-1)) / z * math.Sqrt(float64(pairs)/float64(pairs-1))
	mid, half := (math.Log(lo)+math.Log(hi))/2, (math.Log(hi)-math.Log(lo))/2*f
	return math.Exp(mid - half), math.Exp(mid + half)
}

// studentT is the quantile of Student's t with nu degrees of freedom at the
// probability whose normal quantile is z (the Cornish–Fisher expansion of
// Abramowitz and Stegun 26.7.5; within 0.3% of the exact value for nu ≥ 5
// at the levels used here).
func studentT(z, nu float64) float64 {
	z3, z5, z7 := z*z*z, math.Pow(z, 5), math.Pow(z, 7)
	return z + (z3+z)/(4*nu) + (5*z5+16*z3+3*z)/(96*nu*nu) +
		(3*z7+19*z5+17*z3-15*z)/(384*nu*nu*nu) +
		(79*math.Pow(z, 9)+776*z7+1482*z5-1920*z3-945*z)/(92160*math.Pow(nu, 4))
}
