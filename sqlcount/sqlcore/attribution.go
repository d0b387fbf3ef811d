package sqlcore

import (
	"time"

	"github.com/replaykit/replay/internal/inflight"
	"github.com/replaykit/replay/snapshots"
)

// stmtEvent is a completed statement, as the tracker attributes it.
type stmtEvent struct {
	fp     string
	d      time.Duration
	failed bool // the server rejected it: it counts in Errors, apart from Count and Duration
}

// tracker knows the requests in flight (package inflight).
type tracker = inflight.Tracker[[]snapshots.SQLCount, stmtEvent]

// Window is the set of requests in flight when a statement was sent.
type Window = inflight.Window[[]snapshots.SQLCount]

func newTracker() *tracker { return inflight.New(addStatement) }

// addStatement counts a statement in a request's counts.
func addStatement(counts *[]snapshots.SQLCount, e stmtEvent) {
	cs := *counts
	i := 0
	for i < len(cs) && cs[i].Fingerprint != e.fp {
		i++
	}
	if i == len(cs) {
		cs = append(cs, snapshots.SQLCount{Fingerprint: e.fp})
		*counts = cs
	}
	c := &cs[i]
	if e.failed {
		c.Errors++
	} else {
		c.Count++
		c.Duration += e.d
	}
}
