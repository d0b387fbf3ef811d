package analyzer

import (
	"context"
	"testing"
	"time"

	"github.com/replaykit/replay/snapshots"
)

// TestSummarizeSlicedDuration: an interleaved run's slices are apart (the
// other side ran in between), so its duration is the sum of their spans.
func TestSummarizeSlicedDuration(t *testing.T) {
	var rs []*snapshots.Result
	for slice := 1; slice <= 2; slice++ {
		start := t0.Add(time.Duration(slice-1) * time.Second) // 100ms of load, then 900ms of the other side
		for i := range 10 {
			at := start.Add(time.Duration(i) * 10 * time.Millisecond)
			rs = append(rs, &snapshots.Result{Phase: snapshots.PhaseLoad, Slice: slice, Endpoint: "GET /a", Intended: at, Sent: at,
				Done: at.Add(10 * time.Millisecond), Status: 200})
		}
	}
	s, err := Summarize(context.Background(), snapshots.RunInfo{}, fromSlice(rs), SummarizeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Duration != 200*time.Millisecond || s.Overall.TPS != 100 {
		t.Errorf("duration %v, tps %v; want 200ms (2 slices of 100ms) and 100 req/s", s.Duration, s.Overall.TPS)
	}
}
