package replayer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/replaykit/replay/snapshots"
)

// job is one request of the open or as-recorded model, due at intended.
type job struct {
	t        *template
	g        int64 // the request sequence position
	intended time.Time
	// held is set when the request was due while every worker was busy:
	// the in-flight cap, not the generator, delayed it.
	held bool
}

// schedule gives the offset from the start of the call of the n-th request
// of the call, and the template it sends; the request sequence position is
// g.
type schedule struct {
	offset func(n, g int64) time.Duration
	pick   func(g int64) *template
}

// openRun is one call of the open or as-recorded model.
type openRun struct {
	r    *Replayer
	ctx  context.Context
	p    LoadPlan
	sink ResultSink
	c    *counters

	idle    idleSet
	wg      sync.WaitGroup
	workers int
	// stall fires at the run's end plus the timeout: requests still waiting
	// for a worker then are not sent (stalled).
	stall   *time.Timer
	stalled bool
	// unblocked is when the scheduler last got a busy pool to take a
	// request.
	unblocked time.Time
}

// runOpen runs the open and as-recorded models: requests start at intended
// times whatever the target does. A bounded pool of workers (at most
// MaxInFlight) sends them; when every worker is busy the scheduler waits and
// the requests due meanwhile go out late, their latency still counted from
// their intended start. Requests still unsent when the run's end plus the
// timeout has passed are recorded as failed with "not sent: target stalled".
func (r *Replayer) runOpen(ctx context.Context, p LoadPlan, sink ResultSink) Stats {
	if st, ok := r.runOpenLoop(ctx, p, sink); ok {
		return st
	}
	d, it := p.bounds()
	limit, total := r.limit(it)
	sch := r.schedule(p)
	o := &openRun{r: r, ctx: ctx, p: p, sink: sink, c: &counters{started: r.loadStart()}}
	o.idle.freed = make(chan struct{}, 1)
	rep := startReporter(p, o.c, d, total)
	o.stall = time.NewTimer(time.Until(o.c.started.Add(r.openEnd(sch, d, limit, total) + r.timeout)))
	defer o.stall.Stop()

	o.dispatch(sch, d, limit)
	o.stopWorkers()
	rep.end()
	return o.c.stats(p, p.Model())
}

// openEnd is when a call of the open or as-recorded model ends, from its
// start: at its duration d, or at the last intended start when it is bounded
// by iterations (limit ≥ 0, total requests). Requests wait for a worker
// until then plus the timeout.
func (r *Replayer) openEnd(sch schedule, d time.Duration, limit, total int64) time.Duration {
	end := d
	if limit >= 0 {
		g0 := r.cursor.Load()
		last := sch.offset(total-1, g0+total-1)
		if end == 0 || last < end {
			end = last
		}
	}
	return end
}

// dispatch is the scheduler: it waits until each request's intended start
// and hands the request to a worker, until the run's duration d or the
// cursor's limit (≥ 0) is reached or ctx is canceled.
//
// The wait is precise (waiter: a Go timer may fire a millisecond late), and
// the request goes out without waking a goroutine first (openWorker).
func (o *openRun) dispatch(sch schedule, d time.Duration, limit int64) {
	r := o.r
	w := newWaiter()
	g0 := r.cursor.Load()
	for n := int64(0); ; n++ {
		if limit >= 0 && r.cursor.Load() >= limit {
			return
		}
		n = r.ownArrival(n, g0)
		off := sch.offset(n, g0+n)
		if d > 0 && off >= d {
			r.endCall(sch, g0, n, d)
			return
		}
		g, ok := r.claim(limit)
		if !ok {
			return
		}
		j := job{t: sch.pick(g), g: g, intended: o.c.started.Add(off)}
		j.held = j.intended.Before(o.unblocked)
		if o.stalled {
			r.notSent(o.c, o.p, j, o.sink)
			continue
		}
		if !w.until(o.ctx, j.intended) || !o.hand(j) {
			return
		}
	}
}

// hand sends j on an idle worker, or on a new one while there are fewer
// than MaxInFlight, or else waits for one to be free: the target is falling
// behind, and j is held. It reports false when ctx was canceled.
func (o *openRun) hand(j job) bool {
	if w := o.idle.take(false); w != nil {
		o.send(w, j)
		return true
	}
	if o.workers < o.r.maxInfl {
		o.newWorker(j)
		return true
	}
	// Every worker is busy: the target is falling behind.
	o.c.behind.Store(j.intended.UnixNano())
	defer o.c.behind.Store(0)
	j.held = true
	for {
		if w := o.idle.take(true); w != nil {
			o.unblocked = time.Now()
			o.send(w, j)
			return true
		}
		select {
		case <-o.idle.freed:
		case <-o.ctx.Done():
			return false
		case <-o.stall.C:
			o.stalled = true
			o.r.notSent(o.c, o.p, j, o.sink)
			o.unblocked = time.Now()
			return true
		}
	}
}

// stopWorkers stops every worker as it becomes idle (requests in flight end
// with their response, their timeout, or ctx's cancellation) and waits for
// them to exit.
func (o *openRun) stopWorkers() {
	for range o.workers {
		w := o.idle.take(true)
		for w == nil {
			<-o.idle.freed
			w = o.idle.take(true)
		}
		w.stop()
	}
	o.wg.Wait()
}

