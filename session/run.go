package session

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/replaykit/replay/analyzer"
	"github.com/replaykit/replay/analyzer/respdiff"
	"github.com/replaykit/replay/replayer"
	"github.com/replaykit/replay/report"
	"github.com/replaykit/replay/snapshots"
)

// RunConfig is a replay against one side.
type RunConfig struct {
	Config
	// Side is the build replayed to; its RunPath is required.
	Side SideConfig
	// Plan is the load; Plan.Progress, when set, is told how it goes.
	Plan replayer.LoadPlan
	// Goals are checked against the run (none is fine).
	Goals []analyzer.Goal
	// MaxFailed is the largest fraction of load requests that may fail
	// (0.01: 1%) before the run fails, goals or not; zero means
	// analyzer.DefaultMaxFailed, a negative value that none may.
	MaxFailed float64
	// Ready, when set, is told the target URL once the build answers.
	Ready func(url string)
	// CheckResponses compares the build's answers with the recorded ones
	// under Rules (analyzer.CheckResponses) into Report.Responses: an
	// answer that differs fails the run.
	CheckResponses bool
	Rules          respdiff.Rules
}

// RunResult is what a run saw.
type RunResult struct {
	// Report is the run's summary, goals and files (run file, build log).
	Report *report.RunReport
	// Stats are the load's counts: how late an open model's requests
	// started, how many could not be sent.
	Stats replayer.Stats
	// MockMisses counts the outbound requests the mock could not answer.
	MockMisses int64
	// Interrupted reports that ctx ended the run early: the run file and
	// the report hold the requests completed so far.
	Interrupted bool

	lone [2]int // sampled requests answered once, of those sampled (CheckResponses)
}

// Run replays cfg's requests against one side under cfg.Plan: the side's
// mock and SQL counter listen, its build starts (or is waited for), the
// load runs (after an explain phase when Plan.Explain is set), every
// result goes to the run file, and the build is stopped. Canceling ctx
// ends the load early: Run then returns the report of what was measured,
// with Interrupted set. An error removes the files Run created, but for a
// build log that holds output, which the error names.
func Run(ctx context.Context, cfg RunConfig) (res *RunResult, err error) {
	if err := cfg.check(); err != nil {
		return nil, fmt.Errorf("run: %w", err)
	}
	if cfg.Local != nil {
		return runLocal(ctx, cfg)
	}
	if cfg.Side.LogPath == "" && cfg.Side.Cmd != "" {
		cfg.Side.LogPath = cfg.Side.RunPath + ".build.log"
	}
	if err := cfg.Side.check(); err != nil {
		return nil, fmt.Errorf("run: %w", err)
	}
	if _, err := os.Stat(cfg.Side.RunPath); err == nil {
		return nil, fmt.Errorf("run: %s: %w", cfg.Side.RunPath, snapshots.ErrExists)
	}
	finish, err := cfg.startObserver(ctx, "run", cfg.Side.Name)
	if err != nil {
		return nil, err
	}
	defer func() { finish(Outcome{Run: res.report(), Err: err}) }()
	observeRun(&cfg.Plan, cfg.Observer, cfg.Side.Name)
	var lo leftovers // its clean runs before finish: the observer gets the final error
	lo.file(cfg.Side.RunPath, false)
	lo.file(cfg.Side.LogPath, true)
	defer func() {
		if err != nil {
			err = lo.clean(err)
		}
	}()
	s := &Side{cfg: &cfg.Config, sc: cfg.Side}
	defer s.Close()
	if err := startSides(ctx, "run", []*Side{s}); err != nil {
		return nil, err
	}
	if cfg.Ready != nil {
		cfg.Ready(s.target)
	}
	s.sliceCPU(false, cfg.Plan.Slice)
	defer cfg.closeShard()
	if err := s.open(max(cfg.Plan.VUs, maxStage(cfg.Plan)), cfg.settings()); err != nil {
		return nil, fmt.Errorf("run: %w", err)
	}
	// Results go to the run file and, as they come, to the summary, so the
	// report needs no second pass over the file.
	s.explainWeights(cfg.Plan.Explain)
	sink := newSummarySink(s.run, s.info)
	st, runErr := runMeasured(ctx, s, cfg.Plan, observe(sink, cfg.Observer, cfg.Side.Name))
	sum, sumErr := sink.summary()
	if sumErr == nil && sum.Overall != nil && sum.Overall.Failed > 0 {
		s.noteExit(time.Second)
	}
	s.spanLoad(st)
	s.info.Interrupted = errors.Is(runErr, context.Canceled) // the run file says so: no verdict
	if err := s.finish(st); err != nil {
		return nil, fmt.Errorf("run: %w", err)
	}
	if runErr != nil && !errors.Is(runErr, context.Canceled) {
		return nil, fmt.Errorf("run: %w", runErr)
	}
	if sumErr != nil {
		return nil, fmt.Errorf("run: summarize: %w", sumErr)
	}
	s.describe(sum)
	// The counter's unattributed statements are complete only now.
	sum.ShareUnattributedSQL(s.info.UnattributedSQL)
	analyzer.CheckLoad(sum)
	rep := &report.RunReport{Summary: sum, Goals: analyzer.Check(sum, cfg.Goals), Artifacts: []report.Artifact{{Name: "run file", Path: cfg.Side.RunPath}},
		Failures: analyzer.CheckFailures(sum, maxFailedFraction(cfg.MaxFailed), s.exit)}
	if s.build != nil {
		rep.Artifacts = append(rep.Artifacts, report.Artifact{Name: "build log", Path: cfg.Side.LogPath})
	}
	var lone [2]int
	if cfg.CheckResponses {
		var err error
		if rep.Responses, lone, err = checkRunFile(ctx, cfg.Snapshot, cfg.Side.RunPath, cfg.Rules); err != nil {
			return nil, fmt.Errorf("run: %w", err)
		}
	}
	return &RunResult{Report: rep, Stats: st, MockMisses: s.info.MockMisses, Interrupted: runErr != nil, lone: lone}, nil
}

