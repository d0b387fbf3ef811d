package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/replaykit/replay/replayer"
)

// ProgressKind marks a line of machine progress: the value of
// ProgressEvent.Progress.
const (
	ProgressRun     = "run"
	ProgressCompare = "compare"
)

// ProgressEvent is one line of machine progress: what a program driving
// replay (replay mcp turns them into MCP progress notifications) reads
// instead of the terminal's progress line. Times are in seconds.
type ProgressEvent struct {
	// Progress is ProgressRun or ProgressCompare; a line without it is no
	// progress.
	Progress string `json:"progress"`
	// Side is the side of a comparison ("baseline", "candidate"); empty in
	// a run.
	Side string `json:"side,omitempty"`
	// Phase is "explain", "warmup", "load" or "look".
	Phase string `json:"phase"`
	// Slice and Slices number a comparison's load slice of the side (from
	// 1); zero outside the load.
	Slice  int `json:"slice,omitempty"`
	Slices int `json:"slices,omitempty"`
	// Elapsed is the time since the run (the comparison) started;
	// Remaining the time left in the current call when its plan has a
	// duration, else zero.
	Elapsed   float64 `json:"elapsed_s"`
	Remaining float64 `json:"remaining_s,omitempty"`
	// Done and Failures count the requests of the current call (of the
	// side's finished slices too, in a comparison's load); Total is the
	// call's total when bounded by a count, else zero.
	Done     int64 `json:"done"`
	Total    int64 `json:"total,omitempty"`
	Failures int64 `json:"failures"`
	// Rate is requests per second of the current call.
	Rate float64 `json:"rate"`
	// Message says the above in one line for people.
	Message string `json:"message"`
}

// JSONProgress writes progress as JSON lines, one ProgressEvent each:
// give Run as replayer.LoadPlan.Progress or Compare as
// replayer.ComparePlan.Progress. It is safe for concurrent use.
type JSONProgress struct {
	mu    sync.Mutex
	enc   *json.Encoder
	start time.Time
	done  map[string][2]int64 // per side: load requests and failures of finished slices
}

// NewJSONProgress writes to w.
func NewJSONProgress(w io.Writer) *JSONProgress {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return &JSONProgress{enc: enc, start: time.Now(), done: map[string][2]int64{}}
}

// Run writes the progress of a run.
func (jp *JSONProgress) Run(p replayer.Progress) {
	ev := ProgressEvent{Progress: ProgressRun, Phase: p.Phase, Done: p.Done, Total: p.Total, Failures: p.Failures,
		Rate: round(p.Rate, 1), Remaining: round(p.Remaining.Seconds(), 1)}
	if ev.Phase == "" {
		ev.Phase = "load"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %.1fs", ev.Phase, time.Since(jp.start).Seconds())
	if p.Remaining > 0 {
		fmt.Fprintf(&b, " (%.1fs left)", p.Remaining.Seconds())
	}
	if p.Total > 0 {
		fmt.Fprintf(&b, ": %d/%d requests", p.Done, p.Total)
	} else {
		fmt.Fprintf(&b, ": %d requests", p.Done)
	}
	fmt.Fprintf(&b, ", %d failed, %.0f/s", p.Failures, p.Rate)
	ev.Message = b.String()
	jp.write(ev)
}

// Compare writes the progress of a comparison.
func (jp *JSONProgress) Compare(p replayer.CompareProgress) {
	jp.mu.Lock()
	ev := ProgressEvent{Progress: ProgressCompare, Side: p.Side, Phase: p.Phase, Slice: p.Slice, Slices: p.Slices,
		Done: p.Progress.Done, Failures: p.Progress.Failures, Rate: round(p.Progress.Rate, 1)}
	if p.Phase == "load" {
		d := jp.done[p.Side]
		ev.Done, ev.Failures = d[0]+p.Progress.Done, d[1]+p.Progress.Failures
		if p.Progress.Final {
			jp.done[p.Side] = [2]int64{ev.Done, ev.Failures}
		}
	}
	jp.mu.Unlock()
	switch {
	case p.Phase == replayer.PhaseLook:
		ev.Message = p.Note
	case p.Phase == "load" && p.Slices > 1:
		ev.Message = fmt.Sprintf("%s load slice %d/%d: %d requests, %d failed, %.0f/s", p.Side, p.Slice, p.Slices, ev.Done, ev.Failures, ev.Rate)
	case p.Phase == "explain":
		ev.Message = p.Side + " explain: one request at a time, for exact SQL counts"
	default:
		ev.Message = fmt.Sprintf("%s %s: %d requests, %d failed, %.0f/s", p.Side, p.Phase, ev.Done, ev.Failures, ev.Rate)
	}
	jp.write(ev)
}

func (jp *JSONProgress) write(ev ProgressEvent) {
	jp.mu.Lock()
	defer jp.mu.Unlock()
	ev.Elapsed = round(time.Since(jp.start).Seconds(), 3)
	jp.enc.Encode(ev) // progress is best effort: a closed stderr must not stop the run
}
