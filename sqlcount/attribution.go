package sqlcount

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/replaykit/replay/snapshots"
)

// request is an inbound request in flight (between Begin and End).
type request struct {
	id    int64
	trace string

	mu     sync.Mutex
	ended  bool
	counts []snapshots.SQLCount
}

// add attributes a statement to r, one the server rejected when failed (it
// counts in Errors, apart from Count and Duration); it reports false when
// r has ended.
func (r *request) add(fp string, d time.Duration, failed bool) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended {
		return false
	}
	i := 0
	for i < len(r.counts) && r.counts[i].Fingerprint != fp {
		i++
	}
	if i == len(r.counts) {
		r.counts = append(r.counts, snapshots.SQLCount{Fingerprint: fp})
	}
	c := &r.counts[i]
	if failed {
		c.Errors++
	} else {
		c.Count++
		c.Duration += d
	}
	return true
}

// window is the set of requests in flight between two Begin/End calls. A
// new window starts at every Begin and End, so a statement whose start and
// completion see the same window ran while nothing else began or ended;
// when that window has exactly one request (sole), the statement is its.
type window struct {
	sole *request
}

// tracker knows the requests in flight.
type tracker struct {
	mu      sync.Mutex
	byID    map[int64]*request
	byTrace map[string]*request
	cur     atomic.Pointer[window]
}

func newTracker() *tracker {
	t := &tracker{byID: make(map[int64]*request), byTrace: make(map[string]*request)}
	t.cur.Store(&window{})
	return t
}

// newWindowLocked starts a new window; t.mu is held.
func (t *tracker) newWindowLocked() {
	w := &window{}
	if len(t.byID) == 1 {
		for _, r := range t.byID {
			w.sole = r
		}
	}
	t.cur.Store(w)
}

func (t *tracker) begin(id int64, traceID string) {
	r := &request{id: id, trace: normalizeTraceID(traceID)}
	t.mu.Lock()
	if old := t.byID[id]; old != nil && old.trace != "" && t.byTrace[old.trace] == old {
		delete(t.byTrace, old.trace)
	}
	t.byID[id] = r
	if r.trace != "" {
		t.byTrace[r.trace] = r
	}
	t.newWindowLocked()
	t.mu.Unlock()
}

func (t *tracker) end(id int64) []snapshots.SQLCount {
	t.mu.Lock()
	r := t.byID[id]
	if r != nil {
		delete(t.byID, id)
		if r.trace != "" && t.byTrace[r.trace] == r {
			delete(t.byTrace, r.trace)
		}
		t.newWindowLocked()
	}
	t.mu.Unlock()
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ended = true
	return r.counts
}

// byTraceID returns the request in flight with the trace id, or nil.
func (t *tracker) byTraceID(trace string) *request {
	t.mu.Lock()
	r := t.byTrace[trace]
	t.mu.Unlock()
	return r
}

// attribute finds the request a statement belongs to and counts it there;
// it returns the request's id, or 0. started is the window seen when the
// statement was sent; failed says the server rejected the statement.
func (t *tracker) attribute(trace string, started *window, fp string, d time.Duration, failed bool) int64 {
	if trace != "" {
		if r := t.byTraceID(trace); r != nil && r.add(fp, d, failed) {
			return r.id
		}
	}
	if started != nil && started.sole != nil && t.cur.Load() == started && started.sole.add(fp, d, failed) {
		return started.sole.id
	}
	return 0
}
