package replayer

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// Shard makes a Replayer shard K of N of a plan run by N processes (the
// zero value, or N = 1: the whole plan). Shard K sends the request
// sequence's positions g with g mod N = K; in the closed model it runs
// the virtual users j with j mod N = K (so that at every moment of a ramp
// the shards' users add up to the plan's); in the open and as-recorded
// models it fires the arrivals n with n mod N = K at the times the whole
// plan would (so that the shards' union is the single-machine schedule, not
// N schedules of rate/N); the explain phase's picks i with i mod N = K.
// The request sequence's position after a call bounded by iterations or a
// duration is the whole plan's, so every call of a sliced comparison starts
// the shards at one position.
type Shard struct {
	K, N int
	// Start, when set, is called before the first load call of Run (after
	// the explain phase) and returns the time the load starts at, common
	// to all shards (a barrier's T0); Run waits until then, and the load's
	// intended times count from it (a time already past is caught up, as
	// the open model catches up a late start). The zero time starts the
	// load now.
	Start func(ctx context.Context) (time.Time, error)
}

// sharded reports whether the replayer sends only part of the plan.
func (s Shard) sharded() bool { return s.N > 1 }

func (s Shard) check() error {
	if s.N < 0 || s.K < 0 || (s.N > 0 && s.K >= s.N) {
		return fmt.Errorf("replayer: shard %d of %d: want 0 ≤ k < N", s.K, s.N)
	}
	return nil
}

// own is the first position at or after g that is the shard's.
func (s Shard) own(g int64) int64 {
	if !s.sharded() {
		return g
	}
	n, k := int64(s.N), int64(s.K)
	return g + ((k-g%n)%n+n)%n
}

// users returns the ids of the closed model's virtual users, of vus in the
// whole plan, that are the shard's: j mod N = K. A ramp to a target T then
// runs, on each shard, those of its users with an id below T: together,
// exactly T.
func (s Shard) users(vus int) []int {
	var ids []int
	for j := range vus {
		if !s.sharded() || j%s.N == s.K {
			ids = append(ids, j)
		}
	}
	return ids
}

// CheckPlan refuses, with a *PlanError, a closed plan that leaves one of
// the N shards without virtual users: --vus below N, or stages that never
// reach N users (users j run on shard j mod N, so a shard K has one only
// when the plan wants more than K). Such a shard would send nothing, and
// with --vus its positions of the sequence would never be sent.
func (s Shard) CheckPlan(p LoadPlan) error {
	if !s.sharded() || p.Model() != "closed" {
		return nil
	}
	if len(p.Stages) == 0 && max(p.VUs, 1) < s.N {
		return planError(FieldVUs, "", strconv.Itoa(max(p.VUs, 1)), fmt.Sprintf("is fewer virtual users than the %d shards: give at least one per shard", s.N))
	}
	if peak := p.maxVUs(); len(p.Stages) > 0 && peak < s.N {
		return planError(FieldStages, "", "", fmt.Sprintf("targets peak at %d virtual users, fewer than the %d shards: shard %d/%d would never send a request; give a stage target of at least %d (one user per shard)", peak, s.N, peak, s.N, s.N))
	}
	return nil
}

// claimShard is claim for a shard: the next position of the sequence that
// is the shard's, unless limit (≥ 0) is reached; then the position moves to
// the limit, as it does for the whole plan.
func (r *Replayer) claimShard(limit int64) (int64, bool) {
	for {
		c := r.cursor.Load()
		g := r.own(c)
		if limit >= 0 && g >= limit {
			if c >= limit || r.cursor.CompareAndSwap(c, limit) {
				return 0, false
			}
			continue
		}
		if r.cursor.CompareAndSwap(c, g+1) {
			return g, true
		}
	}
}

// waitStart waits, before the first load call, for the start time the
// shard's Start gives, and keeps it for the load's counters.
func (r *Replayer) waitStart(ctx context.Context) error {
	if r.cfg.Shard.Start == nil || r.started {
		return nil
	}
	r.started = true
	t0, err := r.cfg.Shard.Start(ctx)
	if err != nil {
		return fmt.Errorf("replayer: shard %d/%d: %w", r.cfg.Shard.K, r.cfg.Shard.N, err)
	}
	if t0.IsZero() {
		return nil
	}
	if !newWaiter().until(ctx, t0) {
		return fmt.Errorf("replayer: waiting for the start: %w", ctx.Err())
	}
	r.t0 = t0 // even when the wait overshot: the shards share one clock
	return nil
}

// loadStart is when a load call starts: the shards' common start time for
// the first, now for the others.
func (r *Replayer) loadStart() time.Time {
	if t := r.t0; !t.IsZero() {
		r.t0 = time.Time{}
		return t
	}
	return time.Now()
}

// ownArrival is, for a shard, the next arrival n of the call (started at
// position g0) that is the shard's; n itself otherwise.
func (r *Replayer) ownArrival(n, g0 int64) int64 {
	if !r.cfg.Shard.sharded() {
		return n
	}
	return r.own(r.cursor.Load()) - g0
}

// endCall moves a shard's position, at the end of an open call bounded by
// duration d, to the whole plan's: the first arrival due at or after d.
func (r *Replayer) endCall(sch schedule, g0, n int64, d time.Duration) {
	if !r.cfg.Shard.sharded() {
		return
	}
	for n > 0 && sch.offset(n-1, g0+n-1) >= d {
		n--
	}
	if c := r.cursor.Load(); c < g0+n {
		r.cursor.Store(g0 + n)
	}
}

// shardPicks keeps the explain picks i with i mod N = K.
func (s Shard) shardPicks(picks []explainPick) []explainPick {
	if !s.sharded() {
		return picks
	}
	var out []explainPick
	for i, p := range picks {
		if i%s.N == s.K {
			out = append(out, p)
		}
	}
	return out
}
