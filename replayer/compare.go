package replayer

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/replaykit/replay/snapshots"
)

// Slice counts of an interleaved comparison (ComparePlan.Slices).
const (
	// MinSlices is the fewest slices per side DefaultSlices picks: the
	// analyzer resamples slice pairs only from 8 pairs up, so 10 leave room.
	MinSlices = 10
	// MaxSlices is the most slices per side DefaultSlices picks.
	MaxSlices = 20
)

// DefaultSlices returns the number of slices per side for an interleaved
// comparison lasting d per side: one per second, at least MinSlices and at
// most MaxSlices.
func DefaultSlices(d time.Duration) int {
	return min(MaxSlices, max(MinSlices, int(d/time.Second)))
}

// Side is one of the two builds a comparison replays against.
type Side struct {
	// Name labels the side in errors, progress and Reset calls, e.g.
	// "baseline" or "candidate".
	Name string
	// Replayer sends the side's requests, with the side's target, headers
	// and SQL counter.
	Replayer *Replayer
	// Sink receives the side's explain and load results (a
	// *snapshots.RunWriter); warmup results are not given to it.
	Sink ResultSink
	// Measure, when set, is called as each of the side's load slices
	// starts, and the function it returns as the slice ends (explain
	// phase, warmup and resets are outside), e.g. to take the side's SQL
	// counter's totals over its load.
	Measure func() (end func())
}

// Reset phases, as ComparePlan.Reset is told them.
const (
	ResetExplain = "explain"
	ResetLoad    = "load"
)

// ComparePlan says how Compare measures two builds.
type ComparePlan struct {
	// Load is the load model of every slice: closed (VUs) or open (Rate).
	// Its Duration, required, is the load time per side; Phase, Slice,
	// Explain and Iterations are ignored, and Stages and Speed are refused.
	Load LoadPlan
	// Slices is the number of slices per side of an interleaved load; zero
	// means DefaultSlices(Load.Duration).
	Slices int
	// Sequential replays the whole load to the baseline, then to the
	// candidate, instead of interleaving them.
	Sequential bool
	// Concurrent runs each pair's two slices at the same time instead of
	// one after the other: both builds are loaded at once, with the same
	// requests at the same intended times, so that a burst of load on the
	// machine hits both slices of a pair alike (common-mode noise). The
	// builds then share the machine: a calibrated load (Calibrate) gives
	// each half the rate an interleaved one would.
	Concurrent bool
	// Explain, when positive, replays up to that many requests of every
	// endpoint one at a time on each side before the load (exact SQL
	// attribution; see Replayer.Explain).
	Explain int
	// Warmup is how long each side is loaded, under Load's model, before
	// its load; those results are discarded, and the warmup does not move
	// the position in the request sequence, so both sides' loads replay
	// the same requests from the start. Zero means no warmup.
	Warmup time.Duration
	// Reset, when set, is called so that both sides start from the same
	// data: before each side's explain phase (side is that side's Name,
	// phase ResetExplain) and before the load (phase ResetLoad): once
	// before an interleaved load (side ""), since both sides then share it,
	// and before each side's load when sequential. An error stops Compare.
	Reset func(ctx context.Context, side, phase string) error
	// Progress, when set, is told how the comparison goes: as each slice
	// starts, every Load.ProgressInterval (zero: 250ms) during it and at
	// its end.
	Progress func(CompareProgress)

	// Calibrate, when positive, makes the load fair: both sides' warmups
	// run Load's closed model (its VUs) and measure each side's throughput;
	// every slice of both sides then runs the open model at Calibrate times
	// the smaller throughput (0.5: half of it), so that both builds get the
	// same requests at the same times, neither near its capacity, and a
	// slow endpoint of one build cannot hold the load back from its other
	// endpoints. Load must be the closed model, and the comparison
	// interleaved; each warmup lasts at least MinCalibration.
	Calibrate float64
	// MaxDuration, when longer than Load.Duration, lets an interleaved
	// comparison run until it knows: after the first Slices pairs, Look is
	// called, and while it does not say stop, LookEvery more pairs are run
	// and Look called again, up to MaxDuration of load per side (the last
	// look is at MaxDuration). Zero runs Load.Duration only.
	MaxDuration time.Duration
	// LookEvery is the number of slice pairs run between two looks; zero
	// doubles the slices at each look (the first at Slices, then 2×, 4×,
	// … and MaxDuration), so that a long MaxDuration takes few looks.
	LookEvery int
	// Look, required with MaxDuration, judges the slices run so far (their
	// results are in the sides' sinks) and says whether to stop.
	Look func(ctx context.Context, l Look) (stop bool, err error)
}

