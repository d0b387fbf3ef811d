package main

import (
	"fmt"
	"io"
	"strconv"
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

// runLoadDescription describes a plan in words for reports, e.g. "closed
// model, 8 VUs, for 30s".
func runLoadDescription(p replayer.LoadPlan) string {
	var parts []string
	switch p.Model() {
	case "open":
		parts = append(parts, "open model, "+p.Rate.String())
	case "recorded":
		parts = append(parts, "as recorded, speed "+strconv.FormatFloat(p.Speed, 'g', -1, 64)+"×")
	default:
		if len(p.Stages) > 0 {
			var st []string
			for _, x := range p.Stages {
				st = append(st, x.String())
			}
			parts = append(parts, "closed model, stages "+strings.Join(st, " "))
		} else {
			parts = append(parts, fmt.Sprintf("closed model, %s", runPlural(max(p.VUs, 1), "VU")))
		}
	}
	if p.Iterations > 0 || (p.Duration == 0 && len(p.Stages) == 0) {
		parts = append(parts, runPlural(max(p.Iterations, 1), "iteration"))
	}
	if p.Duration > 0 {
		parts = append(parts, "for "+p.Duration.String())
	}
	return strings.Join(parts, ", ")
}

// runPlural formats n things, e.g. "1 VU", "2 iterations".
func runPlural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return strconv.Itoa(n) + " " + thing + "s"
}
