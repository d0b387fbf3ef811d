package analyzer

import (
	"math"
	"math/bits"
	"slices"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/replaykit/replay/snapshots"
)

// HistogramBinsPerDoubling is how many bins of a Histogram span a doubling
// of latency: each bin is 2^(1/16), about 4.4%, wider than the one below.
const HistogramBinsPerDoubling = 16

// Histogram counts latencies in logarithmic bins, for charts: bin 0 holds
// 0 µs, bin i > 0 the latencies in [2^((i-1)/16), 2^(i/16)) µs (HistogramBin
// gives the bounds in milliseconds). Every run's histograms share the bins,
// so two builds' histograms compare bin by bin. The zero value is empty.
type Histogram struct {
	// First is the bin of Counts[0].
	First int
	// Counts are the counts of bins First, First+1, …; empty when nothing
	// was counted.
	Counts []int64
}

// HistogramBin returns the bounds of bin i in milliseconds: [lo, hi).
func HistogramBin(i int) (lo, hi float64) {
	if i <= 0 {
		return 0, 0.001
	}
	return binEdge(i-1) / 1000, binEdge(i) / 1000
}

// binSteps are 2^(j/16) for j in 0..16: the bounds of the bins within a
// doubling.
var binSteps = func() (t [HistogramBinsPerDoubling + 1]float64) {
	for j := range t {
		t[j] = math.Exp2(float64(j) / HistogramBinsPerDoubling)
	}
	return t
}()

// binEdge is 2^(j/16) µs, with the steps histogramIndex compares with.
func binEdge(j int) float64 {
	e, r := j/HistogramBinsPerDoubling, j%HistogramBinsPerDoubling
	return math.Ldexp(binSteps[r], e)
}

// histogramIndex is the bin of a latency in µs: 1 + floor(16·log2(us)),
// from the doubling (the highest bit) and a search of the 16 steps within
// it, faster than a logarithm.
func histogramIndex(us int64) int {
	if us <= 0 {
		return 0
	}
	e := bits.Len64(uint64(us)) - 1
	m := float64(us) / float64(uint64(1)<<e) // in [1, 2)
	lo, hi := 0, HistogramBinsPerDoubling    // binSteps[lo] <= m < binSteps[hi]
	for hi-lo > 1 {
		if mid := (lo + hi) / 2; m >= binSteps[mid] {
			lo = mid
		} else {
			hi = mid
		}
	}
	return 1 + HistogramBinsPerDoubling*e + lo
}

// addN counts n latencies in bin i.
func (h *Histogram) addN(i int, n int64) {
	switch {
	case len(h.Counts) == 0:
		h.First, h.Counts = i, []int64{n}
		return
	case i < h.First:
		h.Counts = append(make([]int64, h.First-i, h.First-i+len(h.Counts)), h.Counts...)
		h.First = i
	case i >= h.First+len(h.Counts):
		h.Counts = append(h.Counts, make([]int64, i-h.First-len(h.Counts)+1)...)
	}
	h.Counts[i-h.First] += n
}

// merge adds o's counts into h.
func (h *Histogram) merge(o *Histogram) {
	for j, n := range o.Counts {
		if n > 0 {
			h.addN(o.First+j, n)
		}
	}
}

// Total is the number of latencies counted.
func (h *Histogram) Total() int64 {
	var n int64
	for _, c := range h.Counts {
		n += c
	}
	return n
}

// Quantile returns the nearest-rank q-quantile as the geometric middle of
// its bin (within 2.2% of the latency), in milliseconds; zero when empty.
func (h *Histogram) Quantile(q float64) float64 {
	n := h.Total()
	if n == 0 {
		return 0
	}
	r := int64(rank(q, int(min(n, math.MaxInt32))))
	if n > math.MaxInt32 {
		r = int64(math.Round(q * float64(n)))
	}
	var seen int64
	for j, c := range h.Counts {
		if seen += c; seen >= r {
			lo, hi := HistogramBin(h.First + j)
			if lo == 0 {
				return 0
			}
			return math.Sqrt(lo * hi)
		}
	}
	lo, hi := HistogramBin(h.First + len(h.Counts) - 1)
	return math.Sqrt(lo * hi)
}

// histogramOf bins an HdrHistogram of latencies in µs.
func histogramOf(hd *hdrhistogram.Histogram) Histogram {
	var h Histogram
	if hd == nil || hd.TotalCount() == 0 {
		return h
	}
	for _, b := range hd.Distribution() {
		if b.Count > 0 {
			h.addN(histogramIndex(b.From), b.Count)
		}
	}
	return h
}

// SeriesPoint is one stretch of a run's load: an interleaving slice of a
// sliced run, else a window of time (see EndpointSummary.Series).
type SeriesPoint struct {
	// Slice is the slice's number; 0 for a window of time.
	Slice int
	// Window is the width of a window of time; 0 for a slice.
	Window time.Duration
	// Start and End bound the point's requests: the earliest intended
	// start and the last response (a window's end at most).
	Start, End time.Time
	// Requests and Failed count the point's load-phase requests.
	Requests, Failed int64
	// P50, P95 and P99 are the latency percentiles of the point's
	// requests in milliseconds, from a Histogram (within 2.2%); zero when
	// none had a latency.
	P50, P95, P99 float64
}

