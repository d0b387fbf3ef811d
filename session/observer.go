package session

import (
	"context"
	"fmt"

	"github.com/replaykit/replay/internal/listen"
	"github.com/replaykit/replay/replayer"
	"github.com/replaykit/replay/report"
	"github.com/replaykit/replay/snapshots"
)

// Observer watches a session as it goes, e.g. a live dashboard. Without
// one (Config.Observer nil) the session wraps nothing: results go from the
// replayer straight to the run file, as before.
type Observer interface {
	// Start is called once, after the config is checked and before any
	// build starts; an error ends the session.
	Start(ctx context.Context, w Watch) error
	// Result is told every explain and load result of side as it
	// completes (warmup results are not), from the replayer's goroutines:
	// it must be quick, safe for concurrent use, and neither keep nor
	// change res.
	Result(side string, res *snapshots.Result)
	// Progress is told where the session is, as
	// replayer.ComparePlan.Progress is told it (a run's progress comes as
	// its one side's), plus the phase "reset" while a reset command runs.
	Progress(p replayer.CompareProgress)
	// Finish is told how the session ended, once, before Run or Compare
	// returns.
	Finish(o Outcome)
}

// Watch is what an Observer is told as a session starts.
type Watch struct {
	// Command is "run" or "compare".
	Command string
	// Sides are the sides' names, baseline first.
	Sides []string
	// Limits and Warn are the session's (Config.Limits, Config.Warn), for
	// an observer that listens.
	Limits listen.Limits
	Warn   func(error)
}

// Outcome is how a session ended: its report, or the error that stopped it.
type Outcome struct {
	// Run is a run's report; Comparison a comparison's. Nil when Err
	// stopped the session before it had one.
	Run        *report.RunReport
	Comparison *report.ComparisonReport
	// Dir is a comparison's output directory (CompareConfig.Dir).
	Dir string
	// Err is the error the session returns, if any.
	Err error
}

// PhaseReset is the phase an Observer is told while a reset command runs.
const PhaseReset = "reset"

// startObserver starts cfg.Observer, when there is one, and returns the
// function that tells it the outcome (a no-op without one).
func (c *Config) startObserver(ctx context.Context, command string, sides ...string) (finish func(Outcome), err error) {
	if c.Observer == nil {
		return func(Outcome) {}, nil
	}
	w := Watch{Command: command, Sides: sides, Limits: c.Limits, Warn: c.Warn}
	if err := c.Observer.Start(ctx, w); err != nil {
		return nil, fmt.Errorf("%s: %w", command, err)
	}
	return c.Observer.Finish, nil
}

// observed is a sink that tells an Observer each result it passes on.
type observed struct {
	replayer.ResultSink
	obs  Observer
	side string
}

func (o observed) Add(r *snapshots.Result) {
	o.ResultSink.Add(r)
	o.obs.Result(o.side, r)
}

// observe returns sink itself when there is no observer, else a sink that
// also tells obs.
func observe(sink replayer.ResultSink, obs Observer, side string) replayer.ResultSink {
	if obs == nil {
		return sink
	}
	o := observed{sink, obs, side}
	if _, ok := sink.(replayer.ResultCopier); ok {
		return observedCopier{o} // an Observer keeps no result either
	}
	return o
}

type observedCopier struct{ observed }

func (observedCopier) CopiesResults() {}

// observeCompare makes plan tell obs its progress and its resets, besides
// what it told before.
func observeCompare(plan *replayer.ComparePlan, obs Observer) {
	if obs == nil {
		return
	}
	if next := plan.Progress; next != nil {
		plan.Progress = func(p replayer.CompareProgress) { next(p); obs.Progress(p) }
	} else {
		plan.Progress = obs.Progress
	}
	if reset := plan.Reset; reset != nil {
		plan.Reset = func(ctx context.Context, side, phase string) error {
			obs.Progress(replayer.CompareProgress{Side: side, Phase: PhaseReset})
			return reset(ctx, side, phase)
		}
	}
}

// observeRun makes p tell obs its progress as side's, besides what it
// told before.
func observeRun(p *replayer.LoadPlan, obs Observer, side string) {
	if obs == nil {
		return
	}
	next := p.Progress
	p.Progress = func(pr replayer.Progress) {
		if next != nil {
			next(pr)
		}
		obs.Progress(replayer.CompareProgress{Side: side, Phase: pr.Phase, Slice: pr.Slice, Progress: pr})
	}
}
