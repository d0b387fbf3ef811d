package dashboard

import (
	"slices"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/replaykit/replay/snapshots"
)

// Histogram bounds, in microseconds: 1 µs to ten minutes, two significant
// digits (1%: plenty for a live view; the reports keep three).
const (
	histMax    = int64(10 * time.Minute / time.Microsecond)
	histDigits = 2
)

// DefaultWindow is the width of one point of the time series.
const DefaultWindow = time.Second

// MaxPoints is how many points of each series the feed keeps (an hour at
// one-second windows); older ones are dropped, the page keeps what it has
// already fetched.
const MaxPoints = 3600

// Point is one window of a time series: what completed in it.
type Point struct {
	// I numbers the window from the start of the session (0 is the first
	// window); T is its start in seconds since then.
	I int     `json:"i"`
	T float64 `json:"t"`
	// Requests and Failures count results completed in the window; Rate
	// is Requests per second of the time the side's load ran in the
	// window (a slice may cover part of it).
	Requests int64   `json:"requests"`
	Failures int64   `json:"failures"`
	Rate     float64 `json:"rate"`
	// P50, P95, P99 and Max are latencies in milliseconds, of the answered
	// requests (those that did not fail); zero when none was.
	P50 float64 `json:"p50_ms"`
	P95 float64 `json:"p95_ms"`
	P99 float64 `json:"p99_ms"`
	Max float64 `json:"max_ms"`
	// Phase and Slice are those of the window's last result.
	Phase string `json:"phase"`
	Slice int    `json:"slice,omitempty"`
}

// Totals are a side's or an endpoint's figures so far. Latencies are of
// the load phase (explain requests run one at a time and would mislead);
// Requests and Failures count explain requests too.
type Totals struct {
	Requests int64 `json:"requests"`
	Failures int64 `json:"failures"`
	// Load counts the load-phase results the latencies are of: those
	// answered (failed ones are in Failures alone).
	Load int64   `json:"load"`
	P50  float64 `json:"p50_ms"`
	P95  float64 `json:"p95_ms"`
	P99  float64 `json:"p99_ms"`
	Max  float64 `json:"max_ms"`
	// Rate is a side's load requests per second of its load's running
	// time so far (an interleaved side's slices only); zero for an
	// endpoint, and before any load.
	Rate float64 `json:"rate"`
}

// series aggregates one stream of results (a side, or an endpoint of a
// side): totals, the current window and the points of closed windows.
type series struct {
	requests, failures int64
	all                *hdrhistogram.Histogram // load phase, cumulative
	win                *hdrhistogram.Histogram // current window
	winI               int                     // current window's index; -1 before the first result
	closed             int                     // windows up to this one are closed: a late result goes to a later one
	winReq, winFail    int64
	winPhase           string
	winSlice           int
	points             []Point
}

func newSeries() *series {
	return &series{all: hdrhistogram.New(1, histMax, histDigits), win: hdrhistogram.New(1, histMax, histDigits), winI: -1, closed: -1}
}

// add counts r in window i.
func (s *series) add(r *snapshots.Result, i int, lat int64, w window) {
	i = max(i, s.closed+1)
	if i > s.winI {
		s.close(w)
		s.winI = i
	}
	failed := r.Failed()
	s.requests++
	s.winReq++
	if failed {
		s.failures++
		s.winFail++
	}
	if !failed { // latency is over answered requests, as in the reports
		lat = min(max(lat, 1), histMax)
		_ = s.win.RecordValue(lat) // clamped: cannot fail
		if r.Phase == snapshots.PhaseLoad {
			_ = s.all.RecordValue(lat)
		}
	}
	s.winPhase, s.winSlice = r.Phase, r.Slice
}

// flush closes every window before window now: their points are final.
func (s *series) flush(now int, w window) {
	if s.winI >= 0 && s.winI < now {
		s.close(w)
	}
	s.closed = max(s.closed, now-1)
}

