package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/replaykit/replay/replayer"
)

// runProgress draws a live one-line progress display on a terminal.
type runProgress struct {
	w    io.Writer
	last time.Time
}

func newRunProgress(w io.Writer) *runProgress { return &runProgress{w: w} }

func (pl *runProgress) update(p replayer.Progress) {
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

func (pl *runProgress) clear() { io.WriteString(pl.w, "\r\033[K") }