// runMeasured runs the explain phase, when the plan has one, then the load,
// taking the SQL counter's totals around the load alone.
func runMeasured(ctx context.Context, s *Side, p replayer.LoadPlan, sink replayer.ResultSink) (replayer.Stats, error) {
	if err := p.Validate(); err != nil {
		return replayer.Stats{}, fmt.Errorf("replayer: %w", err)
	}
	if p.Explain > 0 {
		if s.cfg.Observer != nil {
			s.cfg.Observer.Progress(replayer.CompareProgress{Side: s.sc.Name, Phase: snapshots.PhaseExplain})
		}
		if _, err := s.rp.Explain(ctx, p.Explain, p.Slice, sink); err != nil {
			return replayer.Stats{}, err
		}
		p.Explain = 0
	}
	defer s.measure()()
	return s.rp.Run(ctx, p, sink)
}

// spanLoad records the load's window, st's start and end, in the side's
// run file: the run lasts its load, not the span of its requests (a ramp
// from 0 users sends none at first, and lasts the stages' sum).
func (s *Side) spanLoad(st replayer.Stats) {
	if !st.Started.IsZero() {
		s.info.LoadStarted, s.info.LoadEnded = st.Started, st.Ended
	}
}

// describe gives sum, made while the load ran, the side's final info, its
// load's window included.
func (s *Side) describe(sum *analyzer.Summary) {
	sum.Info = s.info
	sum.SpanLoad(s.info.LoadStarted, s.info.LoadEnded)
	sum.UpdateCPU()
}

// report is r's report; nil when r is.
func (r *RunResult) report() *report.RunReport {
	if r == nil {
		return nil
	}
	return r.Report
}

func maxStage(p replayer.LoadPlan) int {
	m := 0
	for _, s := range p.Stages {
		m = max(m, s.Target)
	}
	return m
}

// settings are what a run's file records of how it was run.
func (cfg *RunConfig) settings() map[string]string {
	settings := cfg.sharedSettings(cfg.Goals, cfg.Plan.Explain)
	planSettings(settings, cfg.Plan, cfg.maxInFlight())
	settings[SettingMaxFailed] = strconv.FormatFloat(maxFailedFraction(cfg.MaxFailed), 'g', -1, 64)
	checkSettings(settings, cfg.CheckResponses, cfg.Rules)
	cfg.shardSettings(settings)
	return settings
}
