package analyzer

import (
	"context"
	"testing"
	"time"

	"github.com/replaykit/replay/snapshots"
)

// A run that recorded its load's window lasts the window, not the span of
// its requests: a ramp from 0 users sends its first request 150 ms in, a
// last stage of 0 users none at the end. Without a window (an older run
// file), the span of the requests.
func TestSummarizeLoadWindow(t *testing.T) {
	var rs []*snapshots.Result
	for i := range 30 {
		at := t0.Add(150*time.Millisecond + time.Duration(i)*10*time.Millisecond) // 150ms to 450ms
		rs = append(rs, &snapshots.Result{Phase: snapshots.PhaseLoad, Endpoint: "GET /a", Intended: at, Sent: at,
			Done: at.Add(10 * time.Millisecond), Status: 200})
	}
	for _, tc := range []struct {
		name       string
		start, end time.Time
		want       time.Duration
	}{
		{"window", t0, t0.Add(600 * time.Millisecond), 600 * time.Millisecond},
		{"no window", time.Time{}, time.Time{}, 300 * time.Millisecond},
		{"window inside the requests", t0.Add(200 * time.Millisecond), t0.Add(300 * time.Millisecond), 300 * time.Millisecond},
	} {
		info := snapshots.RunInfo{LoadStarted: tc.start, LoadEnded: tc.end}
		s, err := Summarize(context.Background(), info, fromSlice(rs), SummarizeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		tps := 30 / tc.want.Seconds()
		if s.Duration != tc.want || s.Overall.TPS != tps || s.Endpoints[0].TPS != tps {
			t.Errorf("%s: duration %v, tps %v (GET /a %v); want %v and %v req/s", tc.name, s.Duration, s.Overall.TPS, s.Endpoints[0].TPS, tc.want, tps)
		}
		// The same window given once the load is over (a summary made
		// while it ran) gives the same figures.
		live, err := Summarize(context.Background(), snapshots.RunInfo{}, fromSlice(rs), SummarizeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		live.SpanLoad(tc.start, tc.end)
		if live.Duration != s.Duration || live.Overall.TPS != s.Overall.TPS || live.Info.LoadStarted != tc.start {
			t.Errorf("%s: SpanLoad gives %v and %v req/s, Summarize %v and %v", tc.name, live.Duration, live.Overall.TPS, s.Duration, s.Overall.TPS)
		}
	}
}