// Look is the state of a comparison that runs until it knows, as
// ComparePlan.Look is told it.
type Look struct {
	// N numbers the look from 1.
	N int
	// Slices is the number of slices run per side so far; Ran their load
	// time per side, and MaxDuration the plan's.
	Slices           int
	Ran, MaxDuration time.Duration
	// Last is set at the last look: MaxDuration is reached.
	Last bool
}

// CompareProgress is a snapshot of a running comparison.
type CompareProgress struct {
	// Side is the Name of the side being replayed to.
	Side string
	// Phase is "explain", "warmup" or "load".
	Phase string
	// Slice and Slices number the load slice of the side (from 1); both
	// zero outside the load, Slices 1 when sequential.
	Slice, Slices int
	// Progress is the current call's progress (zero in the explain phase).
	Progress Progress
	// Note, in PhaseLook, says in one line what the look found.
	Note string
}

// CompareStats sums up each side's load (the explain phase and warmup not
// included).
type CompareStats struct {
	Baseline, Candidate Stats
	// Slices is the number of slices per side (1 when sequential).
	Slices int
	// Looks is the number of looks taken (ComparePlan.MaxDuration).
	Looks int
	// Rate is the open model's rate every slice ran at, when
	// ComparePlan.Calibrate set it; Throughput is the smaller closed-model
	// throughput of the two sides (requests per second) it was found from.
	Rate       Rate
	Throughput float64
}

// Phases of a comparison's progress besides "explain" and "load".
const (
	// PhaseWarmup labels warmup progress.
	PhaseWarmup = "warmup"
	// PhaseLook labels a look of a comparison that runs until it knows
	// (ComparePlan.MaxDuration): CompareProgress.Note says what it found.
	PhaseLook = "look"
)

