package analyzer

import (
	"math/rand/v2"
	"slices"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Histogram bounds, in microseconds: 1 µs to one hour, three significant
// digits (values above an hour are recorded as an hour).
const (
	histMax    = int64(3_600_000_000)
	histDigits = 3
)

func newHistogram() *hdrhistogram.Histogram { return hdrhistogram.New(1, histMax, histDigits) }

// record adds v (µs) to h, clamped to the histogram's range.
func record(h *hdrhistogram.Histogram, v int64) {
	_ = h.RecordValue(min(max(v, 0), histMax)) // clamped: cannot fail
}

// sampleItem is one load-phase result in the sample.
type sampleItem struct {
	lat, svc int64 // latency from intended start and from send, µs
	slice    int32 // interleaving slice; 0 when not sliced
}

// sample is a uniform reservoir sample (algorithm R) of an endpoint's
// load-phase results; while seen <= cap it holds every result.
type sample struct {
	cap   int
	seen  int64
	items []sampleItem
	rng   *rand.Rand
}

func newSample(capacity int, seed, stream uint64) *sample {
	return &sample{cap: capacity, rng: rand.New(rand.NewPCG(seed, stream))}
}

func (s *sample) add(it sampleItem) {
	s.seen++
	if len(s.items) < s.cap {
		s.items = append(s.items, it)
		return
	}
	if j := s.rng.Uint64N(uint64(s.seen)); j < uint64(s.cap) {
		s.items[j] = it
	}
}

// complete reports whether the sample holds every value seen.
func (s *sample) complete() bool { return s.seen == int64(len(s.items)) }

// rank is the 1-based nearest rank of quantile q among n values, as
// HdrHistogram computes it.
func rank(q float64, n int) int {
	r := int(q*float64(n) + 0.5)
	return min(max(r, 1), n)
}

// quantile returns the nearest-rank q-quantile of sorted values.
func quantile(sorted []int64, q float64) int64 {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[rank(q, len(sorted))-1]
}

// exactStats computes LatencyStats from every value (µs).
func exactStats(values []int64) LatencyStats {
	if len(values) == 0 {
		return LatencyStats{}
	}
	sorted := slices.Clone(values)
	slices.Sort(sorted)
	var sum int64
	for _, v := range sorted {
		sum += v
	}
	return LatencyStats{
		Count: int64(len(sorted)),
		Avg:   float64(sum) / float64(len(sorted)) / 1000,
		Min:   usToMs(sorted[0]),
		P50:   usToMs(quantile(sorted, 0.50)),
		P90:   usToMs(quantile(sorted, 0.90)),
		P95:   usToMs(quantile(sorted, 0.95)),
		P99:   usToMs(quantile(sorted, 0.99)),
		Max:   usToMs(sorted[len(sorted)-1]),
	}
}

// histStats computes LatencyStats from a histogram; sum is the exact sum of
// the values (µs), min and max the exact extremes.
func histStats(h *hdrhistogram.Histogram, sum, lo, hi int64) LatencyStats {
	n := h.TotalCount()
	if n == 0 {
		return LatencyStats{}
	}
	q := h.ValueAtPercentilesSlice([]float64{50, 90, 95, 99})
	return LatencyStats{
		Count: n,
		Avg:   float64(sum) / float64(n) / 1000,
		Min:   usToMs(lo),
		P50:   usToMs(min(q[0], hi)),
		P90:   usToMs(min(q[1], hi)),
		P95:   usToMs(min(q[2], hi)),
		P99:   usToMs(min(q[3], hi)),
		Max:   usToMs(hi),
	}
}

func usToMs(us int64) float64 { return float64(us) / 1000 }
