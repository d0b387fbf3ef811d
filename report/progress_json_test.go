package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/replaykit/replay/replayer"
)

// TestJSONProgress checks the machine progress lines replay mcp reads:
// one JSON object per line, a comparison's load counted across slices.
func TestJSONProgress(t *testing.T) {
	var b bytes.Buffer
	jp := NewJSONProgress(&b)
	jp.Run(replayer.Progress{Phase: "load", Done: 40, Total: 100, Failures: 1, Rate: 20, Remaining: 3 * time.Second})
	jp.Compare(replayer.CompareProgress{Side: "baseline", Phase: "explain"})
	jp.Compare(replayer.CompareProgress{Side: "baseline", Phase: "load", Slice: 1, Slices: 4, Progress: replayer.Progress{Done: 100, Failures: 1, Final: true}})
	jp.Compare(replayer.CompareProgress{Side: "baseline", Phase: "load", Slice: 2, Slices: 4, Progress: replayer.Progress{Done: 40, Failures: 2, Rate: 200}})
	jp.Compare(replayer.CompareProgress{Phase: replayer.PhaseLook, Note: "look 1: GET /orders regressed"})
	var evs []ProgressEvent
	sc := bufio.NewScanner(&b)
	for sc.Scan() {
		var ev ProgressEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		evs = append(evs, ev)
	}
	if len(evs) != 5 {
		t.Fatalf("%d lines, want 5", len(evs))
	}
	for i, want := range []ProgressEvent{
		{Progress: ProgressRun, Phase: "load", Done: 40, Total: 100, Failures: 1, Rate: 20, Remaining: 3},
		{Progress: ProgressCompare, Side: "baseline", Phase: "explain", Message: "baseline explain: one request at a time, for exact SQL counts"},
		{Progress: ProgressCompare, Side: "baseline", Phase: "load", Slice: 1, Slices: 4, Done: 100, Failures: 1},
		{Progress: ProgressCompare, Side: "baseline", Phase: "load", Slice: 2, Slices: 4, Done: 140, Failures: 3, Rate: 200,
			Message: "baseline load slice 2/4: 140 requests, 3 failed, 200/s"},
		{Progress: ProgressCompare, Phase: replayer.PhaseLook, Message: "look 1: GET /orders regressed"},
	} {
		got := evs[i]
		if want.Message == "" {
			want.Message = got.Message
		}
		want.Elapsed = got.Elapsed
		if got != want {
			t.Errorf("line %d: %+v\nwant %+v", i, got, want)
		}
	}
	if m := evs[0].Message; m == "" || !bytes.Contains([]byte(m), []byte("40/100 requests, 1 failed, 20/s")) {
		t.Errorf("run message %q", m)
	}
}