// Compare replays the same recorded requests to two builds under one load
// model and hands each side's results to its sink, ready for a comparison.
//
// Interleaved (the default), it runs the explain phase of the baseline and
// then of the candidate (each after a Reset), warms up the baseline and then
// the candidate (Warmup), resets once more and runs the load: each side's
// load is cut into Slices slices of
// Load.Duration/Slices, sent in alternating order: pair i is the baseline's
// slice i and the candidate's slice i, the baseline first in odd pairs and
// the candidate first in even ones (A B, B A, A B, …), so that neither side
// always follows the other; results carry their slice number, so the
// analyzer can pair slices and cancel the drift of a noisy machine.
// Sequential, the baseline gets reset, explain phase, warmup, reset and its
// whole load, then the candidate the same (results carry slice 0).
//
// It returns when both loads are done, or at the first error (a failed
// reset, ctx canceled), with the stats so far.
func Compare(ctx context.Context, plan ComparePlan, base, cand Side) (CompareStats, error) {
	var st CompareStats
	if err := plan.validate(base, cand); err != nil {
		return st, err
	}
	slices := plan.Slices
	if plan.Sequential {
		slices = 1
	} else if slices == 0 {
		slices = DefaultSlices(plan.Load.Duration)
	}
	st.Slices = slices
	if plan.Concurrent && plan.Progress != nil {
		// Both sides report at once.
		var mu sync.Mutex
		progress := plan.Progress
		plan.Progress = func(p CompareProgress) { mu.Lock(); defer mu.Unlock(); progress(p) }
	}
	sides := [2]Side{base, cand}
	stats := [2]*Stats{&st.Baseline, &st.Candidate}

	if plan.Sequential {
		for i, s := range sides {
			if err := plan.prepare(ctx, s); err != nil {
				return st, err
			}
			if err := plan.warmup(ctx, s); err != nil {
				return st, err
			}
			if err := plan.reset(ctx, s.Name, ResetLoad); err != nil {
				return st, err
			}
			if err := plan.slice(ctx, s, 0, 1, plan.Load.Duration, stats[i]); err != nil {
				return st, err
			}
		}
		return st, nil
	}

	for _, s := range sides {
		if err := plan.prepare(ctx, s); err != nil {
			return st, err
		}
	}
	if err := plan.warmups(ctx, sides, &st); err != nil {
		return st, err
	}
	if err := plan.reset(ctx, "", ResetLoad); err != nil {
		return st, err
	}
	d := plan.Load.Duration / time.Duration(slices)
	pairs := func(from, to int) error {
		if plan.Concurrent {
			return plan.concurrentPairs(ctx, sides, stats, from, to, d)
		}
		for i := from; i <= to; i++ {
			order := [2]int{0, 1}
			if i%2 == 0 {
				order = [2]int{1, 0}
			}
			for _, k := range order {
				if err := plan.slice(ctx, sides[k], i, to, d, stats[k]); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := pairs(1, slices); err != nil {
		return st, err
	}
	return st, plan.runUntilKnown(ctx, &st, d, pairs)
}

// concurrentPairs runs slice pairs from to to, each pair's two slices at
// the same time. (Starting one side half an interval after the other, by
// turns, so that the open model's requests alternate one by one, was tried
// and measured no better: docs/benchmarks.md.)
func (plan *ComparePlan) concurrentPairs(ctx context.Context, sides [2]Side, stats [2]*Stats, from, to int, d time.Duration) error {
	for i := from; i <= to; i++ {
		var errs [2]error
		var wg sync.WaitGroup
		for k := range sides {
			wg.Go(func() { errs[k] = plan.slice(ctx, sides[k], i, to, d, stats[k]) })
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				return err // the baseline's first
			}
		}
	}
	return nil
}

func (plan *ComparePlan) validate(base, cand Side) error {
	for _, s := range []Side{base, cand} {
		if s.Replayer == nil || s.Sink == nil {
			return fmt.Errorf("compare: side %q needs a Replayer and a Sink", s.Name)
		}
	}
	if base.Replayer == cand.Replayer {
		return errors.New("compare: the two sides share one Replayer; give each its own")
	}
	if err := plan.Validate(); err != nil {
		return fmt.Errorf("compare: %w", err)
	}
	if plan.MaxDuration > plan.Load.Duration && plan.Look == nil {
		return errors.New("compare: a MaxDuration beyond the load's Duration needs a Look to judge the slices")
	}
	return nil
}

// Validate reports a plan whose settings conflict or are out of range, with
// a *PlanError.
func (plan ComparePlan) Validate() error {
	p := plan.Load
	switch {
	case p.Duration <= 0:
		return planError(FieldDuration, "", p.Duration.String(), "is not positive: a comparison needs a positive load duration per side")
	case len(p.Stages) > 0:
		return planError(FieldStages, "", "", "are not for a comparison: it takes the closed (vus) or open (rate) model, not stages or speed")
	case p.Speed > 0:
		return planError(FieldSpeed, "", "", "is not for a comparison: it takes the closed (vus) or open (rate) model, not stages or speed")
	case plan.Slices < 0:
		return planError(FieldSlices, "", strconv.Itoa(plan.Slices), "is negative")
	case plan.Warmup < 0:
		return planError(FieldWarmup, "", plan.Warmup.String(), "is negative")
	case plan.Explain < 0:
		return planError(FieldExplain, "", strconv.Itoa(plan.Explain), "is negative")
	}
	if err := plan.validateSequential(); err != nil {
		return err
	}
	p.Iterations, p.Explain = 0, 0
	return p.Validate()
}

// prepare resets the data and runs the explain phase of one side.
func (plan *ComparePlan) prepare(ctx context.Context, s Side) error {
	if plan.Explain <= 0 {
		return nil
	}
	if err := plan.reset(ctx, s.Name, ResetExplain); err != nil {
		return err
	}
	if plan.Progress != nil {
		plan.Progress(CompareProgress{Side: s.Name, Phase: "explain"})
	}
	if _, err := s.Replayer.Explain(ctx, plan.Explain, 0, s.Sink); err != nil {
		return fmt.Errorf("compare: %s: %w", s.Name, err)
	}
	return nil
}

func (plan *ComparePlan) reset(ctx context.Context, side, phase string) error {
	if plan.Reset == nil {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("compare: %w", err)
	}
	return plan.Reset(ctx, side, phase)
}

// warmup loads one side for plan.Warmup, discarding the results and
// keeping its position in the request sequence.
func (plan *ComparePlan) warmup(ctx context.Context, s Side) error {
	if plan.Warmup <= 0 {
		return nil
	}
	_, err := plan.warmupFor(ctx, s, plan.Warmup)
	return err
}

// warmupFor loads one side for d under the plan's model, discarding the
// results and keeping its position in the request sequence.
func (plan *ComparePlan) warmupFor(ctx context.Context, s Side, d time.Duration) (Stats, error) {
	p := plan.Load
	p.Phase, p.Slice, p.Explain, p.Iterations = PhaseWarmup, 0, 0, 0
	p.Duration = d
	p.Progress = plan.progress(s.Name, PhaseWarmup, 0, 0)
	pos := s.Replayer.cursor.Load()
	st, err := s.Replayer.Run(ctx, p, discard{})
	s.Replayer.cursor.Store(pos)
	if err != nil {
		return st, fmt.Errorf("compare: %s warmup: %w", s.Name, err)
	}
	return st, nil
}

// slice runs one slice of a side's load and adds its stats to sum.
func (plan *ComparePlan) slice(ctx context.Context, s Side, i, n int, d time.Duration, sum *Stats) error {
	p := plan.Load
	p.Phase, p.Slice, p.Explain, p.Iterations = "", i, 0, 0
	p.Duration = d
	p.Progress = plan.progress(s.Name, "load", max(i, 1), n)
	if s.Measure != nil {
		defer s.Measure()()
	}
	st, err := s.Replayer.Run(ctx, p, s.Sink)
	addStats(sum, st)
	if err != nil {
		return fmt.Errorf("compare: %s: %w", s.Name, err)
	}
	return nil
}

func (plan *ComparePlan) progress(side, phase string, i, n int) func(Progress) {
	if plan.Progress == nil {
		return nil
	}
	return func(p Progress) {
		plan.Progress(CompareProgress{Side: side, Phase: phase, Slice: i, Slices: n, Progress: p})
	}
}

// addStats adds one call's stats to a side's sum.
func addStats(sum *Stats, st Stats) {
	if st.Started.IsZero() {
		return
	}
	if sum.Started.IsZero() || st.Started.Before(sum.Started) {
		sum.Started = st.Started
	}
	if st.Ended.After(sum.Ended) {
		sum.Ended = st.Ended
	}
	sum.Phase, sum.Model = st.Phase, st.Model
	sum.Requests += st.Requests
	sum.Failures += st.Failures
	sum.NotSent += st.NotSent
	sum.Late += st.Late
	sum.MaxLate = max(sum.MaxLate, st.MaxLate)
	sum.MaxInFlight = max(sum.MaxInFlight, st.MaxInFlight)
	sum.WaitedForSource += st.WaitedForSource
	sum.MaxWaitForSource = max(sum.MaxWaitForSource, st.MaxWaitForSource)
}

// discard is a ResultSink that drops results (warmup).
type discard struct{}

func (discard) Add(*snapshots.Result) {}
