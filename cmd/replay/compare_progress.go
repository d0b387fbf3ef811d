package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/replaykit/replay/replayer"
)

// compareProgressLine draws a live one-line progress display on a terminal:
// the side, phase and slice, the time since the comparison started, and the
// side's load requests and failures so far.
type compareProgressLine struct {
	mu    sync.Mutex
	w     io.Writer
	start time.Time
	done  map[string][2]int64 // per side: load requests and failures of finished slices
	drawn bool
}

func newCompareProgressLine(w io.Writer) *compareProgressLine {
	return &compareProgressLine{w: w, start: time.Now(), done: map[string][2]int64{}}
}

func (pl *compareProgressLine) update(p replayer.CompareProgress) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
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

func (pl *compareProgressLine) clear() {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if pl.drawn {
		io.WriteString(pl.w, "\r\033[K")
	}
}

// isTerminalWriter reports whether w is a terminal.
func isTerminalWriter(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isTerminal(f)
}