// close turns the current window into a point.
func (s *series) close(w window) {
	if s.winI < 0 || s.winReq == 0 {
		return
	}
	s.points = append(s.points, Point{I: s.winI, T: float64(s.winI) * w.width.Seconds(), Requests: s.winReq, Failures: s.winFail,
		Rate: float64(s.winReq) / w.active(s.winI).Seconds(), P50: ms(s.win.ValueAtQuantile(50)), P95: ms(s.win.ValueAtQuantile(95)),
		P99: ms(s.win.ValueAtQuantile(99)), Max: ms(s.win.Max()), Phase: s.winPhase, Slice: s.winSlice})
	if len(s.points) > MaxPoints {
		s.points = slices.Delete(s.points, 0, len(s.points)-MaxPoints)
	}
	s.win.Reset()
	s.closed = max(s.closed, s.winI)
	s.winReq, s.winFail = 0, 0
}

// totals are the series' figures so far.
func (s *series) totals() Totals {
	t := Totals{Requests: s.requests, Failures: s.failures, Load: s.all.TotalCount()}
	if t.Load > 0 {
		t.P50, t.P95, t.P99, t.Max = ms(s.all.ValueAtQuantile(50)), ms(s.all.ValueAtQuantile(95)), ms(s.all.ValueAtQuantile(99)), ms(s.all.Max())
	}
	return t
}

// since returns the points after window i (an empty list, not nil, when
// none: the page reads a list).
func (s *series) since(i int) []Point {
	k, _ := slices.BinarySearchFunc(s.points, i+1, func(p Point, i int) int { return p.I - i })
	return append([]Point{}, s.points[k:]...)
}

func ms(us int64) float64 { return float64(us) / 1000 }

// interval is a span of time a side's load ran.
type interval struct{ from, to time.Time }

// activity is when a side's load ran, from the replayer's progress: its
// calls (slices), the last one maybe still running.
type activity struct {
	done []interval
	cur  interval // zero when no call runs
}

// note records the progress of a call that started at from, at now.
func (a *activity) note(from, now time.Time, final bool) {
	if !a.cur.from.IsZero() && (from.Sub(a.cur.from).Abs() > 10*time.Millisecond) {
		a.done = append(a.done, a.cur) // a call that ended without its final progress
		a.cur = interval{}
	}
	if a.cur.from.IsZero() {
		a.cur.from = from
	}
	a.cur.to = now
	if final {
		a.done = append(a.done, a.cur)
		a.cur = interval{}
	}
}

// running is the call in progress as it stands at now: it runs until now,
// not only until its last progress.
func (a *activity) running(now time.Time) interval {
	return interval{a.cur.from, later(a.cur.to, now)}
}

// overlap is how long the load ran between from and to, as it stands at
// now.
func (a *activity) overlap(from, to, now time.Time) time.Duration {
	var d time.Duration
	part := func(iv interval) {
		if lo, hi := later(iv.from, from), earlier(iv.to, to); hi.After(lo) {
			d += hi.Sub(lo)
		}
	}
	if !a.cur.from.IsZero() {
		part(a.running(now))
	}
	for k := len(a.done) - 1; k >= 0 && a.done[k].to.After(from); k-- {
		part(a.done[k])
	}
	return d
}

