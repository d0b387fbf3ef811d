package inflight

import (
	"sync"
	"sync/atomic"
)

// request is an inbound request in flight (between Begin and End).
type request[C any] struct {
	id     int64
	trace  string
	missed int64 // the tracker's missed count at Begin

	mu    sync.Mutex
	ended bool
	acc   C
}

// Window is the set of requests in flight between two Begin/End calls. A
// new window starts at every Begin and End, so an event whose start and
// completion see the same window ran while nothing else began or ended;
// when that window has exactly one request, the event is its.
type Window[C any] struct {
	sole *request[C]
}

// Tracker knows the requests in flight and attributes events of type E to
// them, adding each to the request's accumulator of type C. Safe for
// concurrent use.
type Tracker[C, E any] struct {
	add     func(acc *C, e E)
	mu      sync.Mutex
	byID    map[int64]*request[C]
	byTrace map[string]*request[C]
	cur     atomic.Pointer[Window[C]]
	// missed counts the events attributed to no request.
	missed atomic.Int64
}

// New returns a Tracker that adds an event to a request's accumulator with
// add (called with the request's lock held: it must not block).
func New[C, E any](add func(acc *C, e E)) *Tracker[C, E] {
	t := &Tracker[C, E]{add: add, byID: map[int64]*request[C]{}, byTrace: map[string]*request[C]{}}
	t.cur.Store(&Window[C]{})
	return t
}

// newWindowLocked starts a new window; t.mu is held.
func (t *Tracker[C, E]) newWindowLocked() {
	w := &Window[C]{}
	if len(t.byID) == 1 {
		for _, r := range t.byID {
			w.sole = r
		}
	}
	t.cur.Store(w)
}

// Begin tells the tracker that request id is in flight; traceID is the W3C
// trace id it carries (or its whole traceparent; see TraceID), or "".
func (t *Tracker[C, E]) Begin(id int64, traceID string) {
	r := &request[C]{id: id, trace: TraceID(traceID), missed: t.missed.Load()}
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

// End tells the tracker that request id has ended and returns what was
// attributed to it. complete reports that every event completed while it
// was in flight was attributed to some request, so none of its own can
// have been missed (events completing after End aside); it is false for a
// request the tracker was not told of.
func (t *Tracker[C, E]) End(id int64) (acc C, complete bool) {
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
		return acc, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ended = true
	return r.acc, t.missed.Load() == r.missed
}

// Window returns the current window, for an event that starts now.
func (t *Tracker[C, E]) Window() *Window[C] { return t.cur.Load() }

// Attribute finds the request an event belongs to and adds it there: the
// request in flight with the event's trace id (normalized, as TraceID
// returns it) when there is one, else the request alone in flight for the
// whole event (started is the Window taken when it started). It returns
// the request's id, or 0 when the event belongs to none it can tell.
func (t *Tracker[C, E]) Attribute(trace string, started *Window[C], e E) int64 {
	if trace != "" {
		t.mu.Lock()
		r := t.byTrace[trace]
		t.mu.Unlock()
		if r != nil && t.addTo(r, e) {
			return r.id
		}
	}
	if started != nil && started.sole != nil && t.cur.Load() == started && t.addTo(started.sole, e) {
		return started.sole.id
	}
	t.missed.Add(1)
	return 0
}

// addTo adds e to r; it reports false when r has ended.
func (t *Tracker[C, E]) addTo(r *request[C], e E) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended {
		return false
	}
	t.add(&r.acc, e)
	return true
}