// notSent records j as a request that could not be sent: Sent and Done are
// now, so its latency runs from the intended start to the moment replay gave
// up on it.
func (r *Replayer) notSent(c *counters, p LoadPlan, j job, sink ResultSink) {
	now := time.Now()
	res := &snapshots.Result{
		ExchangeID:     j.t.id,
		Endpoint:       j.t.endpoint,
		Method:         j.t.method,
		URL:            j.t.uri,
		RecordedStatus: j.t.status,
		Intended:       j.intended,
		Sent:           now,
		Done:           now,
		Error:          errNotSent,
	}
	c.notSent.Add(1)
	emit(c, p, res, sink)
}

// schedule returns the open or as-recorded model's schedule.
func (r *Replayer) schedule(p LoadPlan) schedule {
	n := int64(r.seq.len())
	if p.Rate.Count > 0 {
		step := float64(p.Rate.Per) / float64(p.Rate.Count)
		return schedule{
			offset: func(i, _ int64) time.Duration { return time.Duration(float64(i) * step) },
			pick:   func(g int64) *template { return r.seq.at(int(g % n)) },
		}
	}
	// As recorded: request g of the sequence is the (g mod n)-th in order
	// of recorded start, in pass g / n; each pass lasts the recorded span
	// plus one mean gap.
	order := r.byStart()
	span, _ := r.recordedSpan()
	t0 := r.seq.start(int(order[0]))
	rec := func(g int64) time.Duration {
		return time.Duration(g/n)*span + r.seq.start(int(order[g%n])).Sub(t0)
	}
	g0 := r.cursor.Load()
	return schedule{
		offset: func(_, g int64) time.Duration {
			return time.Duration(float64(rec(g)-rec(g0)) / p.Speed)
		},
		pick: func(g int64) *template { return r.seq.at(int(order[g%n])) },
	}
}

// byStart returns the positions of the request sequence in order of
// recorded start (4 bytes a request).
func (r *Replayer) byStart() []int32 {
	order := make([]int32, r.seq.len())
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortStableFunc(order, func(a, b int32) int { return r.seq.start(int(a)).Compare(r.seq.start(int(b))) })
	return order
}

// recordedSpan returns the length of one pass of the as-recorded model: from
// the first recorded start to the last, plus the mean gap between starts.
func (r *Replayer) recordedSpan() (time.Duration, error) {
	n := r.seq.len()
	first, last := r.seq.start(0), r.seq.start(0)
	for i := range n {
		st := r.seq.start(i)
		if st.Before(first) {
			first = st
		}
		if st.After(last) {
			last = st
		}
	}
	if first.IsZero() {
		return 0, errors.New("replayer: the recorded requests have no start times; use a rate or virtual users instead of a speed")
	}
	if n == 1 {
		return max(r.seq.at(0).dur, time.Millisecond), nil
	}
	sp := last.Sub(first)
	if sp <= 0 {
		return 0, fmt.Errorf("replayer: the %d recorded requests all start at the same time; use a rate or virtual users instead of a speed", n)
	}
	return sp + sp/time.Duration(n-1), nil
}

// Explain replays the distinct requests of every endpoint one at a time,
// with Phase snapshots.PhaseExplain and the given slice: one request of
// each request shape (method, path, query, body), up to perEndpoint shapes
// per endpoint, and beyond that a sample spread over the shapes by how often
// they occur in the request sequence (see ExplainWeights for the weight of
// each). With nothing else in flight every SQL statement the target runs
// belongs to the one request, so the counts are exact.
//
// Before them, one warm-up request per endpoint is sent and dropped, its
// statements attributed to no request: a build's start-up work (a schema
// introspected on its first request, caches filled) is not a request's.
// It does not move the load's position in the request sequence.
func (r *Replayer) Explain(ctx context.Context, perEndpoint, slice int, sink ResultSink) (Stats, error) {
	if perEndpoint <= 0 {
		return Stats{}, fmt.Errorf("replayer: %w", planError(FieldExplain, "", strconv.Itoa(perEndpoint), "is not a positive number of requests per endpoint"))
	}
	if sink == nil {
		return Stats{}, errors.New("replayer: nil result sink")
	}
	if !r.running.CompareAndSwap(false, true) {
		return Stats{}, ErrBusy
	}
	defer r.running.Store(false)
	return r.explain(ctx, perEndpoint, slice, sink)
}

func (r *Replayer) explain(ctx context.Context, perEndpoint, slice int, sink ResultSink) (Stats, error) {
	p := LoadPlan{Phase: snapshots.PhaseExplain, Slice: slice}
	c := &counters{started: time.Now()}
	cn := newConn(ctx, &r.pool)
	defer cn.close()
	interrupted := func() (Stats, error) {
		return c.stats(p, "explain"), fmt.Errorf("replayer: explain interrupted: %w", ctx.Err())
	}
	for _, i := range r.seq.firsts() {
		if r.sendAs(ctx, cn, r.seq.at(i), &snapshots.Result{}, false) || ctx.Err() != nil {
			return interrupted()
		}
	}
	picks := r.cfg.Shard.shardPicks(r.explainPicks(perEndpoint))
	r.capture.admit(len(picks), len(picks), func(i int) (int64, string) { return picks[i].t.id, picks[i].t.endpoint })
	for _, pk := range picks {
		res := &snapshots.Result{Intended: time.Now(), Phase: snapshots.PhaseExplain}
		c.enter()
		canceled := r.send(ctx, cn, pk.t, res)
		c.leave()
		if canceled || ctx.Err() != nil {
			return interrupted()
		}
		emit(c, p, res, sink)
	}
	return c.stats(p, "explain"), nil
}