// maxSeriesWindows bounds the windows of time of a series: past it, the
// windows double in width.
const maxSeriesWindows = 120

// pointAcc accumulates one SeriesPoint.
type pointAcc struct {
	start, end       time.Time
	requests, failed int64
	h                Histogram
}

func (p *pointAcc) add(start, done time.Time, bin int, failed bool) {
	p.requests++
	if failed {
		p.failed++
	}
	if !start.IsZero() && (p.start.IsZero() || start.Before(p.start)) {
		p.start = start
	}
	if done.After(p.end) {
		p.end = done
	}
	if bin >= 0 {
		p.h.addN(bin, 1)
	}
}

func (p *pointAcc) merge(o *pointAcc) {
	p.requests += o.requests
	p.failed += o.failed
	if !o.start.IsZero() && (p.start.IsZero() || o.start.Before(p.start)) {
		p.start = o.start
	}
	if o.end.After(p.end) {
		p.end = o.end
	}
	p.h.merge(&o.h)
}

func (p *pointAcc) point() SeriesPoint {
	return SeriesPoint{Start: p.start, End: p.end, Requests: p.requests, Failed: p.failed,
		P50: p.h.Quantile(0.5), P95: p.h.Quantile(0.95), P99: p.h.Quantile(0.99)}
}

// seriesAcc accumulates a series: per slice, and per window of time.
type seriesAcc struct {
	slices  map[int]*pointAcc
	windows map[int64]*pointAcc
	width   time.Duration
	// The last point of each kind, for results in order.
	lastSlice int
	slicePt   *pointAcc
	lastKey   int64
	windowPt  *pointAcc
}

func newSeriesAcc() seriesAcc {
	return seriesAcc{slices: map[int]*pointAcc{}, windows: map[int64]*pointAcc{}, width: time.Second}
}

// add counts one load result; bin is its latency's histogram bin, or -1
// when it has none.
func (s *seriesAcc) add(r *snapshots.Result, start time.Time, bin int) {
	if start.IsZero() {
		return
	}
	if r.Slice > 0 {
		if s.slicePt == nil || r.Slice != s.lastSlice {
			p := s.slices[r.Slice]
			if p == nil {
				p = &pointAcc{}
				s.slices[r.Slice] = p
			}
			s.lastSlice, s.slicePt = r.Slice, p
		}
		s.slicePt.add(start, r.Done, bin, r.Failed())
	}
	k := floorDiv(start.UnixNano(), int64(s.width))
	if s.windowPt == nil || k != s.lastKey {
		p := s.windows[k]
		if p == nil {
			for len(s.windows) >= maxSeriesWindows {
				s.widen()
			}
			k = floorDiv(start.UnixNano(), int64(s.width))
			if p = s.windows[k]; p == nil {
				p = &pointAcc{}
				s.windows[k] = p
			}
		}
		s.lastKey, s.windowPt = k, p
	}
	s.windowPt.add(start, r.Done, bin, r.Failed())
}

// widen doubles the windows' width, merging pairs.
func (s *seriesAcc) widen() {
	s.windowPt = nil
	s.width *= 2
	merged := make(map[int64]*pointAcc, len(s.windows)/2+1)
	for k, p := range s.windows {
		nk := floorDiv(k, 2)
		if q := merged[nk]; q != nil {
			q.merge(p)
		} else {
			merged[nk] = p
		}
	}
	s.windows = merged
}

// mergeSeries returns the series of every acc together: their slices
// point by point, their windows at the widest width (within the bound).
func mergeSeries(accs []*seriesAcc) seriesAcc {
	out := newSeriesAcc()
	for _, a := range accs {
		out.width = max(out.width, a.width)
	}
	into := func(m map[int64]*pointAcc, k int64, p *pointAcc) {
		q := m[k]
		if q == nil {
			q = &pointAcc{}
			m[k] = q
		}
		q.merge(p)
	}
	for _, a := range accs {
		for k, p := range a.slices {
			q := out.slices[k]
			if q == nil {
				q = &pointAcc{}
				out.slices[k] = q
			}
			q.merge(p)
		}
		for k, p := range a.windows {
			// a.width divides out.width: both double from 1 s.
			into(out.windows, floorDiv(k, int64(out.width/a.width)), p)
		}
	}
	for len(out.windows) > maxSeriesWindows {
		out.widen()
	}
	return out
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// series returns the points: one per slice when sliced, else one per
// window of time, in order.
func (s *seriesAcc) series(sliced bool) []SeriesPoint {
	var out []SeriesPoint
	if sliced {
		for k, p := range s.slices {
			pt := p.point()
			pt.Slice = k
			out = append(out, pt)
		}
		slices.SortFunc(out, func(a, b SeriesPoint) int { return a.Slice - b.Slice })
		return out
	}
	for k, p := range s.windows {
		pt := p.point()
		pt.Window = s.width
		// A window's requests began in it; some may end after it.
		if end := time.Unix(0, (k+1)*int64(s.width)).UTC(); pt.End.After(end) || pt.End.IsZero() {
			pt.End = end
		}
		out = append(out, pt)
	}
	slices.SortFunc(out, func(a, b SeriesPoint) int { return a.Start.Compare(b.Start) })
	return out
}
