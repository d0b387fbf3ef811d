package replayer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/replaykit/replay/snapshots"
)

// Run sends requests to the target under plan p, giving every result to
// sink as it completes (results are never held: memory stays bounded
// however long the run). It continues the request sequence where the
// previous call stopped, so alternating calls on two Replayers replay the
// same requests to both sides, slice by slice.
//
// When p.Explain is set, the explain phase (see Explain) runs first.
//
// Run returns when the plan is done and every request sent has completed or
// timed out. When ctx is canceled it stops early, drops the requests that the
// cancellation cut short (they are not measurements) and returns the stats
// so far with ctx's error.
func (r *Replayer) Run(ctx context.Context, p LoadPlan, sink ResultSink) (Stats, error) {
	if err := p.Validate(); err != nil {
		return Stats{}, fmt.Errorf("replayer: %w", err)
	}
	if sink == nil {
		return Stats{}, errors.New("replayer: nil result sink")
	}
	if p.maxVUs() > r.maxInfl && p.Model() == "closed" {
		return Stats{}, fmt.Errorf("replayer: %w", planError(FieldVUs, FieldMaxInFlight, "", fmt.Sprintf("conflict: %d virtual users exceed the cap of %d requests in flight (Config.MaxInFlight)", p.maxVUs(), r.maxInfl)))
	}
	if err := r.cfg.Shard.CheckPlan(p); err != nil {
		return Stats{}, fmt.Errorf("replayer: %w", err)
	}
	if p.Model() == "recorded" {
		if _, err := r.recordedSpan(); err != nil {
			return Stats{}, err
		}
	}
	if !r.running.CompareAndSwap(false, true) {
		return Stats{}, ErrBusy
	}
	defer r.running.Store(false)
	if p.Explain > 0 {
		if _, err := r.explain(ctx, p.Explain, p.Slice, sink); err != nil {
			return Stats{}, err
		}
	}
	if p.Phase == "" {
		p.Phase = snapshots.PhaseLoad
	}
	if p.Phase == snapshots.PhaseLoad {
		if err := r.waitStart(ctx); err != nil {
			return Stats{}, err
		}
		r.admitLoad(p)
	}
	if r.stage != nil {
		r.stage.start(r.cursor.Load(), time.Now())
	}
	var st Stats
	switch p.Model() {
	case "closed":
		var ok bool
		if st, ok = r.runClosedLoop(ctx, p, sink); !ok {
			st = r.runClosed(ctx, p, sink)
		}
	default:
		st = r.runOpen(ctx, p, sink)
	}
	if r.stage != nil {
		r.stage.callStats(&st)
	}
	if err := ctx.Err(); err != nil {
		return st, fmt.Errorf("replayer: run interrupted: %w", err)
	}
	return st, nil
}

// emit labels res with the plan's phase and slice, counts it and hands it to
// the sink.
func emit(c *counters, p LoadPlan, res *snapshots.Result, sink ResultSink) {
	res.Phase = p.Phase
	res.Slice = p.Slice
	c.record(res)
	sink.Add(res)
}

// claim takes the next request of the sequence, unless limit (≥ 0) is
// reached.
func (r *Replayer) claim(limit int64) (int64, bool) {
	if r.cfg.Shard.sharded() {
		return r.claimShard(limit)
	}
	if limit < 0 {
		return r.cursor.Add(1) - 1, true
	}
	for {
		g := r.cursor.Load()
		if g >= limit {
			return 0, false
		}
		if r.cursor.CompareAndSwap(g, g+1) {
			return g, true
		}
	}
}

// limit returns the cursor value at which a plan of it iterations stops, or
// -1 when unbounded.
func (r *Replayer) limit(it int) (limit, total int64) {
	if it <= 0 {
		return -1, 0
	}
	total = int64(it) * int64(r.seq.len())
	return r.cursor.Load() + total, total
}

// runClosed runs the closed model: virtual users each send the next request
// as soon as their previous one is answered.
func (r *Replayer) runClosed(ctx context.Context, p LoadPlan, sink ResultSink) Stats {
	d, it := p.bounds()
	c := &counters{started: r.loadStart()}
	var deadline time.Time
	if d > 0 {
		deadline = c.started.Add(d)
	}
	limit, total := r.limit(it)
	rep := startReporter(p, c, d, total)

	var ramp *ramp
	vus := max(p.VUs, 1)
	if len(p.Stages) > 0 {
		ramp = startRamp(ctx, p, c.started, deadline)
		defer ramp.stop()
		vus = p.maxVUs()
	}
	var wg sync.WaitGroup
	for _, id := range r.cfg.Shard.users(vus) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cn := newConn(ctx, &r.pool)
			defer cn.close()
			for ctx.Err() == nil {
				if ramp != nil && !ramp.admit(id) {
					return
				}
				now := time.Now()
				if !deadline.IsZero() && !now.Before(deadline) {
					return
				}
				g, ok := r.claim(limit)
				if !ok {
					return
				}
				res := &snapshots.Result{Intended: now, Phase: p.Phase}
				c.enter()
				canceled := r.sendAt(ctx, cn, g, r.seq.at(int(g%int64(r.seq.len()))), res)
				c.leave()
				if canceled {
					return
				}
				emit(c, p, res, sink)
			}
		}()
	}
	wg.Wait()
	rep.end()
	return c.stats(p, "closed")
}

// ramp moves the closed model's number of active virtual users along the
// plan's stages.
type ramp struct {
	target  atomic.Int64 // read without the lock on the hot path
	mu      sync.Mutex
	changed chan struct{} // closed and replaced when target changes
	done    chan struct{} // closed when the ramp is over
	quit    chan struct{}
	ended   bool
}

func startRamp(ctx context.Context, p LoadPlan, start, deadline time.Time) *ramp {
	rp := &ramp{
		changed: make(chan struct{}),
		done:    make(chan struct{}),
		quit:    make(chan struct{}),
	}
	rp.target.Store(int64(p.VUs))
	go func() {
		defer close(rp.done)
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			now := time.Now()
			if !now.Before(deadline) {
				return
			}
			rp.set(vusAt(p.VUs, p.Stages, now.Sub(start)))
			select {
			case <-ctx.Done():
				return
			case <-rp.quit:
				return
			case <-t.C:
			}
		}
	}()
	return rp
}

func (rp *ramp) set(n int) {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	if int64(n) == rp.target.Load() {
		return
	}
	rp.target.Store(int64(n))
	close(rp.changed)
	rp.changed = make(chan struct{})
}

// admit blocks virtual user id until the ramp wants it active; it returns
// false when the ramp is over.
func (rp *ramp) admit(id int) bool {
	for {
		if int64(id) < rp.target.Load() {
			return true
		}
		rp.mu.Lock()
		ok, ch := int64(id) < rp.target.Load(), rp.changed
		rp.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-ch:
		case <-rp.done:
			return false
		}
	}
}

func (rp *ramp) stop() {
	rp.mu.Lock()
	if !rp.ended {
		rp.ended = true
		close(rp.quit)
	}
	rp.mu.Unlock()
	<-rp.done
}