// total is how long the load ran in all, as it stands at now.
func (a *activity) total(now time.Time) time.Duration {
	var d time.Duration
	for _, iv := range a.done {
		d += iv.to.Sub(iv.from)
	}
	if !a.cur.from.IsZero() {
		iv := a.running(now)
		d += iv.to.Sub(iv.from)
	}
	return d
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// window is how a series' windows are laid out, and when its side's load
// ran in them.
type window struct {
	start time.Time
	width time.Duration
	act   *activity
}

// active is how long the side's load ran in window i, to divide its
// requests by: the whole window when nothing says (an explain phase, a
// request that outlived its slice), and at least a fiftieth of it, so that
// a window the load barely touched cannot claim a wild rate.
func (w window) active(i int) time.Duration {
	from := w.start.Add(time.Duration(i) * w.width)
	d := w.act.overlap(from, from.Add(w.width), time.Now())
	if d == 0 {
		return w.width
	}
	return max(d, w.width/50)
}

// feed aggregates the results of every side: per side and per endpoint of
// each side. It is safe for concurrent use.
type feed struct {
	mu        sync.Mutex
	start     time.Time
	window    time.Duration
	sides     []string
	side      map[string]*series
	activity  map[string]*activity
	endpoint  map[string]map[string]*series // endpoint → side → series
	endpoints []string                      // sorted
}

func newFeed(start time.Time, window time.Duration, sides []string) *feed {
	f := &feed{start: start, window: window, sides: sides, side: map[string]*series{}, activity: map[string]*activity{},
		endpoint: map[string]map[string]*series{}}
	for _, s := range sides {
		f.side[s], f.activity[s] = newSeries(), &activity{}
	}
	return f
}

// index is the window of t.
func (f *feed) index(t time.Time) int { return max(int(t.Sub(f.start)/f.window), 0) }

// add counts one result of side.
func (f *feed) add(side string, r *snapshots.Result) {
	i := f.index(r.Done)
	lat := r.Latency().Microseconds()
	f.mu.Lock()
	defer f.mu.Unlock()
	ss := f.sideSeries(side)
	w := f.layout(side)
	ss.add(r, i, lat, w)
	es := f.endpoint[r.Endpoint]
	if es == nil {
		es = map[string]*series{}
		f.endpoint[r.Endpoint] = es
		k, _ := slices.BinarySearch(f.endpoints, r.Endpoint)
		f.endpoints = slices.Insert(f.endpoints, k, r.Endpoint)
	}
	s := es[side]
	if s == nil {
		s = newSeries()
		es[side] = s
	}
	s.add(r, i, lat, w)
}

// sideSeries is side's series, made on its first use; f.mu is held.
func (f *feed) sideSeries(side string) *series {
	ss, ok := f.side[side]
	if !ok {
		ss = newSeries()
		f.side[side], f.activity[side] = ss, &activity{}
		f.sides = append(f.sides, side)
	}
	return ss
}

func (f *feed) layout(side string) window {
	return window{start: f.start, width: f.window, act: f.activity[side]}
}

// progress notes that side's load call, which started at from, ran until
// now (final: it ended).
func (f *feed) progress(side string, from, now time.Time, final bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sideSeries(side)
	f.activity[side].note(from, now, final)
}

// SideFeed is one side's part of the feed.
type SideFeed struct {
	Name   string  `json:"name"`
	Totals Totals  `json:"totals"`
	Points []Point `json:"points"`
}

// EndpointFeed is one endpoint's part of the feed: per side, in the order
// of the sides.
type EndpointFeed struct {
	Endpoint string         `json:"endpoint"`
	Sides    []EndpointSide `json:"sides"`
}

// EndpointSide is one side's figures for an endpoint.
type EndpointSide struct {
	Name   string  `json:"name"`
	Totals Totals  `json:"totals"`
	Points []Point `json:"points"`
}

// read closes the windows before window cur and returns every side's and
// endpoint's totals and the points after window since.
func (f *feed) read(cur, since int) ([]SideFeed, []EndpointFeed) {
	f.mu.Lock()
	defer f.mu.Unlock()
	sides := make([]SideFeed, 0, len(f.sides))
	for _, name := range f.sides {
		s := f.side[name]
		s.flush(cur, f.layout(name))
		t := s.totals()
		if d := f.activity[name].total(time.Now()); d > 0 {
			t.Rate = float64(t.Load) / d.Seconds()
		}
		sides = append(sides, SideFeed{Name: name, Totals: t, Points: s.since(since)})
	}
	eps := make([]EndpointFeed, 0, len(f.endpoints))
	for _, ep := range f.endpoints {
		e := EndpointFeed{Endpoint: ep}
		for _, name := range f.sides {
			s := f.endpoint[ep][name]
			if s == nil {
				e.Sides = append(e.Sides, EndpointSide{Name: name, Points: []Point{}})
				continue
			}
			s.flush(cur, f.layout(name))
			e.Sides = append(e.Sides, EndpointSide{Name: name, Totals: s.totals(), Points: s.since(since)})
		}
		eps = append(eps, e)
	}
	return sides, eps
}
