package report

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/replaykit/replay/replayer"
)

// RunProgress draws a live one-line progress display of a run on a
// terminal: give Update as replayer.LoadPlan.Progress, call Clear at the end.
type RunProgress struct {
	w    io.Writer
	last time.Time
}

// NewRunProgress draws on w.
func NewRunProgress(w io.Writer) *RunProgress { return &RunProgress{w: w} }

// Update redraws the line.
func (pl *RunProgress) Update(p replayer.Progress) {
	var b strings.Builder
	fmt.Fprintf(&b, "\r\033[K%-7s %6.1fs", p.Phase, p.Elapsed.Seconds())
	if p.Remaining > 0 {
		fmt.Fprintf(&b, " (%.1fs left)", p.Remaining.Seconds())
	}
	if p.Total > 0 {
		fmt.Fprintf(&b, "  %d/%d requests", p.Done, p.Total)
	} else {
		fmt.Fprintf(&b, "  %d requests", p.Done)
	}
	fmt.Fprintf(&b, "  %.0f/s  %d failed  %d in flight", p.Rate, p.Failures, p.InFlight)
	if p.Behind > 0 {
		fmt.Fprintf(&b, "  target stalled: %s behind", p.Behind.Round(time.Millisecond))
	}
	if p.Late > 0 || p.NotSent > 0 {
		fmt.Fprintf(&b, "  %d late, %d not sent", p.Late, p.NotSent)
	}
	io.WriteString(pl.w, b.String())
}

// Clear erases the line.
func (pl *RunProgress) Clear() { io.WriteString(pl.w, "\r\033[K") }

// CompareProgress draws a live one-line progress display on a terminal:
// the side, phase and slice, the time since the comparison started, and the
// side's load requests and failures so far.
type CompareProgress struct {
	mu    sync.Mutex
	w     io.Writer
	start time.Time
	done  map[string][2]int64 // per side: load requests and failures of finished slices
	drawn bool
}

// NewCompareProgress draws on w; give its Update as
// replayer.ComparePlan.Progress and call Clear at the end.
func NewCompareProgress(w io.Writer) *CompareProgress {
	return &CompareProgress{w: w, start: time.Now(), done: map[string][2]int64{}}
}

// Update redraws the line.
func (pl *CompareProgress) Update(p replayer.CompareProgress) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if p.Phase == replayer.PhaseLook {
		// A look's finding stays on the screen, above the progress line.
		fmt.Fprintf(pl.w, "\r\033[K%5.1fs  %s\n", time.Since(pl.start).Seconds(), p.Note)
		pl.drawn = false
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\r\033[K%5.1fs  %-9s %-7s", time.Since(pl.start).Seconds(), p.Side, p.Phase)
	switch p.Phase {
	case "load":
		d := pl.done[p.Side]
		n, failed := d[0]+p.Progress.Done, d[1]+p.Progress.Failures
		if p.Progress.Final {
			pl.done[p.Side] = [2]int64{n, failed}
		}
		if p.Slices > 1 {
			fmt.Fprintf(&b, " slice %d/%d", p.Slice, p.Slices)
		}
		fmt.Fprintf(&b, "  %d requests, %d failed  %.0f/s", n, failed, p.Progress.Rate)
	case replayer.PhaseWarmup:
		fmt.Fprintf(&b, "  %d requests  %.0f/s", p.Progress.Done, p.Progress.Rate)
	}
	io.WriteString(pl.w, b.String())
	pl.drawn = true
}

// Clear erases the line, if drawn.
func (pl *CompareProgress) Clear() {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if pl.drawn {
		io.WriteString(pl.w, "\r\033[K")
	}
}
