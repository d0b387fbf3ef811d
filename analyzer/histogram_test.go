package analyzer

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/replaykit/replay/snapshots"
)

// within reports whether got is within rel (relative) of want.
func within(got, want, rel float64) bool { return math.Abs(got-want) <= rel*want }

func TestHistogramBinsAndQuantiles(t *testing.T) {
	var h Histogram
	for v := int64(1); v <= 1000; v++ {
		h.addN(histogramIndex(v*1000), 1) // 1 to 1000 ms
	}
	if h.Total() != 1000 {
		t.Fatalf("total %d, want 1000", h.Total())
	}
	for _, q := range []float64{0.5, 0.95, 0.99} {
		want := 1000 * q
		if got := h.Quantile(q); !within(got, want, 0.023) {
			t.Errorf("q%.2f = %.3f ms, want %.0f within 2.3%%", q, got, want)
		}
	}
	// Every latency falls in the bin whose bounds hold it.
	values := []int64{65_536, 65_535, 3_600_000_000, 1 << 40}
	for v := int64(1); v <= 5000; v++ {
		values = append(values, v)
	}
	for v := int64(5000); v < 3_600_000_000; v = v*21/19 + 7 {
		values = append(values, v)
	}
	for _, us := range values {
		lo, hi := HistogramBin(histogramIndex(us))
		if ms := float64(us) / 1000; ms < lo*(1-1e-9) || ms >= hi*(1+1e-9) {
			t.Errorf("%d µs in bin [%g, %g) ms", us, lo, hi)
		}
	}
	if lo, hi := HistogramBin(histogramIndex(0)); lo != 0 || hi != 0.001 {
		t.Errorf("0 µs in bin [%g, %g)", lo, hi)
	}
	var empty Histogram
	if empty.Quantile(0.5) != 0 || empty.Total() != 0 {
		t.Error("an empty histogram has a quantile or a total")
	}
}

func summarizeResults(t *testing.T, rs []*snapshots.Result) *Summary {
	t.Helper()
	s, err := Summarize(context.Background(), snapshots.RunInfo{Name: "x"}, func(yield func(*snapshots.Result, error) bool) {
		for _, r := range rs {
			if !yield(r, nil) {
				return
			}
		}
	}, SummarizeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestSummarySeriesSlices: a sliced run has one point per slice, with its
// span, counts and percentiles; the endpoint's histogram holds every
// latency.
func TestSummarySeriesSlices(t *testing.T) {
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	var rs []*snapshots.Result
	for _, slice := range []int{1, 3, 5} {
		at := t0.Add(time.Duration(slice) * time.Second)
		for i := range 100 {
			lat := time.Duration(i+1) * time.Millisecond
			if slice == 3 {
				lat *= 10
			}
			r := &snapshots.Result{Phase: snapshots.PhaseLoad, Slice: slice, Endpoint: "GET /a", Intended: at, Sent: at, Done: at.Add(lat), Status: 200}
			if i%25 == 0 {
				r.Status = 500
			}
			rs = append(rs, r)
			at = at.Add(5 * time.Millisecond)
		}
	}
	s := summarizeResults(t, rs)
	e := s.Endpoint("GET /a")
	for _, series := range [][]SeriesPoint{e.Series, s.Overall.Series} {
		if len(series) != 3 {
			t.Fatalf("%d points, want 3: %+v", len(series), series)
		}
		for i, p := range series {
			slice := 2*i + 1
			mul := 1.0
			if slice == 3 {
				mul = 10
			}
			if p.Slice != slice || p.Requests != 100 || p.Failed != 4 {
				t.Errorf("point %d: slice %d, %d requests, %d failed; want %d, 100, 4", i, p.Slice, p.Requests, p.Failed, slice)
			}
			if start := t0.Add(time.Duration(slice) * time.Second); !p.Start.Equal(start) || !p.End.Equal(start.Add(99*5*time.Millisecond+time.Duration(100*mul)*time.Millisecond)) {
				t.Errorf("slice %d spans %s to %s", slice, p.Start, p.End)
			}
			if !within(p.P50, 50*mul, 0.023) || !within(p.P95, 95*mul, 0.023) || !within(p.P99, 99*mul, 0.023) {
				t.Errorf("slice %d: p50 %.2f p95 %.2f p99 %.2f, want %.0f %.0f %.0f", slice, p.P50, p.P95, p.P99, 50*mul, 95*mul, 99*mul)
			}
		}
	}
	// The 12 failed requests are counted in their points, not in latency.
	if e.Histogram.Total() != 288 || !within(e.Histogram.Quantile(0.95), e.Latency.P95, 0.023) {
		t.Errorf("histogram: %d latencies, p95 %.2f; want 288, %.2f", e.Histogram.Total(), e.Histogram.Quantile(0.95), e.Latency.P95)
	}
}

// TestSummarySeriesWindows: an unsliced run of 300 s has windows of time,
// widened to keep at most 120, that together count every request.
func TestSummarySeriesWindows(t *testing.T) {
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	var rs []*snapshots.Result
	for i := range 3000 {
		at := t0.Add(time.Duration(i) * 100 * time.Millisecond)
		rs = append(rs, &snapshots.Result{Phase: snapshots.PhaseLoad, Endpoint: "GET /a", Intended: at, Sent: at, Done: at.Add(2 * time.Millisecond), Status: 200})
	}
	// GET /b: 10 s only, so its windows stay 1 s wide.
	for i := range 100 {
		at := t0.Add(time.Duration(i) * 100 * time.Millisecond)
		rs = append(rs, &snapshots.Result{Phase: snapshots.PhaseLoad, Endpoint: "GET /b", Intended: at, Sent: at, Done: at.Add(2 * time.Millisecond), Status: 200})
	}
	s := summarizeResults(t, rs)
	if b := s.Endpoint("GET /b").Series; len(b) != 10 || b[0].Window != time.Second {
		t.Errorf("GET /b: %d windows of %s, want 10 of 1s", len(b), b[0].Window)
	}
	// The whole run's windows are the widest, holding every request.
	var all int64
	for _, p := range s.Overall.Series {
		all += p.Requests
		if p.Window != 4*time.Second {
			t.Errorf("overall window of %s at %s, want 4s", p.Window, p.Start)
		}
	}
	if all != 3100 || s.Overall.Series[0].Requests != 80 {
		t.Errorf("overall windows count %d requests (%d in the first), want 3100 (80)", all, s.Overall.Series[0].Requests)
	}
	series := s.Endpoint("GET /a").Series
	if len(series) == 0 || len(series) > maxSeriesWindows {
		t.Fatalf("%d windows, want 1 to %d", len(series), maxSeriesWindows)
	}
	var n int64
	for i, p := range series {
		n += p.Requests
		// Windows of 4 s from the epoch; each spans its requests, the
		// last of which starts 100 ms before the window ends.
		if start := t0.Add(time.Duration(i) * 4 * time.Second); p.Slice != 0 || p.Window != 4*time.Second || !p.Start.Equal(start) || !p.End.Equal(start.Add(3902*time.Millisecond)) {
			t.Errorf("window %d: slice %d, %s to %s; want %s to 3.902 s later", i, p.Slice, p.Start, p.End, start)
		}
		if !within(p.P50, 2, 0.023) {
			t.Errorf("window %d: p50 %.3f ms, want 2", i, p.P50)
		}
	}
	if n != 3000 {
		t.Errorf("windows count %d requests, want 3000", n)
	}
}
